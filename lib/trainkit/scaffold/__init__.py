"""``trainkit init``: a new repository that synthesizes and checks cleanly as written.

The files are package data below ``template/``: ``.tmpl`` is dropped from each
name, a ``dot-`` prefix of any path part becomes ``.`` (package data and linters
then see no dotfiles and no Python modules), and ``@VERSION@`` becomes the
running trainkit's version, so the CI workflow pins the release that wrote it.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from trainkit import __version__
from trainkit.errors import Problem, SetupError

__all__ = ["Scaffolded", "scaffold", "scaffold_files"]

# Files a repository often has already: kept as they are (README) or completed (.gitignore).
_KEEP = frozenset({"README.md"})
_MERGE = frozenset({".gitignore"})


@dataclass(frozen=True)
class Scaffolded:
    created: list[str]
    kept: list[str]
    """Files that existed and were left as they were."""
    extended: list[str]
    """Files that existed and got the lines trainkit needs appended."""


def scaffold_files(version: str = __version__) -> dict[str, str]:
    """Every file of a new repository, by POSIX path relative to its root."""
    root = resources.files(__package__).joinpath("template")
    files: dict[str, str] = {}
    for rel, node in _walk(root, ()):
        path = "/".join("." + p.removeprefix("dot-") if p.startswith("dot-") else p for p in rel)
        files[path.removesuffix(".tmpl")] = node.read_text(encoding="utf-8").replace(
            "@VERSION@", version
        )
    return dict(sorted(files.items()))


def _walk(node: Traversable, rel: tuple[str, ...]) -> list[tuple[tuple[str, ...], Traversable]]:
    found: list[tuple[tuple[str, ...], Traversable]] = []
    for child in node.iterdir():
        if child.is_dir():
            found.extend(_walk(child, (*rel, child.name)))
        elif child.name.endswith(".tmpl"):
            found.append(((*rel, child.name), child))
    return found


def scaffold(dest: Path) -> Scaffolded:
    """Write a new repository into ``dest`` (created if missing); nothing is overwritten.

    Raises ``SetupError`` listing every file that is in the way, before writing any.
    """
    files = scaffold_files()
    if dest.exists() and not dest.is_dir():
        raise SetupError([Problem(file=str(dest), message="exists and is not a directory")])
    if (dest / "jobs" / "platform").exists():
        raise SetupError(
            [
                Problem(
                    file=str(dest / "jobs" / "platform"),
                    message="exists already: this repository has a platform; "
                    "trainkit init only starts new ones",
                )
            ]
        )
    in_the_way = [
        Problem(
            file=str(dest / rel),
            message="exists already; move it away or run trainkit init in another directory",
        )
        for rel in files
        if rel not in _KEEP | _MERGE and (dest / rel).exists()
    ]
    if in_the_way:
        raise SetupError(in_the_way)
    result = Scaffolded([], [], [])
    for rel, text in files.items():
        path = dest / rel
        if path.exists() and rel in _KEEP:
            result.kept.append(rel)
            continue
        if path.exists() and rel in _MERGE:
            if _append_missing_lines(path, text):
                result.extended.append(rel)
            else:
                result.kept.append(rel)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        result.created.append(rel)
    return result


def _append_missing_lines(path: Path, text: str) -> bool:
    """Append the lines of ``text`` that ``path`` lacks (comments with them); True if any."""
    old = path.read_text(encoding="utf-8")
    have = set(old.splitlines())
    missing = [
        line for line in text.splitlines() if line and not line.startswith("#") and line not in have
    ]
    if not missing:
        return False
    with path.open("a", encoding="utf-8") as fh:
        if old and not old.endswith("\n"):
            fh.write("\n")
        fh.write("# trainkit: fetched CRDs and the temporaries of `trainkit synth`\n")
        fh.write("".join(f"{line}\n" for line in missing))
    return True
