"""Put a finished tree in place of the output directory, and recover from a killed swap.

Every temporary lives beside the output directory as ``.<out>.trainkit-<kind>-<pid>``
(git-ignored as ``.*.trainkit-*``):

    new-<pid>    being built, or (after the exchange) holding the previous tree: discarded
    ready-<pid>  complete; the name is the completeness marker, so no marker file can
                 end up inside the output directory
    old-<pid>    the previous tree, set aside by the two-rename fallback

Where the system can exchange two directories atomically (Linux renameat2
RENAME_EXCHANGE, macOS renamex_np RENAME_SWAP) the output directory exists at
every instant. Where it cannot, two renames leave one gap in which it is missing
while a ``ready`` tree exists; the next run (``recover``, under the lock) moves
that tree in, so nothing is lost, and an error within the run moves the old one back.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import shutil
import sys
from collections.abc import Callable
from ctypes import c_char_p, c_int, c_long, c_uint
from functools import cache
from pathlib import Path

__all__ = ["exchange", "leftovers", "recover", "sibling", "step", "swap_in"]

_hook: Callable[[str], None] | None = None


def step(name: str) -> None:
    """A point just before a change on disk; tests set ``_hook`` to simulate a kill there."""
    if _hook is not None:
        _hook(name)


def sibling(out: Path, tag: str) -> Path:
    return out.parent / f".{out.name}.trainkit-{tag}"


_KINDS = ("new", "ready", "old")


def _kind(out: Path, path: Path) -> str:
    rest = path.name.removeprefix(sibling(out, "").name)
    return rest if rest == "lock" else rest.partition("-")[0]


def leftovers(out: Path) -> list[Path]:
    """Temporaries and the lock file of this output directory, from a running or killed run."""
    try:
        names = os.listdir(out.parent)
    except FileNotFoundError:
        return []
    prefix = sibling(out, "").name
    found = [out.parent / n for n in names if n.startswith(prefix)]
    return sorted(p for p in found if _kind(out, p) in (*_KINDS, "lock"))


def recover(out: Path, *, finish: bool = True) -> bool:
    """Finish (or with ``finish=False`` roll back) a swap cut short, then remove temporaries.

    Call only while holding the lock: then no other run is using them. Returns
    whether it put a tree in place of ``out``.
    """
    found = [p for p in leftovers(out) if _kind(out, p) != "lock"]
    restored = False
    if not os.path.lexists(out):
        # A swap by renames cut short in its gap: the previous tree is set aside (old),
        # the new one complete (ready). An older trainkit's gap leaves only the old one.
        ready = [p for p in found if _kind(out, p) == "ready"]
        old = [p for p in found if _kind(out, p) == "old"]
        if ready or old:
            pick = (ready or old)[-1] if finish else (old or ready)[-1]
            step(f"restore {pick.name}")
            os.rename(pick, out)
            found.remove(pick)
            restored = True
    for path in found:
        step(f"remove {path.name}")
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    return restored


def swap_in(new: Path, out: Path) -> None:
    """Replace ``out`` by the complete tree ``new`` (a sibling of ``out``)."""
    if not os.path.lexists(out):
        step("move in")
        os.rename(new, out)
        return
    step("exchange")
    try:
        exchange(new, out)
    except OSError as e:
        if e.errno not in _UNSUPPORTED:
            raise
        _swap_by_renames(new, out)
        return
    step("remove old tree")
    shutil.rmtree(new)  # it holds the previous tree now


def _swap_by_renames(new: Path, out: Path) -> None:
    ready = sibling(out, f"ready-{os.getpid()}")
    old = sibling(out, f"old-{os.getpid()}")
    step("mark complete")
    os.rename(new, ready)
    step("set aside")
    os.rename(out, old)
    step("move in")
    os.rename(ready, out)
    step("remove old tree")
    shutil.rmtree(old)


# The filesystem or kernel cannot exchange: fall back to two renames.
_UNSUPPORTED = {errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP}

# linux/include/uapi/linux/fs.h RENAME_EXCHANGE; macOS <stdio.h> RENAME_SWAP.
_RENAME_EXCHANGE = 1 << 1
_RENAME_SWAP = 0x2
_AT_FDCWD = -100
# renameat2 numbers for 64-bit processes (arch/*/entry/syscalls, include/uapi/asm-generic/
# unistd.h), for a C library older than the renameat2 wrapper (glibc < 2.28).
_SYSCALL = {"x86_64": 316, "aarch64": 276, "arm64": 276, "riscv64": 276, "ppc64le": 357}

_Exchange = Callable[[bytes, bytes], int]


def _syscall_exchange(libc: ctypes.CDLL, number: int) -> _Exchange:
    def call(a: bytes, b: bytes) -> int:
        # syscall(2) is variadic: pass every argument at its full register width.
        dirfd = c_long(_AT_FDCWD)
        flags = c_long(_RENAME_EXCHANGE)
        return int(libc.syscall(c_long(number), dirfd, c_char_p(a), dirfd, c_char_p(b), flags))

    return call


@cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


@cache
def _exchange_call() -> _Exchange | None:
    libc = _libc()
    if sys.platform == "darwin":
        swap = getattr(libc, "renamex_np", None)
        if swap is None:
            return None
        swap.argtypes = [c_char_p, c_char_p, c_uint]
        return lambda a, b: int(swap(a, b, _RENAME_SWAP))
    if not sys.platform.startswith("linux"):
        return None
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is not None:
        renameat2.argtypes = [c_int, c_char_p, c_int, c_char_p, c_uint]
        return lambda a, b: int(renameat2(_AT_FDCWD, a, _AT_FDCWD, b, _RENAME_EXCHANGE))
    number = _SYSCALL.get(platform.machine())
    if number is None or ctypes.sizeof(ctypes.c_void_p) != 8:
        return None
    return _syscall_exchange(libc, number)


def exchange(a: Path, b: Path) -> None:
    """Swap two paths in one step; OSError ENOSYS/EINVAL/EOPNOTSUPP where that is impossible."""
    call = _exchange_call()
    if call is None:
        raise OSError(errno.ENOSYS, "no atomic exchange of directories on this system")
    if call(os.fsencode(a), os.fsencode(b)) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), str(a), None, str(b))
