"""Paths of a node's file system, as a grant of directories reads them."""

from __future__ import annotations

import posixpath

__all__ = ["under"]


def under(path: str, directory: str) -> bool:
    """Whether ``path`` is ``directory`` or below it, compared as normalised absolute paths
    (``/mnt/nvme`` covers ``/mnt/nvme/cache``, not ``/mnt/nvme2``; ``..`` never escapes)."""
    if not path.startswith("/") or not directory.startswith("/"):
        return False
    p, d = posixpath.normpath(path), posixpath.normpath(directory)
    return d == "/" or p == d or p.startswith(d.rstrip("/") + "/")
