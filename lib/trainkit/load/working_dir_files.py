"""Reading a RayJob's repository ``working_dir`` (``RuntimeEnv(working_dir="scripts/x")``).

The directory comes from a pull request, so everything about it is untrusted: it must
resolve inside ``jobs/``, no link in it may leave ``jobs/`` or name a directory (a loop, or
a second way to a tree), no name may hold a control character or begin with ``..`` (the
ConfigMap volume's own entries, ``..data``), and what is shipped is bounded: at most
``MAX_FILES`` files and ``MAX_BYTES`` bytes with their names, since all of it goes into one
ConfigMap (Kubernetes keeps a ConfigMap's data under 1 MiB: ``MaxSecretSize`` in
``k8s.io/kubernetes/pkg/apis/core/validation`` ``ValidateConfigMap``). Files are read in name
order and only UTF-8 text is shipped, so the generated ConfigMap is the same bytes wherever
it is built. ``__pycache__`` and ``*.pyc`` (which Python writes beside the code on a
developer's machine, never in git) and what ``excludes`` names are left out.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..kube.text import YAML_UNPRINTABLE, text_value_problem
from ..model.working_dir import excluded
from .discover import inside, shown

__all__ = ["MAX_BYTES", "MAX_FILES", "WorkingDirError", "read_working_dir"]

MAX_FILES = 256
"""Files one working directory may ship (each is a key of the ConfigMap and an item of the
submitter's volume)."""
MAX_BYTES = 1_000_000
"""Bytes of the files and their paths together: the ConfigMap stays under 1 MiB."""
_MAX_DEPTH = 16
_NEVER = ("__pycache__",)
# Directories whose .py files the loader never runs as definitions (load/discover.py).
_CODE_DIRS = ("scripts",)


class WorkingDirError(Exception):
    """What is wrong with the directory; the message names the path."""


def read_working_dir(
    directory: Path, given: str, jobs_dir: Path, root: Path, excludes: list[str]
) -> dict[str, str]:
    """The files to ship from ``directory`` (``given`` as the definition wrote it): path
    relative to it (posix) → text, in path order."""
    real = directory.resolve()
    if not inside(real, jobs_dir):
        raise WorkingDirError(
            f"working_dir {given!r} resolves to {real.as_posix()}, outside "
            f"{shown(jobs_dir, root)}/; it must be a directory inside it (symbolic links are "
            "followed)"
        )
    if not real.is_dir():
        raise WorkingDirError(
            f"working_dir {given!r} is not a directory next to the definition (looked for "
            f"{shown(real, root)}); paths are relative to the definition file"
        )
    runs_definitions = not any(
        p in _CODE_DIRS or p.startswith(("_", ".")) for p in real.relative_to(jobs_dir).parts
    )
    files: dict[str, str] = {}
    budget = [MAX_BYTES]

    def walk(at: Path, rel: tuple[str, ...]) -> None:
        if len(rel) > _MAX_DEPTH:
            raise WorkingDirError(
                f"working_dir {given!r} nests deeper than {_MAX_DEPTH} directories at "
                f"{'/'.join(rel)}; flatten it or exclude the subtree (excludes=[...])"
            )
        try:
            entries = sorted(os.scandir(at), key=lambda e: e.name)
        except OSError as e:
            raise WorkingDirError(
                f"working_dir {given!r}: cannot list {shown(at, root)}: {e.strerror}"
            ) from None
        for entry in entries:
            path = "/".join((*rel, entry.name))
            _check_name(given, entry.name, path)
            is_link = entry.is_symlink()
            is_dir = entry.is_dir(follow_symlinks=True)
            if entry.name in _NEVER if is_dir else entry.name.endswith(".pyc"):
                continue
            if excluded(path, is_dir, excludes):
                continue
            if is_link:
                target = Path(entry.path).resolve()
                if not inside(target, jobs_dir):
                    raise WorkingDirError(
                        f"working_dir {given!r}: {path} is a symbolic link to "
                        f"{target.as_posix()}, outside {shown(jobs_dir, root)}/; replace the "
                        "link with the file, or exclude it"
                    )
                if is_dir:
                    raise WorkingDirError(
                        f"working_dir {given!r}: {path} is a symbolic link to a directory; "
                        "trainkit ships files, not links to trees: replace it with the "
                        "directory, or exclude it"
                    )
            if is_dir:
                walk(Path(entry.path), (*rel, entry.name))
                continue
            if not entry.is_file(follow_symlinks=True):
                raise WorkingDirError(
                    f"working_dir {given!r}: {path} is not a regular file; remove or exclude it"
                )
            if runs_definitions and entry.name.endswith(".py") and not entry.name.startswith("_"):
                raise WorkingDirError(
                    f"working_dir {given!r} holds {path}, which the loader would run as a "
                    "definition: keep a working directory's code under a scripts/ (or _name/) "
                    "directory, e.g. working_dir='scripts/pipeline'"
                )
            if len(files) == MAX_FILES:
                raise WorkingDirError(
                    f"working_dir {given!r} has more than {MAX_FILES} files; ship fewer "
                    "(excludes=[...]) or bake the code into the image"
                )
            files[path] = _read(given, Path(entry.path), path, budget)

    walk(real, ())
    if not files:
        raise WorkingDirError(
            f"working_dir {given!r} holds no file to ship (after excludes, __pycache__ and "
            "*.pyc); point it at the job's code"
        )
    return files


def _check_name(given: str, name: str, path: str) -> None:
    if not name.isprintable() or "\\" in name:
        raise WorkingDirError(
            f"working_dir {given!r}: the name {path!r} holds a control character or a "
            "backslash; rename it with printable characters"
        )
    if name.startswith(".."):
        raise WorkingDirError(
            f"working_dir {given!r}: {path} begins with '..', as the ConfigMap volume's own "
            "entries do (..data); rename it"
        )


def _read(given: str, file: Path, path: str, budget: list[int]) -> str:
    try:
        size = file.stat().st_size
    except OSError as e:
        raise WorkingDirError(f"working_dir {given!r}: cannot read {path}: {e.strerror}") from None
    cost = size + len(path.encode())
    if cost > budget[0]:
        raise WorkingDirError(
            f"working_dir {given!r} is over {MAX_BYTES} bytes with {path} (the files and "
            "their paths go into one ConfigMap, which holds at most 1 MiB); exclude what the "
            "job does not need (excludes=[...]) or bake large files into the image"
        )
    try:
        data = file.read_bytes()
    except OSError as e:
        raise WorkingDirError(f"working_dir {given!r}: cannot read {path}: {e.strerror}") from None
    budget[0] -= len(data) + len(path.encode())
    if budget[0] < 0:  # it grew while read
        raise WorkingDirError(f"working_dir {given!r} is over {MAX_BYTES} bytes at {path}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise WorkingDirError(
            f"working_dir {given!r}: {path} is not UTF-8 text; exclude it (excludes=[...]) "
            "and ship binaries in the image"
        ) from None
    bad = sorted(set(YAML_UNPRINTABLE.findall(text)))
    if bad:
        raise WorkingDirError(
            f"working_dir {given!r}: {path} contains control characters "
            f"({', '.join(map(repr, bad))}) that YAML cannot carry; remove them"
        )
    why = text_value_problem(text)
    if why is not None:
        raise WorkingDirError(f"working_dir {given!r}: {path} {why}")
    return text
