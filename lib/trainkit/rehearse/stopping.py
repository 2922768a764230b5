"""Starting a rehearsal's processes and stopping them all: on a signal, Ctrl-C or an error.

Shared by the node runs (torchrun, mpirun: ``runner.py``) and the Ray run (``ray_run.py``),
with the pace both poll at and the rehearsal's own output line.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TextIO

from ..errors import Problem, RehearsalError

__all__ = [
    "KILLED_WAIT_SECONDS",
    "POLL_SECONDS",
    "QUIET_SCAN_SECONDS",
    "SCAN_SECONDS",
    "TAIL_LINES",
    "ScanPace",
    "run_stopping",
    "say",
]

POLL_SECONDS = 0.05
SCAN_SECONDS = 0.25
"""How often the processes below a rehearsal are listed while some start or end."""
QUIET_SCAN_SECONDS = 1.0
"""How often at least while none starts or ends (``ScanPace``)."""
KILLED_WAIT_SECONDS = 30.0
"""How long SIGKILLed processes may take to be gone (each is gone once scheduled)."""
TAIL_LINES = 15


class ScanPace:
    """When to list the processes below a rehearsal again (each list reads every process of
    the machine): every SCAN_SECONDS while processes start or end, so a process group is learnt
    before its parent can end and leave it behind; after each list that found the same
    processes, half as often, down to once in QUIET_SCAN_SECONDS, as while ranks train."""

    def __init__(self) -> None:
        self.every = SCAN_SECONDS
        self.last = 0.0
        self._found: set[int] | None = None

    def due(self, now: float) -> bool:
        return now - self.last >= self.every

    def listed(self, now: float, found: set[int]) -> None:
        """The processes the list at ``now`` found."""
        same = found == self._found
        self.every = min(2 * self.every, QUIET_SCAN_SECONDS) if same else SCAN_SECONDS
        self._found = found
        self.last = now


def say(out: TextIO, line: str) -> None:
    """Write one line of the rehearsal's own (``[rehearse]``) to ``out``."""
    out.write(f"[rehearse] {line}\n")
    out.flush()


def run_stopping(
    start: Callable[[], None],
    wait: Callable[[], bool],
    stop: Callable[[], None],
    problem: Callable[[str], Problem],
    out: TextIO,
) -> bool:
    """``start()`` the rehearsal's processes and ``wait()`` for them (True: timed out). On
    SIGTERM/SIGHUP, Ctrl-C or an error, ``stop()`` every process first: a signal becomes a
    RehearsalError, the rest is re-raised."""
    try:
        with _signals_raise():
            start()
            return wait()
    except _Terminated as e:
        stop()
        raise RehearsalError(
            [problem(f"stopped by {e}; every process of the rehearsal was stopped")]
        ) from None
    except KeyboardInterrupt:
        stop()
        say(out, "interrupted; every process of the rehearsal was stopped")
        raise
    except BaseException:
        stop()
        raise


class _Terminated(Exception):
    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextmanager
def _signals_raise() -> Iterator[None]:
    """SIGTERM/SIGHUP raise _Terminated so the nodes are stopped (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        raise _Terminated(signum)

    previous = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
