"""Where the OS could not confine definitions: run nothing they could have changed, and
notice every file they changed.

Without the sandbox (macOS, kernels that refuse user namespaces) a definition
could write anywhere its user can. Before the first definition runs, trainkit
then imports every module it will need (``import_everything``), so no code a
definition planted runs in it later; it records the repository, its own files,
every entry of the directories its modules came from and of ``sys.path``, and
compares afterwards: any change is an error, attributed to the definitions
that were running when it happened. A file's inode change time (``ctime``) is
part of the record: a rewrite that restores the size, inode and modification
time still moves it, and only the kernel sets it. For the rest of the process,
a module first imported later is refused if its file changed while definitions
ran (``guard_imports``).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import os
import pkgutil
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import ModuleType

from ..errors import DefinitionError, Problem

__all__ = [
    "Snapshot",
    "changed",
    "guard_imports",
    "import_everything",
    "imported_files",
    "snapshot",
]

Snapshot = dict[str, tuple[int, int, int, int, int]]
"""path → (size, mtime_ns, ctime_ns, inode, mode)"""

# Rehearsals run the job's own code on this machine by design; their extras are no part
# of the gate, and importing them (seconds) would only slow every unconfined run.
_REHEARSAL_ONLY = frozenset({"torch", "ray", "deepspeed", "mpi4py", "numpy"})
# An import statement inside a function: the module is imported when the function runs.
_LAZY_IMPORT = re.compile(r"^[ \t]+(?:from[ \t]+([A-Za-z_][\w.]*)[ \t]+import|import[ \t]+([A-Za-z_][\w.]*))", re.M)  # fmt: skip


def import_everything() -> None:
    """Import every module of trainkit, and every module one of them imports inside a
    function (except the rehearsal extras), before any definition runs unconfined."""
    import trainkit

    lazy: set[str] = set()
    for info in pkgutil.walk_packages(trainkit.__path__, "trainkit."):
        if info.name.endswith(".__main__"):
            continue
        module = importlib.import_module(info.name)
        lazy.update(_lazy_imports(module))
    for name in sorted(lazy):
        if name.partition(".")[0] in _REHEARSAL_ONLY:
            continue
        # Not installed: a later import fails alike, or is refused (guard_imports).
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


def _lazy_imports(module: ModuleType) -> set[str]:
    file = getattr(module, "__file__", None)
    if not isinstance(file, str) or not file.endswith(".py"):
        return set()
    try:
        with open(file, encoding="utf-8") as f:
            source = f.read()
    except OSError:
        return set()
    return {a or b for a, b in _LAZY_IMPORT.findall(source)}


def imported_files() -> list[str]:
    """Files of the modules this process imported: a change there changes the next run."""
    files = (getattr(m, "__file__", None) for m in list(sys.modules.values()))
    return sorted({f for f in files if isinstance(f, str)})


def snapshot(roots: Iterable[Path], modules: Iterable[str]) -> Snapshot:
    """Every file and directory below ``roots``; every entry (``__pycache__`` included) of the
    directories ``modules`` came from and of the directories on ``sys.path``."""
    out: Snapshot = {}
    for root in roots:
        _walk(str(root), out)
    places = {os.path.dirname(file) for file in modules}
    places.update(p for p in sys.path if p and os.path.isdir(p))
    for place in sorted(places):
        _list(place, out)
        _list(os.path.join(place, "__pycache__"), out)
    for file in modules:
        _stat(file, out)
    return out


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


def _list(directory: str, out: Snapshot) -> None:
    if directory in out:
        return
    _stat(directory, out)
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return
    for entry in entries:
        _stat(entry.path, out)


def _stat(path: str, out: Snapshot) -> None:
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return
    out[path] = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_mode)


def changed(before: Snapshot, after: Snapshot) -> list[tuple[str, int]]:
    """Paths added, removed or modified, with the time of the change (0 when removed)."""
    out = []
    for path in sorted(before.keys() | after.keys()):
        old, new = before.get(path), after.get(path)
        if old != new:
            out.append((path, max(new[1], new[2]) if new else 0))
    return out


def guard_imports(start_ns: int, end_ns: int) -> None:
    """From now on, refuse to import a module whose file (or cached bytecode) changed
    between ``start_ns`` and ``end_ns``, while definitions ran unconfined."""
    guard = next((f for f in sys.meta_path if isinstance(f, _Guard)), None)
    if guard is None:
        guard = _Guard()
        sys.meta_path.insert(0, guard)
    guard.windows.append((start_ns, end_ns))


class _Guard(importlib.abc.MetaPathFinder):
    def __init__(self) -> None:
        self.windows: list[tuple[int, int]] = []

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is None:
                continue
            for file in (spec.origin, spec.cached):
                if file and spec.has_location and self._changed(file):
                    raise DefinitionError(
                        [
                            Problem(
                                file=file,
                                message="changed while definitions ran without the sandbox, "
                                f"before trainkit imported it (module {fullname}); trainkit "
                                "will not run it: restore or reinstall it, and look for the "
                                "definition that wrote it",
                            )
                        ]
                    )
            return spec
        return None

    def _changed(self, file: str) -> bool:
        try:
            st = os.stat(file)
        except OSError:
            return False
        return any(
            start <= max(st.st_mtime_ns, st.st_ctime_ns) <= end for start, end in self.windows
        )
