"""The three ways Linux refuses the definitions' sandbox, reproduced in this process only.

``python tests/denials.py MODE [trainkit ARGS…]`` applies one refusal to itself, then runs
``trainkit ARGS`` in the same process (its children inherit the refusal);
``python tests/denials.py MODE --origin FD OWNER`` runs, refused, the origin of definition
processes that trainkit starts as ``python -c "from trainkit.load.server import main; main()"
FD OWNER`` (every definition's process is its descendant, and enters the sandbox):

- ``seccomp``: a seccomp filter answers ``unshare`` with EPERM, as a container runtime's
  default profile does (Docker's refuses user namespaces to unprivileged containers).
- ``max-userns``: this process enters a user namespace whose ``user.max_user_namespaces``
  is 0, so creating another fails with ENOSPC.
- ``mount``: ``unshare`` works, but a seccomp filter answers ``mount`` with EACCES, as
  Ubuntu 24.04's AppArmor ``unprivileged_userns`` profile (GitHub's ubuntu-latest runners)
  refuses what a new user namespace would do.

Nothing here touches the machine: a seccomp filter and a user namespace belong to this
process and its descendants, and end with them.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct
import sys

_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_SECCOMP_RET_ALLOW = 0x7FFF0000
_SECCOMP_RET_ERRNO = 0x00050000
_CLONE_NEWUSER = 0x10000000
# (audit architecture, {syscall: number}) per machine: seccomp filters see raw numbers.
_ARCH = {
    "x86_64": (0xC000003E, {"unshare": 272, "mount": 165}),
    "aarch64": (0xC00000B7, {"unshare": 97, "mount": 40}),
}
# Classic BPF opcodes: load a word of seccomp_data, compare, return.
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_RET_K = 0x06


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def refuse(syscall: str, code: int) -> None:
    """Install a seccomp filter: ``syscall`` fails with ``code``, everything else runs."""
    arch, numbers = _ARCH[platform.machine()]
    program = [
        (_LD_W_ABS, 0, 0, 4),  # seccomp_data.arch
        (_JEQ_K, 1, 0, arch),
        (_RET_K, 0, 0, _SECCOMP_RET_ALLOW),  # another ABI: not ours to judge
        (_LD_W_ABS, 0, 0, 0),  # seccomp_data.nr
        (_JEQ_K, 0, 1, numbers[syscall]),
        (_RET_K, 0, 0, _SECCOMP_RET_ERRNO | code),
        (_RET_K, 0, 0, _SECCOMP_RET_ALLOW),
    ]
    code_bytes = b"".join(struct.pack("HBBI", *ins) for ins in program)
    buffer = ctypes.create_string_buffer(code_bytes, len(code_bytes))
    prog = _Program(len(program), ctypes.addressof(buffer))
    libc = _libc()
    # Unprivileged processes may install a filter only under no_new_privs.
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")


def no_user_namespaces_left() -> None:
    """Enter a user namespace of our own and set its ``max_user_namespaces`` to 0."""
    uid, gid = os.geteuid(), os.getegid()
    libc = _libc()
    if libc.unshare(_CLONE_NEWUSER) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWUSER)")
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                       ("gid_map", f"{gid} {gid} 1")):  # fmt: skip
        with open(f"/proc/self/{name}", "w", encoding="ascii") as f:
            f.write(text)
    # The user.* limits are per user namespace: this one, for this process's descendants.
    with open("/proc/sys/user/max_user_namespaces", "w", encoding="ascii") as f:
        f.write("0")


DENIALS = {
    "seccomp": lambda: refuse("unshare", errno.EPERM),
    "max-userns": no_user_namespaces_left,
    "mount": lambda: refuse("mount", errno.EACCES),
}


def main() -> int:
    mode, *args = sys.argv[1:]
    DENIALS[mode]()
    if args[:1] == ["--origin"]:
        from trainkit.load.server import main as origin

        sys.argv = [sys.argv[0], *args[1:]]
        origin()
        return 0
    from trainkit.cli import main as trainkit

    return trainkit(args)


if __name__ == "__main__":
    sys.exit(main())
