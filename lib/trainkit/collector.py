"""Python's cycle collector paused, for code that allocates many objects and builds no
reference cycle (YAML documents read, a module's syntax tree, the models built once in the
definitions' origin): the collector, triggered by allocations, would walk them (and every
object the process held before) again and again and find nothing to free, while reference
counting frees them as before."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["cycle_collection_paused"]

_pause_lock = threading.Lock()
_pauses = 0
_resume = False


@contextmanager
def cycle_collection_paused() -> Iterator[None]:
    """Python's cycle collector paused inside (see the module's docstring), for code that
    allocates many objects and builds no reference cycles. Nests, and is safe to use from
    several threads at once: the collector runs again, if it ran before, when the last user
    is done."""
    global _pauses, _resume
    with _pause_lock:
        if _pauses == 0:
            _resume = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _pause_lock:
            _pauses -= 1
            if _pauses == 0 and _resume:
                gc.enable()
