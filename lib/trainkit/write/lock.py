"""One writer at a time per output directory.

An exclusive ``flock`` on ``.<out>.trainkit-lock`` beside the output directory:
the kernel drops it when its holder dies, so a killed run never blocks the next
one (a pid file would). The holder writes its pid and command line into the
file so that a waiting run can say whom it waits for. The holder removes the
file when done; a waiter that locked a file removed meanwhile locks the new one.
"""

from __future__ import annotations

import fcntl
import os
import shlex
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import Problem, SetupError
from .swap import step

__all__ = ["hold"]

_POLL = 0.05
"""Seconds between attempts: flock cannot wait with a timeout by itself."""


@contextmanager
def hold(path: Path, display: str, timeout: float) -> Iterator[None]:
    """Hold the lock at ``path``; wait up to ``timeout`` seconds, then raise SetupError."""
    fd = _acquire(path, display, timeout)
    try:
        yield
    except (Exception, KeyboardInterrupt):
        _release(fd, path)
        raise
    except BaseException:
        # A simulated kill (tests): act as a kill does. Closing the descriptor frees
        # the lock; the file and any temporaries stay for the next run.
        os.close(fd)
        raise
    _release(fd, path)


def _acquire(path: Path, display: str, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    told = False
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            while not _try_lock(fd):
                holder = _holder(path)
                if time.monotonic() >= deadline:
                    raise SetupError([_timeout_problem(path, display, holder, timeout)])
                if not told:
                    print(
                        f"waiting for {holder} to finish writing {display}",
                        file=sys.stderr,
                        flush=True,
                    )
                    told = True
                time.sleep(_POLL)
            if _same_file(fd, path):
                os.ftruncate(fd, 0)
                os.write(fd, f"{os.getpid()}\n{_command()}\n".encode())
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # the previous holder removed this file while we waited


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _same_file(fd: int, path: Path) -> bool:
    try:
        now = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (held.st_dev, held.st_ino) == (now.st_dev, now.st_ino)


def _release(fd: int, path: Path) -> None:
    try:
        step("unlock")
        # Removed while still locked: a waiter then sees that its file is gone.
        path.unlink(missing_ok=True)
    finally:
        os.close(fd)


def _holder(path: Path) -> str:
    try:
        pid, _, command = path.read_text(encoding="utf-8", errors="replace").partition("\n")
    except FileNotFoundError:
        pid = command = ""
    command = command.strip()
    if not pid.strip().isdigit():
        return "another trainkit run"
    return f"pid {pid.strip()}" + (f" (`{command}`)" if command else "")


def _timeout_problem(path: Path, display: str, holder: str, timeout: float) -> Problem:
    return Problem(
        file=display,
        message=(
            f"{holder} is writing it; gave up after waiting {timeout:g} s. Let that run "
            f"finish (or stop it) and run again (lock file: {path.name} beside {display})"
        ),
    )


def _command() -> str:
    argv = sys.argv or ["python"]
    first = Path(argv[0])
    name = first.parent.name if first.name == "__main__.py" else first.name
    return shlex.join([name, *argv[1:]])[:200]
