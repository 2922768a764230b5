"""What a long command is doing, on a terminal, once it has taken more than a second.

Only a terminal gets it (a log or a pipe would fill with carriage returns),
and only a slow run: a check that answers at once prints nothing extra. One
line on stderr is redrawn in place and cleared at the end.
"""

from __future__ import annotations

import threading
import time
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """``step(text)`` says what runs now; the line appears after ``delay`` seconds."""

    def __init__(self, stream: TextIO, label: str, *, delay: float = 1.0) -> None:
        self._stream = stream
        self._label = label
        self._delay = delay
        self._enabled = _is_terminal(stream)
        self._text = ""
        self._shown = False
        self._start = time.monotonic()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.drawn = threading.Event()
        """Set once a line was drawn (for tests: no sleeping on the clock)."""

    def __enter__(self) -> Progress:
        if self._enabled:
            self._start = time.monotonic()
            self._thread = threading.Thread(target=self._run, name="progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        with self._lock:
            if self._shown:
                self._stream.write("\r\x1b[K")
                self._stream.flush()

    def step(self, text: str) -> None:
        with self._lock:
            self._text = text
            if self._shown:
                self._draw()

    def clear(self) -> None:
        """Take the line away before other output; the next step or tick draws it again."""
        with self._lock:
            if self._shown:
                self._stream.write("\r\x1b[K")
                self._stream.flush()

    def _run(self) -> None:
        if self._stop.wait(self._delay):
            return
        while True:
            with self._lock:
                self._shown = True
                self._draw()
            if self._stop.wait(1.0):
                return

    def _draw(self) -> None:
        seconds = int(time.monotonic() - self._start)
        self._stream.write(f"\r\x1b[K{self._label}: {self._text} ({seconds} s)")
        self._stream.flush()
        self.drawn.set()


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
