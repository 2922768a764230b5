"""A cache of parsed CRD files, keyed by content, holding data only (JSON).

Parsing the upstream CRDs (13 MB of YAML) costs seconds; reading the same
schemas back as JSON, without their descriptions, costs milliseconds. Entries
are named by the SHA-256 of the file's bytes, so an edited file can never be
served a stale entry; ``stat.json`` remembers (size, mtime_ns, inode) → hash
only to avoid re-hashing unchanged files. Every file is written to a
temporary name and renamed into place (atomic on POSIX), so a reader sees a
whole entry or none; a truncated or corrupt one (a crash, a full disk, a
hand edit) reads as missing, and the caller parses the CRD file again.

Nothing here is trusted more than the CRD file itself: ``crds.py`` runs the
documents of an entry through the same checks as freshly parsed ones.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from trainkit.cache_dir import write_json

__all__ = ["FORMAT", "CrdCache", "Kind"]

FORMAT = 1
"""Bump when the entry layout or what is kept of a CRD changes."""

Kind = tuple[str, str, str]


class CrdCache:
    """Entries under ``<root>/crds-v<FORMAT>/``: ``<sha>.json`` (documents), ``<sha>.kinds.json``;
    ``absent.json``: the (group, kind) pairs a file's bytes cannot define (``may_define``)."""

    def __init__(self, root: Path) -> None:
        self.directory = root / f"crds-v{FORMAT}"
        self._stats: dict[str, list[Any]] | None = None
        self._stats_changed = False
        self._absent: dict[str, list[list[str]]] | None = None
        self._absent_changed = False

    def digest(self, path: Path) -> str:
        """SHA-256 of ``path``'s bytes; re-hashed only when its size, mtime or inode changed."""
        st = path.stat()
        stamp = [st.st_size, st.st_mtime_ns, st.st_ino]
        stats = self._load_stats()
        key = str(path.resolve())
        known = stats.get(key)
        if isinstance(known, list) and len(known) == 4 and known[:3] == stamp:
            sha = known[3]
            if isinstance(sha, str) and len(sha) == 64:
                return sha
        sha = hashlib.sha256(path.read_bytes()).hexdigest()
        stats[key] = [*stamp, sha]
        self._stats_changed = True
        return sha

    def kinds(self, sha: str) -> list[Kind] | None:
        """The (group, version, kind) served by the file with this content, if cached."""
        entry = self._read(f"{sha}.kinds.json", sha)
        kinds = entry.get("kinds") if entry is not None else None
        if not isinstance(kinds, list):
            return None
        out: list[Kind] = []
        for item in kinds:
            if not (
                isinstance(item, list) and len(item) == 3 and all(isinstance(x, str) for x in item)
            ):
                return None
            out.append((item[0], item[1], item[2]))
        return out

    def documents(self, sha: str) -> list[dict[str, Any]] | None:
        """The pruned CRD documents of the file with this content, if cached."""
        entry = self._read(f"{sha}.json", sha)
        docs = entry.get("documents") if entry is not None else None
        if not isinstance(docs, list) or not all(isinstance(d, dict) for d in docs):
            return None
        return docs

    def store(self, sha: str, documents: list[dict[str, Any]], kinds: list[Kind]) -> None:
        """Write both entries of one file (documents first: an index never points at nothing)."""
        self._write(f"{sha}.json", {"format": FORMAT, "sha256": sha, "documents": documents})
        self._write(f"{sha}.kinds.json", {"format": FORMAT, "sha256": sha, "kinds": kinds})

    def absent(self, sha: str, group: str, kind: str) -> bool:
        """Whether the file with this content is known not to define ``kind`` of ``group``
        (its bytes do not name them: ``crd_files.may_define``, a function of the bytes)."""
        known = self._load_absent().get(sha)
        return isinstance(known, list) and [group, kind] in known

    def add_absent(self, sha: str, group: str, kind: str) -> None:
        """Remember that the file with this content cannot define ``kind`` of ``group``."""
        files = self._load_absent()
        known = files.get(sha)
        files[sha] = [*(known if isinstance(known, list) else []), [group, kind]]
        self._absent_changed = True

    def save(self) -> None:
        """Persist the stat → hash map and the absent pairs if they changed."""
        if self._stats_changed and self._stats is not None:
            self._write("stat.json", {"format": FORMAT, "files": self._stats})
            self._stats_changed = False
        if self._absent_changed and self._absent is not None:
            self._write("absent.json", {"format": FORMAT, "files": self._absent})
            self._absent_changed = False

    def _load_absent(self) -> dict[str, list[list[str]]]:
        if self._absent is None:
            entry = self._read("absent.json", None)
            files = entry.get("files") if entry is not None else None
            self._absent = files if isinstance(files, dict) else {}
        return self._absent

    def _load_stats(self) -> dict[str, list[Any]]:
        if self._stats is None:
            entry = self._read("stat.json", None)
            files = entry.get("files") if entry is not None else None
            self._stats = files if isinstance(files, dict) else {}
        return self._stats

    def _read(self, name: str, sha: str | None) -> dict[str, Any] | None:
        try:
            data = json.loads((self.directory / name).read_bytes())
        except (OSError, ValueError, RecursionError):
            return None  # missing, unreadable, truncated or not JSON: a miss
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            return None
        if sha is not None and data.get("sha256") != sha:
            return None
        return data

    def _write(self, name: str, data: dict[str, Any]) -> None:
        # Atomic, and a read-only or full cache directory costs speed, never a result.
        write_json(self.directory / name, data)
