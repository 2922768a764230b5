"""``trainkit init``: a new repository that synthesizes and checks cleanly as written.

The files are package data below ``template/``: ``.tmpl`` is dropped from each
name, a ``dot-`` prefix of any path part becomes ``.`` (package data and linters
then see no dotfiles and no Python modules), ``@VERSION@`` becomes the running
trainkit's version and ``@PIP_INSTALL@`` the one pinned install command
(``install.py``), so every workflow installs the same trainkit: by default the
release that wrote it. A directory that is no git repository yet becomes one
(branch ``main``, which the workflows and Argo CD's ``revision`` name).
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from trainkit import __version__
from trainkit.errors import Problem, SetupError
from trainkit.scaffold.install import TrainkitInstall, trainkit_install

__all__ = ["Scaffolded", "TrainkitInstall", "scaffold", "scaffold_files", "trainkit_install"]

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
    notes: list[str] = field(default_factory=list)
    """What else was done (``git init``), or could not be."""


def scaffold_files(
    version: str = __version__, install: TrainkitInstall | None = None
) -> dict[str, str]:
    """Every file of a new repository, by POSIX path relative to its root."""
    install = install or trainkit_install(version)
    root = resources.files(__package__).joinpath("template")
    files: dict[str, str] = {}
    for rel, node in _walk(root, ()):
        path = "/".join("." + p.removeprefix("dot-") if p.startswith("dot-") else p for p in rel)
        text = node.read_text(encoding="utf-8")
        text = text.replace("@PIP_INSTALL@", install.pip_command).replace("@VERSION@", version)
        files[path.removesuffix(".tmpl")] = text
    return dict(sorted(files.items()))


def _walk(node: Traversable, rel: tuple[str, ...]) -> list[tuple[tuple[str, ...], Traversable]]:
    found: list[tuple[tuple[str, ...], Traversable]] = []
    for child in node.iterdir():
        if child.is_dir():
            found.extend(_walk(child, (*rel, child.name)))
        elif child.name.endswith(".tmpl"):
            found.append(((*rel, child.name), child))
    return found


def scaffold(dest: Path, install: TrainkitInstall | None = None) -> Scaffolded:
    """Write a new repository into ``dest`` (created if missing); nothing is overwritten.

    Raises ``SetupError`` listing every file that is in the way, before writing any.
    """
    files = scaffold_files(install=install)
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
    result.notes.extend(_git_init(dest))
    return result


def _git_init(dest: Path) -> list[str]:
    """``git init`` on branch main unless ``dest`` is inside a work tree already."""
    git = shutil.which("git")
    if git is None:
        return ["git is not installed: run `git init -b main` here before the first commit"]
    inside = subprocess.run(
        [git, "-C", str(dest), "rev-parse", "--is-inside-work-tree"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if inside.returncode == 0:
        return []
    done = subprocess.run(
        [git, "-C", str(dest), "init", "-q", "--initial-branch=main"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        return [f"git init failed ({done.stderr.strip()}): run `git init -b main` here"]
    return ["initialized a git repository (branch main): commit jobs/ and generated/ there"]


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
