"""What each definition file returned last time, so that an unchanged file is not run again.

The payload a definition's process returned (plain JSON) is stored per file; on a
hit the loader rebuilds it through the models exactly like a fresh payload
(``rebuild``), so an entry can hold nothing a definition could not have returned:
the cache saves running the file, never checking its objects.

The inputs of an entry, all compared before it is used:

- the file's path relative to the repository, its team, and the SHA-256 of its bytes;
- the SHA-256 of every repository file that the process running it imported (the worker
  reports them; a process that ran several files counts each file's imports for all of
  them, since a module imported by the first is already loaded for the next);
- the store's stamp, given by the caller: trainkit's version and source, the Python,
  pydantic and PyYAML versions, and the data files under ``jobs/`` (see ``runcache``).

Files a definition opens at run time without importing them are inputs only when
they are data files under ``jobs/`` outside ``scripts/`` (the stamp covers those).

Only payloads of a load without any problem are stored; the store keeps the entries
of the last run and lives in the repository's cache directory (``cache_dir``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from ..cache_dir import file_digest, read_json, write_json
from .discover import DefinitionFile

__all__ = ["FORMAT", "DefinitionCache"]

FORMAT = 1
"""Bump when the entry layout changes."""


class DefinitionCache:
    """Payloads per definition file, in ``<directory>/definitions.json``."""

    def __init__(self, directory: Path, stamp: str, root: Path) -> None:
        self.path = directory / "definitions.json"
        self.stamp = f"{FORMAT}/{stamp}"
        self.root = root
        self._entries: dict[str, dict[str, object]] = {}
        self._used: dict[str, dict[str, object]] = {}
        self._hashes: dict[str, str | None] = {}
        data = read_json(self.path)
        if data is not None and data.get("stamp") == self.stamp:
            entries = data.get("entries")
            if isinstance(entries, dict):
                self._entries = {k: v for k, v in entries.items() if isinstance(v, dict)}

    def lookup(self, df: DefinitionFile) -> bytes | None:
        """The payload stored for ``df`` if every input of its entry is unchanged."""
        entry = self._entries.get(df.rel)
        if entry is None or entry.get("team") != df.team:
            return None
        sha, deps, payload = entry.get("sha"), entry.get("deps"), entry.get("payload")
        if not (isinstance(sha, str) and isinstance(deps, dict) and isinstance(payload, str)):
            return None
        if self.digest(str(df.path)) != sha:
            return None
        if any(not isinstance(h, str) or self.digest(p) != h for p, h in deps.items()):
            return None
        self._used[df.rel] = entry
        return payload.encode("utf-8", "surrogatepass")

    def store(self, df: DefinitionFile, sha: str, payload: bytes, imports: Iterable[str]) -> None:
        """Remember ``df``'s payload, computed from the file whose bytes hashed to ``sha``.

        A file that changed while it ran is not stored: the payload may be of either version.
        """
        if self._fresh_digest(str(df.path)) != sha:
            return
        deps: dict[str, str] = {}
        for path in sorted(set(imports)):
            real = os.path.realpath(path)
            if not _inside(real, str(self.root)):
                continue  # the installed packages and the standard library: not ours to watch
            digest = self.digest(real)
            if digest is None:
                return  # imported, then gone: nothing to key it by
            deps[real] = digest
        self._used[df.rel] = {
            "team": df.team,
            "sha": sha,
            "deps": deps,
            "payload": payload.decode("utf-8", "surrogatepass"),
        }

    def imports(self, rel: str) -> list[str] | None:
        """The repository files the stored run of ``rel`` imported (real paths), or None
        when nothing is stored for it."""
        entry = self._entries.get(rel)
        deps = entry.get("deps") if entry is not None else None
        return sorted(deps) if isinstance(deps, dict) else None

    def carry(self, rels: Iterable[str]) -> None:
        """Keep the entries of files this run does not load (their objects are reused)."""
        for rel in rels:
            if rel in self._entries:
                self._used[rel] = self._entries[rel]

    def save(self) -> None:
        """Write the entries of this run, if they differ from the file."""
        if self._used != self._entries:
            write_json(self.path, {"stamp": self.stamp, "entries": self._used})

    def digest(self, path: str) -> str | None:
        """SHA-256 of a file's bytes (once per run), None when it cannot be read."""
        if path not in self._hashes:
            self._hashes[path] = self._fresh_digest(path)
        return self._hashes[path]

    @staticmethod
    def _fresh_digest(path: str) -> str | None:
        return file_digest(path)


def _inside(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)
