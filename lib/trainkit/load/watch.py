"""Noticing files a definition changed, where the OS could not make them read-only.

Without the sandbox (no user namespaces: macOS, hardened kernels) a
definition could write anywhere its user can. The loader then records the
repository, trainkit's own files and the installed packages it imported
before the definitions run and compares afterwards: any change is an error,
attributed to the definitions that were running when it happened.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path

__all__ = ["Snapshot", "changed", "imported_files", "snapshot"]

Snapshot = dict[str, tuple[int, int, int]]
"""path → (size, mtime_ns, inode)"""


def snapshot(roots: Iterable[Path], modules: Iterable[str]) -> Snapshot:
    """Every file and directory below ``roots``, and the files ``modules``."""
    out: Snapshot = {}
    for root in roots:
        _walk(str(root), out)
    for file in modules:
        _stat(file, out)
        _stat(os.path.dirname(file), out)  # a new .pth or module beside it
    return out


def imported_files() -> list[str]:
    """Files of the modules this process imported: a change there changes the next run."""
    files = (getattr(m, "__file__", None) for m in list(sys.modules.values()))
    return sorted({f for f in files if isinstance(f, str)})


def _walk(top: str, out: Snapshot) -> None:
    _stat(top, out)
    try:
        entries = list(os.scandir(top))
    except OSError:
        return
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            if entry.name != "objects" or not top.endswith(".git"):
                _walk(entry.path, out)
            else:
                _stat(entry.path, out)
        else:
            _stat(entry.path, out)


def _stat(path: str, out: Snapshot) -> None:
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return
    out[path] = (st.st_size, st.st_mtime_ns, st.st_ino)


def changed(before: Snapshot, after: Snapshot) -> list[tuple[str, int]]:
    """Paths added, removed or modified, with the time of the change (0 when removed)."""
    out = []
    for path in sorted(before.keys() | after.keys()):
        old, new = before.get(path), after.get(path)
        if old != new:
            out.append((path, new[1] if new else 0))
    return out
