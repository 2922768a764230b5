"""The directory of one test run that all its xdist workers share."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

import pytest


def run_directory(factory: pytest.TempPathFactory) -> Path:
    """The run's base temporary directory: xdist gives each worker a directory of its own
    below it (popen-gwN); without xdist the process's own is the run's."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@contextlib.contextmanager
def package_watch(factory: pytest.TempPathFactory, *, writes: bool) -> Iterator[None]:
    """A load without the sandbox records trainkit's own directories and fails on any change
    to them while its definitions run (``load.watch``), also one another test made: the test
    whose definition writes into trainkit's package holds this alone (``writes``), those
    that load without the sandbox hold it together, across the run's workers."""
    with open(run_directory(factory) / "trainkit-package.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX if writes else fcntl.LOCK_SH)
        yield  # released when the file closes
