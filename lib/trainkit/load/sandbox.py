"""Confinement of definition processes: what the OS lets us take away from them.

On Linux, the process that runs definitions enters new user, mount, network
and PID namespaces (no privilege needed where the kernel allows user
namespaces): every mount is made read-only, there is no network, and when the
namespace's first process exits the kernel kills everything left in it. Its
capabilities inside the namespace are dropped before any definition runs, so
nothing can remount a file system writable again.

Elsewhere (or when the kernel refuses), definitions still run in their own
processes with resource limits, and the loader compares the repository
before and after instead; ``enter`` says why confinement was not possible.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import platform
import resource
import signal
import sys

__all__ = [
    "adopt_orphans",
    "die_with_parent",
    "drop_privileges",
    "enter",
    "kill_orphans",
    "limit",
    "make_undumpable",
]

_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWPID = 0x20000000
_CLONE_NEWNET = 0x40000000
_MS_REC = 0x4000
_MS_PRIVATE = 1 << 18
_AT_FDCWD = -100
_AT_RECURSIVE = 0x8000
_MOUNT_ATTR_RDONLY = 0x1
# Syscall numbers differ per architecture except for the newest calls.
_SYS_MOUNT_SETATTR = 442
_SYS_CAPSET = {"x86_64": 126, "aarch64": 91}
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_PR_SET_NO_NEW_PRIVS = 38


class _MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    return ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)


def _failed(what: str) -> str:
    code = ctypes.get_errno()
    return f"{what} failed: {os.strerror(code) if code else 'unknown error'}"


def enter() -> tuple[bool, str | None]:
    """Enter read-only, network-less namespaces.

    Returns whether a new PID namespace was created (the caller's next child
    becomes its process 1) and, if confinement is incomplete, why. Must run in
    a process of its own: it cannot be undone.
    """
    libc = _libc()
    if libc is None:
        return False, f"{platform.system()} has no user namespaces"
    uid, gid = os.geteuid(), os.getegid()
    if libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNS | _CLONE_NEWNET | _CLONE_NEWPID) != 0:
        return False, _failed("creating user namespaces (unshare)")
    return True, _read_only(libc, uid, gid)


def _read_only(libc: ctypes.CDLL, uid: int, gid: int) -> str | None:
    try:
        # Map our own ids so file permissions read as they do outside.
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                           ("gid_map", f"{gid} {gid} 1")):  # fmt: skip
            with open(f"/proc/self/{name}", "w", encoding="ascii") as f:
                f.write(text)
    except OSError as e:
        return f"mapping user ids in the namespace failed: {e.strerror}"
    if libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
        return _failed("making mounts private")
    attr = _MountAttr(_MOUNT_ATTR_RDONLY, 0, 0, 0)
    if (
        libc.syscall(
            _SYS_MOUNT_SETATTR,
            _AT_FDCWD,
            b"/",
            _AT_RECURSIVE,
            ctypes.byref(attr),
            ctypes.sizeof(attr),
        )
        != 0
    ):
        return _failed("making every mount read-only (mount_setattr, Linux ≥ 5.12)")
    return None


def drop_privileges() -> None:
    """Drop every capability and forbid regaining any (setuid binaries, file capabilities).

    Inside our user namespace the process holds all capabilities, enough to
    remount the file system writable again; definitions must not.
    """
    libc = _libc()
    if libc is None:
        return
    number = _SYS_CAPSET.get(platform.machine())
    if number is not None:
        header = (ctypes.c_uint32 * 2)(_LINUX_CAPABILITY_VERSION_3, 0)
        data = (ctypes.c_uint32 * 6)()
        if libc.syscall(number, ctypes.byref(header), ctypes.byref(data)) != 0:
            raise OSError(ctypes.get_errno(), "capset failed")
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")


def make_undumpable() -> None:
    """Forbid other processes of the same user to trace this one or read its memory."""
    libc = _libc()
    if libc is not None:
        libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)


def die_with_parent(parent: int) -> None:
    """SIGKILL this process when its parent dies (Linux); exit now if it already has."""
    libc = _libc()
    if libc is not None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    # Process 1 of a new PID namespace sees its parent (outside) as 0.
    if os.getppid() not in (parent, 0):
        os._exit(1)


def limit(memory: int, cpu_seconds: int, output_bytes: int) -> None:
    """Resource limits of a definition process: address space, CPU time, file size, no core."""
    for name, value in (
        ("RLIMIT_AS", memory),
        ("RLIMIT_CPU", cpu_seconds),
        ("RLIMIT_FSIZE", output_bytes),
        ("RLIMIT_CORE", 0),
    ):
        which = getattr(resource, name, None)
        if which is None:
            continue
        _, hard = resource.getrlimit(which)
        soft = value if hard == resource.RLIM_INFINITY else min(value, hard)
        try:
            resource.setrlimit(which, (soft, hard))
        except (ValueError, OSError) as e:
            if getattr(e, "errno", None) not in (None, errno.EPERM, errno.EINVAL):
                raise
    # Past RLIMIT_FSIZE a write fails with EFBIG instead of killing the process.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


_PR_SET_CHILD_SUBREAPER = 36


def adopt_orphans() -> None:
    """Make this process the parent of its descendants' orphans (Linux), so
    ``kill_orphans`` can find what a definition left running."""
    libc = _libc()
    if libc is not None:
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def kill_orphans() -> None:
    """SIGKILL and reap every remaining child (Linux; elsewhere, only direct children)."""
    me = str(os.getpid())
    for _ in range(100):
        children = []
        try:
            for entry in os.listdir("/proc"):
                if not entry.isdigit():
                    continue
                try:
                    with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                        stat = f.read()
                except OSError:
                    continue
                # "pid (comm) state ppid …": comm may hold spaces and parentheses.
                fields = stat[stat.rfind(")") + 2 :].split()
                if len(fields) > 1 and fields[1] == me:
                    children.append(int(entry))
        except OSError:
            return
        if not children:
            return
        for pid in children:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        for pid in children:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
