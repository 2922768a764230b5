"""Which files under ``jobs/`` are definitions, and which team each belongs to.

The walk follows symbolic links, but only where they stay inside ``jobs/``:
a link that leads out of it (``/etc``, ``.git``, another checkout) is refused
with the path it resolves to, never skipped, because a team directory that
silently vanished from the output would make Argo CD prune its running jobs.
A file reachable by two paths is refused too: it would belong to two teams.

A name holding a line break (``\\r``, ``\\n``, NEL, LS, PS) or any other control, format
or separator character (Unicode categories Cc, Cf, Zl, Zp) is refused, shown escaped:
paths reach comments, messages and terminals, where such a character ends a line, hides
text or reorders it (a path once closed the comment header of its generated file and
added objects after it).
"""

from __future__ import annotations

import os
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from ..errors import Problem, printable

__all__ = ["PLATFORM_DIR", "DefinitionFile", "find_definitions", "inside", "shown"]

PLATFORM_DIR = "platform"
# Line breaks, controls, format characters (bidi overrides), separators; and the lone
# surrogates that an undecodable name becomes.
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
# Training code and data live next to definitions but are never imported.
_SKIP_DIRS = frozenset({"scripts", "__pycache__"})


@dataclass(frozen=True)
class DefinitionFile:
    """One definition file as the walk reached it."""

    path: Path
    """Absolute path through ``jobs/`` as walked (symlinks not resolved)."""
    rel: str
    """Path relative to the repository root, posix: how messages and manifests name it."""
    team: str
    """The first directory under ``jobs/`` (``platform`` for platform objects)."""


def inside(path: Path, directory: Path) -> bool:
    """Whether the resolved ``path`` lies in the resolved ``directory``."""
    return path == directory or directory in path.parents


def shown(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` when below it, else absolute; posix."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def find_definitions(jobs_dir: Path, root: Path) -> tuple[list[DefinitionFile], list[Problem]]:
    """Every definition file below ``jobs_dir`` in a stable order, and the paths refused.

    ``jobs_dir`` and ``root`` are absolute and resolved. Order is by path, so
    output never depends on the file system's order.
    """
    found: list[DefinitionFile] = []
    problems: list[Problem] = []
    seen: dict[Path, str] = {}  # real path → the path it was first reached by

    def refuse(path: Path, message: str) -> None:
        problems.append(Problem(file=printable(shown(path, root)), message=message))

    def walk(
        directory: Path, real_dir: Path, parts: tuple[str, ...], above: frozenset[Path]
    ) -> None:
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as e:
            refuse(directory, f"cannot list the directory: {e.strerror}")
            return
        for entry in entries:
            path = directory / entry.name
            if not entry.name.isprintable() and _unsafe(entry.name):
                refuse(
                    path,
                    "the name holds a line break or control character "
                    f"({', '.join(sorted({_describe(c) for c in entry.name if _bad(c)}))}); "
                    "paths reach YAML comments, messages and terminals, where it would end "
                    "the line or hide text: rename it with printable characters only",
                )
                continue
            is_dir = entry.is_dir(follow_symlinks=True)
            is_py = not is_dir and entry.name.endswith(".py")
            if is_dir and (entry.name in _SKIP_DIRS or entry.name.startswith(("_", "."))):
                continue
            if not is_dir and (not is_py or entry.name.startswith("_")):
                continue
            # Resolving every path costs a few system calls each; only links need it.
            real = path.resolve() if entry.is_symlink() else real_dir / entry.name
            if entry.is_symlink() and not inside(real, jobs_dir):
                refuse(
                    path,
                    f"is a symbolic link to {real.as_posix()}, outside {shown(jobs_dir, root)}/; "
                    "definitions and their scripts must live inside it: replace the link with "
                    "the files, or remove it",
                )
                continue
            if is_dir:
                if real in above or inside(real_dir, real):
                    refuse(
                        path,
                        f"is a symbolic link to {shown(real, root)}, one of its own "
                        "parent directories; remove the loop",
                    )
                    continue
                walk(path, real, (*parts, entry.name), above | {real})
                continue
            rel = shown(path, root)
            first = seen.setdefault(real, rel)
            if first != rel:
                refuse(
                    path,
                    f"is the same file as {first} (through a symbolic link); a "
                    "definition belongs to one team: remove one of the paths",
                )
                continue
            if not parts:
                refuse(
                    path,
                    f"definitions belong in {shown(jobs_dir, root)}/<team>/ or "
                    f"{shown(jobs_dir, root)}/{PLATFORM_DIR}/; move this file into a team "
                    "directory",
                )
                continue
            found.append(DefinitionFile(path=path, rel=rel, team=parts[0]))

    walk(jobs_dir, jobs_dir, (), frozenset({jobs_dir}))
    return found, problems


def _bad(ch: str) -> bool:
    return unicodedata.category(ch) in _REFUSED_CATEGORIES


def _unsafe(name: str) -> bool:
    return any(_bad(ch) for ch in name)


def _describe(ch: str) -> str:
    name = unicodedata.name(ch, "") or {"\n": "LINE FEED", "\r": "CARRIAGE RETURN"}.get(ch, "")
    code = printable(ch)
    return f"{code} {name}".rstrip() if name else code
