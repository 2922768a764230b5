"""Where trainkit keeps caches: outside the work tree, per user, never in CI.

``$TRAINKIT_CACHE_DIR``, else ``$XDG_CACHE_HOME/trainkit``, else
``~/.cache/trainkit`` (the XDG base-directory default). A cache inside the
repository would show up in ``git status`` and could be committed; one per
user survives branch switches and fresh worktrees. CI (``$CI`` non-empty)
runs cold: a result must never depend on what a cache happened to hold.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_dir", "cache_enabled"]


def cache_dir() -> Path:
    """The cache root (not created here)."""
    explicit = os.environ.get("TRAINKIT_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and Path(xdg).is_absolute():  # the XDG spec: relative values are invalid, ignore them
        return Path(xdg) / "trainkit"
    return Path.home() / ".cache" / "trainkit"


def cache_enabled(*, no_cache: bool = False) -> bool:
    """False when the caller opts out or ``$CI`` is set: then no cache is read or written."""
    return not no_cache and not os.environ.get("CI")
