"""The directory of one test run that all its xdist workers share."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def run_directory(factory: pytest.TempPathFactory) -> Path:
    """The run's base temporary directory: xdist gives each worker a directory of its own
    below it (popen-gwN); without xdist the process's own is the run's."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
