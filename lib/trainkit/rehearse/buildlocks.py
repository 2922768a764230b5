"""Torch's build locks: what a DeepSpeed rank waits on forever once a build was stopped midway.

DeepSpeed compiles its CPU ops on first use with ``torch.utils.cpp_extension.load``, which takes
a lock file for the build (``<build dir>/lock``, created with O_EXCL) and removes it when done;
a process that finds the file waits until it is gone, without limit and without a word
(torch/utils/file_baton.py ``FileBaton.wait``, torch 2.x; ``cpp_extension._jit_compile``). A
build killed midway (Ctrl-C, a timeout, SIGKILL) leaves the file behind, and every later load of
that op by this user hangs. Every DeepSpeed process on CPU loads its shared-memory collective op
when it joins the job (deepspeed/comm/torch.py ``TorchBackend.__init__`` → ``build_shm_op``), so
a rehearsal's ranks stop right after DeepSpeed's "Setting accelerator to CPU".

A live build works in its directory (ninja and the compiler run there); a lock that stays with no
process working in its directory is left over. The runner watches the locks of the ops DeepSpeed
loads on every CPU run, fails the rehearsal with the lock's path when one is left over, and
removes a lock that a build of its own left when it stopped it.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["STALE_SECONDS", "BuildLocks", "stale_message", "uses_deepspeed"]

STALE_SECONDS = 10.0
"""How long a lock may stay with no process building in its directory before it counts as left
over. A live build holds it without a builder only between taking it and starting ninja, and
between ninja's end and removing it (milliseconds)."""
_OPS = ("deepspeed_shm_comm",)
"""The ops every DeepSpeed process on CPU loads (deepspeed/comm/torch.py build_shm_op)."""
_IMPORTS = re.compile(r"^\s*(import|from)\s+deepspeed\b", re.MULTILINE)
_PROC = Path("/proc")

_Identity = tuple[int, int, int]


def uses_deepspeed(files: Mapping[str, str]) -> bool:
    """Whether one of a job's script files imports DeepSpeed."""
    return any(_IMPORTS.search(text) for name, text in files.items() if name.endswith(".py"))


def extension_roots(env: Mapping[str, str]) -> list[Path]:
    """Where torch builds extensions for processes with ``env``: ``TORCH_EXTENSIONS_DIR``, else
    one directory per Python and accelerator build under the user's cache
    (torch/utils/cpp_extension.py ``_get_build_directory``, ``get_default_build_root``)."""
    if chosen := env.get("TORCH_EXTENSIONS_DIR"):
        # Resolved: a builder's working directory (/proc/<pid>/cwd) is the real path.
        return [Path(os.path.realpath(chosen))]
    home = env.get("HOME") or os.path.expanduser("~")
    if sys.platform == "darwin":
        cache = Path(home) / "Library" / "Caches"
    else:
        cache = Path(env.get("XDG_CACHE_HOME") or Path(home) / ".cache")
    base = Path(os.path.realpath(cache / "torch_extensions"))
    version = f"py{sys.version_info.major}{sys.version_info.minor}{getattr(sys, 'abiflags', '')}"
    # The accelerator part (cpu, cuXYZ, rocmXYZ) is torch's build; any of them.
    return sorted(base.glob(f"{version}_*"))


def _working_dirs() -> dict[int, str] | None:
    """pid → working directory of every process whose directory can be read (None: no /proc)."""
    if not (_PROC / "self" / "cwd").exists():
        return None
    found = {}
    for name in os.listdir(_PROC):  # os, not pathlib: read at every scan of a rehearsal
        if name.isdigit():
            with contextlib.suppress(OSError):  # gone meanwhile, or another user's
                found[int(name)] = os.readlink(f"{_PROC}/{name}/cwd")
    return found


def _identity(path: Path) -> _Identity | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_ctime_ns)


def _inside(cwd: str, directory: Path) -> bool:
    return cwd == str(directory) or cwd.startswith(str(directory) + os.sep)


@dataclass
class _Seen:
    identity: _Identity
    idle_since: float | None


class BuildLocks:
    """The build locks a rehearsal's ranks may wait on, watched while it runs."""

    def __init__(
        self,
        env: Mapping[str, str],
        ops: Iterable[str] = _OPS,
        working_dirs: Callable[[], dict[int, str] | None] = _working_dirs,
    ) -> None:
        self.env = dict(env)
        self.ops = tuple(ops)
        self.working_dirs = working_dirs
        self.seen: dict[Path, _Seen] = {}
        self.ours: dict[Path, _Identity] = {}
        """Locks taken by a build of the rehearsal's own processes, as they were then."""
        self.builds: list[Path] = []
        """Build directories seen building, each once (the runner says so and empties it)."""
        self._told: set[Path] = set()

    def paths(self) -> list[Path]:
        """The lock files present now."""
        return [
            lock
            for root in extension_roots(self.env)
            for op in self.ops
            if (lock := root / op / "lock").exists()
        ]

    def check(self, now: float, own: set[int]) -> Path | None:
        """A lock left over (no process built in its directory for STALE_SECONDS), if any.
        ``own`` are the rehearsal's processes: a lock they build under is remembered."""
        present = {lock: ident for lock in self.paths() if (ident := _identity(lock))}
        self.seen = {k: v for k, v in self.seen.items() if present.get(k) == v.identity}
        if not present:
            return None
        cwds = self.working_dirs()
        for lock, ident in present.items():
            seen = self.seen.setdefault(lock, _Seen(ident, None))
            if cwds is None:
                continue  # no way to see builders here: never called left over
            builders = {pid for pid, cwd in cwds.items() if _inside(cwd, lock.parent)}
            if builders & own:
                self.ours[lock] = ident
            if builders:
                seen.idle_since = None
                if lock.parent not in self._told:
                    self._told.add(lock.parent)
                    self.builds.append(lock.parent)
            elif seen.idle_since is None:
                seen.idle_since = now
            elif now - seen.idle_since >= STALE_SECONDS:
                return lock
        return None

    def release_ours(self) -> list[Path]:
        """Remove the locks a build of the rehearsal's own left when it was stopped (once none
        of its processes runs): unchanged since, with no process building there."""
        removed = []
        cwds = self.working_dirs() or {}
        for lock, ident in self.ours.items():
            if _identity(lock) != ident or any(_inside(c, lock.parent) for c in cwds.values()):
                continue
            with contextlib.suppress(FileNotFoundError):
                lock.unlink()
                removed.append(lock)
        self.ours.clear()
        return removed


def stale_message(lock: Path) -> str:
    """What a rehearsal says when its ranks wait on a left-over lock."""
    return (
        f"the ranks wait on {lock}: torch's lock for building DeepSpeed's "
        f"{lock.parent.name} op, and no process has built there for {STALE_SECONDS:g} s. "
        "A build stopped midway (Ctrl-C, a timeout, a killed run) leaves it behind, and torch "
        "waits for it to go without limit (torch/utils/file_baton.py), so every DeepSpeed run "
        f"of this user on CPU hangs. No build runs: delete it (rm {lock}) and rehearse again "
        "(TORCH_EXTENSIONS_DIR chooses where the ops are built)"
    )
