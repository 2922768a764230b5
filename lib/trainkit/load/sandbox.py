"""Confinement of definition processes: what the OS lets us take away from them.

On Linux the process that runs definitions enters new user, mount, network and
PID namespaces (no privilege needed where the kernel allows user namespaces).
Process 1 of the new PID namespace then builds a root file system of its own
(``build_root``): an empty tmpfs holding only ``jobs/``, the interpreter and
its packages and the system's shared libraries, bound read-only, a few device
nodes, and a fresh ``/proc`` that shows the namespace's processes only. It
pivots into it, detaches the host's tree and makes every mount read-only.
The network namespace has no interface but a loopback that is down; host
Unix sockets are not in the tree. Capabilities are dropped and
``no_new_privs`` set before any definition runs, so nothing can remount a
file system writable or gain privileges through a setuid program, and when
process 1 exits the kernel kills everything left in the namespace.

Where the OS refuses any step, ``Unconfined`` says which step, why (the three
refusals people meet: a seccomp profile, ``user.max_user_namespaces`` = 0,
AppArmor's restriction of unprivileged user namespaces) and what would allow it.
The caller decides: an error where the sandbox is required (CI), else the
definitions run in their own limited processes and the loader compares files
before and after (``watch``).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import platform
import resource
import signal
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

__all__ = [
    "Unconfined",
    "adopt_orphans",
    "build_root",
    "die_with_parent",
    "drop_privileges",
    "enter",
    "forbid_new_privileges",
    "kill_tree",
    "limit",
    "make_undumpable",
    "view",
]

_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWPID = 0x20000000
_CLONE_NEWNET = 0x40000000
_MS_NOSUID = 0x2
_MS_NODEV = 0x4
_MS_NOEXEC = 0x8
_MS_BIND = 0x1000
_MS_REC = 0x4000
_MS_PRIVATE = 1 << 18
_MNT_DETACH = 0x2
_AT_FDCWD = -100
_AT_RECURSIVE = 0x8000
_MOUNT_ATTR_RDONLY = 0x1
_MOUNT_ATTR_NOSUID = 0x2
# Syscall numbers differ per architecture except for the newest calls.
_SYS_MOUNT_SETATTR = 442
_SYS_CAPSET = {"x86_64": 126, "aarch64": 91}
_SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
_PR_SET_PDEATHSIG = 1
_PR_GET_DUMPABLE = 3
_PR_SET_DUMPABLE = 4
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_NO_NEW_PRIVS = 38

# Where the system keeps the shared libraries an extension module may load on import.
_SYSTEM_LIBRARIES = (
    "/lib", "/lib32", "/lib64", "/libx32",
    "/usr/lib", "/usr/lib32", "/usr/lib64", "/usr/libx32",
    "/etc/ld.so.cache",
)  # fmt: skip
_DEVICES = ("null", "zero", "full", "random", "urandom")
# Never bound: the kernel's own trees (the sandbox gets a fresh /proc and its own /dev).
_KERNEL_TREES = ("/proc", "/sys", "/dev")
# Directories the new root's tmpfs may be mounted over while it is built (a private mount
# namespace: the host never sees it); the first that exists is used.
_STAGING = ("/tmp", "/mnt", "/var", "/opt", "/srv")
_APPARMOR_USERNS = "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"
_GITHUB_ROUTE = "sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"


@dataclass(frozen=True)
class Unconfined:
    """Why definitions cannot be confined here (``cause``) and what would allow it (``fix``)."""

    cause: str
    fix: str

    def __str__(self) -> str:
        return f"{self.cause}; {self.fix}"


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
    # The C library the interpreter already runs on (dlopen(NULL)): ctypes.util.find_library
    # would run ldconfig or a C compiler and write a temporary file, which fails inside the
    # read-only sandbox wherever the interpreter's prefix holds gcc (a system Python in /usr).
    return ctypes.CDLL(None, use_errno=True)


class _Refused(Exception):
    def __init__(self, step: str, code: int) -> None:
        super().__init__(step, code)
        self.step, self.code = step, code


def _check(result: int, step: str) -> None:
    if result != 0:
        raise _Refused(step, ctypes.get_errno())


def enter() -> tuple[bool, Unconfined | None]:
    """Enter new user, mount, network and PID namespaces, ids mapped, mounts private.

    Returns whether a new PID namespace was created (the caller's next child
    becomes its process 1, which must call ``build_root``) and, if the kernel
    refused a step, why. Must run in a process of its own: it cannot be undone.
    """
    libc = _libc()
    if libc is None:
        return False, Unconfined(
            f"{platform.system()} has no user namespaces, which confine definitions",
            "run the gate on Linux (as CI does); on this machine definitions run unconfined "
            "unless --require-sandbox or CI asks for the sandbox",
        )
    uid, gid = os.geteuid(), os.getegid()
    if libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNS | _CLONE_NEWNET | _CLONE_NEWPID) != 0:
        return False, diagnose("unshare", ctypes.get_errno())
    # An undumpable process's /proc/self files belong to root (proc(5), PR_SET_DUMPABLE): a
    # user without privileges (GitHub's runners are uid 1001) could not write its own uid
    # map. Dumpable only while it maps: in the new user namespace already, where no
    # definition's process can name it.
    dumpable = libc.prctl(_PR_GET_DUMPABLE, 0, 0, 0, 0)
    libc.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)
    try:
        # Map our own ids so file permissions read as they do outside.
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                           ("gid_map", f"{gid} {gid} 1")):  # fmt: skip
            with open(f"/proc/self/{name}", "w", encoding="ascii") as f:
                f.write(text)
    except OSError as e:
        return True, diagnose("map", e.errno or 0)
    finally:
        if dumpable == 0:
            libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    if libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
        return True, diagnose("mount", ctypes.get_errno())
    return True, None


def diagnose(step: str, code: int) -> Unconfined:
    """The cause of a refused step (``unshare``, ``map``, ``mount``) and its fix."""
    what = {
        "unshare": "creating a user namespace (unshare)",
        "map": "mapping user ids in the new user namespace",
        "mount": "mounting in the new user namespace",
        "root": "building the definitions' root file system",
        "setattr": "making every mount read-only (mount_setattr)",
    }[step]
    cause = f"{what} failed: {os.strerror(code) if code else 'unknown error'}"
    if step == "unshare" and code == errno.ENOSPC:
        return Unconfined(
            cause + " (user.max_user_namespaces is 0 here, or its limit is used up)",
            "allow user namespaces: sudo sysctl -w user.max_user_namespaces=15000",
        )
    if step == "unshare" and code == errno.EPERM:
        return Unconfined(
            cause + " (a seccomp profile forbids it, such as a container runtime's default, "
            "or kernel.unprivileged_userns_clone is 0)",
            "run trainkit in a VM or a container whose seccomp profile allows unshare and "
            "clone with CLONE_NEWUSER (e.g. docker run --security-opt seccomp=<profile>), "
            "or sudo sysctl -w kernel.unprivileged_userns_clone=1",
        )
    if step == "unshare" and code == errno.EINVAL:
        return Unconfined(
            cause + " (this kernel is built without user namespaces)",
            "run the gate on a Linux kernel with CONFIG_USER_NS",
        )
    if step in ("map", "mount", "root") and code in (errno.EPERM, errno.EACCES):
        if _read(_APPARMOR_USERNS) == "1":
            return Unconfined(
                cause + " (AppArmor restricts unprivileged user namespaces here: "
                "kernel.apparmor_restrict_unprivileged_userns=1, as on Ubuntu 24.04 and "
                "GitHub's ubuntu-latest runners)",
                f"run `{_GITHUB_ROUTE}` before trainkit (the workflow trainkit init writes "
                "does), or load an AppArmor profile that allows userns for this Python",
            )
        return Unconfined(
            cause + " (the kernel created the namespace but a security module, such as "
            "AppArmor's unprivileged_userns profile, or a seccomp policy refuses its use)",
            f"on Ubuntu 23.10 and later run `{_GITHUB_ROUTE}`; elsewhere allow mount and "
            "pivot_root inside user namespaces",
        )
    if step == "setattr" and code == errno.ENOSYS:
        return Unconfined(
            cause + " (Linux before 5.12 has no mount_setattr)",
            "run the gate on Linux 5.12 or later",
        )
    return Unconfined(cause, "run the gate where unprivileged user namespaces work (Linux)")


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as f:
            return f.read().strip()
    except OSError:
        return None


def view(jobs: str, root: str, paths: Iterable[str]) -> list[str]:
    """The host paths definitions see, read-only: ``jobs``, the interpreter's prefixes,
    ``paths`` (the caller's ``sys.path``) and the system's shared libraries.

    Nothing else of the repository ``root``: a path that is ``root`` or holds it (the
    working directory on ``sys.path``) is left out, and where an interpreter prefix holds
    the repository, ``build_root`` hides it again below jobs/.
    """
    out: list[str] = []
    wanted = [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix,
              *paths, *_SYSTEM_LIBRARIES]  # fmt: skip
    roots = {os.path.normpath(root), os.path.realpath(root)}
    for raw in wanted:
        if not raw or not os.path.isabs(raw):
            continue
        for p in dict.fromkeys((os.path.normpath(raw), os.path.realpath(raw))):
            if not os.path.lexists(p) or p == "/" or _under(p, _KERNEL_TREES):
                continue
            if any(_under(r, (p,)) for r in roots):
                continue  # the repository itself, or a directory holding it
            out.append(p)
    out.extend(dict.fromkeys((os.path.normpath(jobs), os.path.realpath(jobs))))
    return list(dict.fromkeys(out))


def _under(path: str, tops: Iterable[str]) -> bool:
    return any(path == t or path.startswith(t.rstrip("/") + "/") for t in tops)


def build_root(sources: list[str], root: str, cwd: str) -> Unconfined | None:
    """In process 1 of the new namespaces: pivot into a fresh read-only tree of ``sources``.

    ``root`` (the repository, resolved) shows nothing but what ``sources`` hold below it;
    ``cwd`` is entered again afterwards when it exists there. Returns why, if the kernel
    refused a step.
    """
    libc = _libc()
    machine = platform.machine()
    if libc is None or machine not in _SYS_PIVOT_ROOT:
        return Unconfined(
            f"building the definitions' root file system: pivot_root is not known on {machine}",
            "run the gate on x86_64 or aarch64 Linux",
        )
    opened: list[int] = []
    try:
        try:
            _assemble(libc, sources, root, opened)
            _check(libc.syscall(_SYS_PIVOT_ROOT[machine], b".", b"."), "root")
            # The host's tree now lies over ours at "/": detach it.
            _check(libc.umount2(b".", _MNT_DETACH), "root")
            os.chdir("/")
        except OSError as e:
            return diagnose("root", e.errno or 0)
        except _Refused as e:
            return diagnose(e.step, e.code)
        attr = _MountAttr(_MOUNT_ATTR_RDONLY | _MOUNT_ATTR_NOSUID, 0, 0, 0)
        if libc.syscall(_SYS_MOUNT_SETATTR, _AT_FDCWD, b"/", _AT_RECURSIVE,
                        ctypes.byref(attr), ctypes.sizeof(attr)) != 0:  # fmt: skip
            return diagnose("setattr", ctypes.get_errno())
    finally:
        for fd in opened:
            os.close(fd)
    with contextlib.suppress(OSError):
        os.chdir(cwd)
    return None


def _assemble(libc: ctypes.CDLL, sources: list[str], root: str, opened: list[int]) -> None:
    """Mount a tmpfs over a staging directory and bind everything into it; leaves the
    process in the staging directory, ready to pivot."""
    links: dict[str, str] = {}
    fds: dict[str, int] = {}
    # Opened before the tmpfs hides anything: a source may lie below the staging directory.
    devices = [f"/dev/{d}" for d in _DEVICES if os.path.exists(f"/dev/{d}")]
    for path in [*sources, *devices]:
        if os.path.islink(path):
            links[path] = os.readlink(path)
        elif path not in fds:
            fds[path] = os.open(path, os.O_PATH | os.O_CLOEXEC)
            opened.append(fds[path])
    stage = next((d for d in _STAGING if os.path.isdir(d) and not os.path.islink(d)), "")
    if not stage:
        raise OSError(errno.ENOENT, f"none of {', '.join(_STAGING)} is a directory")
    _tmpfs(libc, stage)
    ours = {os.stat(stage).st_dev}
    inside = [p for p in sources if _under(p, (root,))]
    _place(libc, stage, ours, [(p, p) for p in sources if p not in inside], links, fds)
    base, strip = stage, 0
    if os.path.lexists(stage + root):
        # An interpreter prefix holds the repository: hide it, keep only what is asked for.
        base, strip = stage + root, len(root)
        _tmpfs(libc, base)
        ours.add(os.stat(base).st_dev)
    _place(libc, base, ours, [(p[strip:] or "/", p) for p in inside], links, fds)
    for path in devices:
        _bind(libc, fds[path], _mount_point(stage, ours, path, directory=False))
    proc = _mount_point(stage, ours, "/proc", directory=True)
    # A fresh /proc shows this PID namespace only. A kernel that refuses it (a container
    # whose /proc is partly masked) leaves the directory empty: less to see, not more.
    libc.mount(b"proc", proc.encode(), b"proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, None)
    os.chdir(stage)


def _tmpfs(libc: ctypes.CDLL, at: str) -> None:
    _check(libc.mount(b"tmpfs", at.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV,
                      b"mode=0755,size=1m"), "root")  # fmt: skip


def _place(
    libc: ctypes.CDLL, base: str, ours: set[int], paths: list[tuple[str, str]],
    links: dict[str, str], fds: dict[str, int],
) -> None:  # fmt: skip
    """Bind each host path (or copy the symbolic link it is) at its place below ``base``
    (``(place, host path)``); one below another already placed is visible through it."""
    placed: list[str] = []
    for where, path in sorted(paths):
        if _under(where, placed):
            continue
        placed.append(where)
        if path in links:
            parent = _mount_point(base, ours, os.path.dirname(where), directory=True)
            os.symlink(links[path], os.path.join(parent, os.path.basename(where)))
            continue
        fd = fds[path]
        is_dir = os.path.isdir(f"/proc/self/fd/{fd}")
        _bind(libc, fd, _mount_point(base, ours, where, directory=is_dir))


def _bind(libc: ctypes.CDLL, fd: int, target: str) -> None:
    _check(libc.mount(f"/proc/self/fd/{fd}".encode(), target.encode(), None,
                      _MS_BIND | _MS_REC, None), "root")  # fmt: skip


def _mount_point(base: str, ours: set[int], path: str, *, directory: bool) -> str:
    """Create ``path`` below ``base``, every step of it on our own tmpfs: never a write
    through a bound host directory or a symbolic link."""
    at = base
    parts = [p for p in path.split("/") if p]
    for i, part in enumerate(parts):
        at = os.path.join(at, part)
        last = i == len(parts) - 1
        try:
            st = os.lstat(at)
        except FileNotFoundError:
            if last and not directory:
                os.close(os.open(at, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o644))
            else:
                os.mkdir(at, 0o755)
            continue
        if st.st_dev not in ours or os.path.islink(at) or (not last and not os.path.isdir(at)):
            raise OSError(errno.EXDEV, f"{at} is not on the sandbox's own tmpfs")
    return at


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
    forbid_new_privileges()


def forbid_new_privileges() -> None:
    """``no_new_privs`` (Linux): no setuid program (``sudo``) or file capability works in this
    process and its descendants, confined or not."""
    libc = _libc()
    if libc is not None and libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
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


def adopt_orphans() -> None:
    """Make this process the parent of its descendants' orphans (Linux), so ``kill_tree``
    finds every process a definition left running, however deep or detached."""
    libc = _libc()
    if libc is not None:
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def kill_tree() -> None:
    """Stop, then SIGKILL and reap, every descendant of this process.

    Unconfined, the whole tree a definition started must go, not only the direct
    children: descendants are stopped first (a stopped process forks no more), each
    pass waiting until they have stopped, until a pass over ``/proc`` finds no new one;
    then all are killed, and whatever a fork in flight still left is killed as it shows
    up. Orphans of the tree come back to this process (``adopt_orphans``), so none
    escapes by detaching. Where there is no ``/proc`` (macOS), only direct children
    are found.
    """
    me = os.getpid()
    with contextlib.suppress(OSError):
        if os.readlink("/proc/self") != str(me):
            # The /proc of another PID namespace: its numbers are not ours to signal. We are
            # process 1 of a namespace of our own, whose end kills everything in it.
            return
    stopped: set[int] = set()
    for _ in range(10_000):
        fresh = set(_descendants(me)) - stopped
        if not fresh:
            break
        for pid in fresh:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGSTOP)
        for pid in fresh:
            _until_stopped(pid)
        stopped |= fresh
    for pid in stopped:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    while left := set(_descendants(me)):
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        # One of our children was just killed (a descendant exists, so a child does):
        # waiting returns, and its orphans come back to us for the next pass.
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
        except InterruptedError:
            continue
    _reap_all()


def _until_stopped(pid: int) -> None:
    """Wait until ``pid`` has stopped (or ended): a stop signal is delivered asynchronously,
    and a process still running might fork once more."""
    for _ in range(10_000):
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
                stat = f.read()
        except OSError:
            return
        if stat[stat.rfind(")") + 2 : stat.rfind(")") + 3] in ("T", "t", "Z", "X"):
            return
        os.sched_yield()


def _descendants(me: int) -> Iterator[int]:
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        entries = []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                stat = f.read()
        except OSError:
            continue
        # "pid (comm) state ppid …": comm may hold spaces and parentheses.
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 1 and fields[1].isdigit():
            children.setdefault(int(fields[1]), []).append(int(entry))
    todo = list(children.get(me, ()))
    seen: set[int] = set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        yield pid
        todo.extend(children.get(pid, ()))


def _reap_all() -> None:
    """Reap every child that has ended."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        except InterruptedError:
            continue
        if pid == 0:
            return
