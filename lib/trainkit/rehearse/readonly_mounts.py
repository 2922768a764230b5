"""Run a command with some files mounted read-only, as a pod's ConfigMap subPath mounts are.

``python readonly_mounts.py FILE... -- COMMAND...`` unshares the mount namespace
(Linux; needs CAP_SYS_ADMIN, which root has outside most containers), bind-mounts
each FILE onto itself read-only and execs COMMAND in its place (same pid, same
session), so a write to a FILE fails with EROFS, exactly as on the cluster.
Without COMMAND it exits 0 once the mounts are made: whether the system allows them.

A rehearsal running as root uses it because root ignores file modes. Standard
library only: it runs by path, so the job's own PYTHONPATH cannot hide it.
Exits 126 with the failing call on stderr when the system refuses.
"""

from __future__ import annotations

import ctypes
import os
import sys

# <sched.h> and <sys/mount.h>
CLONE_NEWNS = 0x00020000
MS_RDONLY = 0x1
MS_REMOUNT = 0x20
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000
REFUSED = 126


def main(argv: list[str]) -> int:
    if "--" not in argv:
        print("usage: readonly_mounts.py FILE... -- [COMMAND...]", file=sys.stderr)
        return 2
    split = argv.index("--")
    files, command = argv[:split], argv[split + 1 :]
    # The C library the interpreter runs on (dlopen(NULL)): ctypes.util.find_library would
    # start ldconfig first, which doubles the cost of this helper (once for every node).
    libc = ctypes.CDLL(None, use_errno=True)
    libc.unshare.argtypes = [ctypes.c_int]
    libc.mount.argtypes = [
        ctypes.c_char_p,
        ctypes.c_char_p,
        ctypes.c_char_p,
        ctypes.c_ulong,
        ctypes.c_void_p,
    ]

    def call(rc: int, what: str) -> None:
        if rc != 0:
            raise OSError(ctypes.get_errno(), f"{what}: {os.strerror(ctypes.get_errno())}")

    try:
        call(libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
        # Private first, so the mounts below never reach the rest of the machine.
        call(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make / private")
        for name in files:
            path = os.fsencode(os.path.abspath(name))
            call(libc.mount(path, path, None, MS_BIND, None), f"bind-mount {name}")
            flags = MS_REMOUNT | MS_BIND | MS_RDONLY
            call(libc.mount(b"none", path, None, flags, None), f"remount {name} read-only")
    except OSError as e:
        print(e.strerror, file=sys.stderr)
        return REFUSED
    if not command:
        return 0
    os.execvp(command[0], command)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
