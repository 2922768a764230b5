"""Finding the repository a command runs in, so that it works from any subdirectory.

The root is the nearest directory, from the current one upwards, that holds
``jobs/``; the search stops at the top of the git work tree (a ``jobs/`` above
it belongs to something else). Without one, the git top level is the root, and
outside git the current directory.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["find_root", "rebase"]


def find_root(start: Path) -> Path:
    """The repository root for a command started in ``start`` (absolute)."""
    for directory in (start, *start.parents):
        if (directory / "jobs").is_dir():
            return directory
        if (directory / ".git").exists():
            return directory
    return start


def rebase(path: str, start: Path, root: Path) -> str:
    """``path`` as given in ``start``, said from ``root``: relative when it lies below it."""
    full = Path(os.path.normpath(start / path))
    try:
        return full.relative_to(root).as_posix() or "."
    except ValueError:
        return str(full)
