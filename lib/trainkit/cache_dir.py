"""Where trainkit keeps caches, and the rules every cache follows (issue 10).

A cache is never a way around the gate. Each one:

- lives outside the work tree: ``$TRAINKIT_CACHE_DIR``, else ``$XDG_CACHE_HOME/trainkit``,
  else ``~/.cache/trainkit`` (the XDG default); what belongs to one repository is in
  ``repos/<name>-<hash of its absolute path>/`` (``repo_cache_dir``). A cache inside the
  repository would show up in ``git status`` and could be committed in a pull request;
- holds data only: JSON, never pickle or code;
- is keyed by an explicit list of inputs, which its module documents;
- is neither read nor written when ``$CI`` is set (CI runs cold: a verdict must never
  depend on what a cache happened to hold), with ``--no-cache``, or when git tracks a file
  in the cache directory (``$TRAINKIT_CACHE_DIR`` pointed inside a repository, whose
  pull requests could then commit entries);
- returns nothing its caller does not check as it checks fresh results.

A cache that cannot be read (missing, truncated, corrupt, another format) is a miss, and
one that cannot be written costs speed, never a result.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

__all__ = [
    "cache_dir",
    "cache_enabled",
    "fetched_crds_dir",
    "file_digest",
    "read_json",
    "repo_cache_dir",
    "tracked_by_git",
    "write_json",
]


def cache_dir() -> Path:
    """The cache root (not created here)."""
    explicit = os.environ.get("TRAINKIT_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and Path(xdg).is_absolute():  # the XDG spec: relative values are invalid, ignore them
        return Path(xdg) / "trainkit"
    return Path.home() / ".cache" / "trainkit"


def fetched_crds_dir() -> Path:
    """Where ``trainkit crds --fetch`` puts the pinned upstream CRDs, and where ``check``
    looks for them without ``--crds``: outside the work tree, where no pull request can add
    a file. The runner's temporary directory in GitHub Actions (``$RUNNER_TEMP``), else
    ``crds/`` of the cache root. Not a cache: used under CI too."""
    runner = os.environ.get("RUNNER_TEMP")
    if runner and Path(runner).is_absolute():
        return Path(runner) / "trainkit-crds"
    return cache_dir() / "crds"


def cache_enabled(*, no_cache: bool = False) -> bool:
    """Whether caches may be read and written in this run.

    False when the caller opts out (``--no-cache``), when ``$CI`` is set, or when git
    tracks a file inside the cache directory.
    """
    if no_cache or os.environ.get("CI"):
        return False
    return not tracked_by_git(cache_dir())


def repo_cache_dir(root: Path) -> Path:
    """The cache directory of the repository at ``root``, keyed by its absolute path.

    Two checkouts never share entries (their files may differ while their names do
    not), and a moved checkout starts cold.
    """
    real = os.path.realpath(root)
    digest = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:20]
    name = re.sub(r"[^A-Za-z0-9._-]", "_", os.path.basename(real))[:40] or "root"
    return cache_dir() / "repos" / f"{name}-{digest}"


def tracked_by_git(directory: Path) -> bool:
    """Whether git tracks any file below ``directory`` (or cannot tell).

    Only a directory inside a work tree can hold tracked files, so git runs only when
    some parent holds a ``.git``: the default cache directory costs a few ``stat`` calls.
    Unable to ask git there (no git, an unsafe repository), the answer is yes.
    """
    path = Path(os.path.abspath(directory))
    existing = path
    while not existing.is_dir():
        if existing.parent == existing:
            return False
        existing = existing.parent
    if not any((p / ".git").exists() for p in (existing, *existing.parents)):
        return False
    git = shutil.which("git")
    if git is None:
        return True
    try:
        result = subprocess.run(
            [git, "-C", str(existing), "ls-files", "-z", "--", str(path)],
            capture_output=True,
            check=False,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return True
    if result.returncode != 0:
        # Not a work tree after all (a bare repository's .git, a stray file), or git refused.
        return b"not a git repository" not in result.stderr
    return bool(result.stdout)


def file_digest(path: str) -> str | None:
    """SHA-256 of a file's bytes, None when it cannot be read."""
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def read_json(path: Path) -> dict[str, Any] | None:
    """The JSON object in ``path``, or None when it is missing, unreadable or not an object."""
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` to ``path`` atomically (a reader sees the old file or the new one)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            # One string (json.dumps) takes the C encoder; json.dump to a file never does.
            text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except (OSError, ValueError):
        pass  # a read-only or full cache directory costs speed, never a result
