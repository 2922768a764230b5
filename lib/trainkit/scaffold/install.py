"""How the workflows ``trainkit init`` writes install trainkit: one pin, the same everywhere.

Three forms, chosen by ``trainkit init`` options:

- a release from the package index (the default): ``trainkit-gitops==<version>``;
- the same release from an internal index (``--index-url URL``), for organizations whose
  runners reach only their own mirror;
- a git reference (``--git URL@REF``), a tag or a commit, until a release is on an index.

A workflow installs it before any job file runs, so no code from a pull request chooses
the trainkit that judges it. The values are the user's own, but they end up in a shell
line of a workflow: only URL characters are accepted, never quotes, spaces or ``${{``.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from trainkit import __version__
from trainkit.errors import Problem, SetupError

__all__ = ["DISTRIBUTION", "TrainkitInstall", "trainkit_install"]

DISTRIBUTION = "trainkit-gitops"

# RFC 3986 unreserved and the delimiters a URL with a port, user or path needs; no quotes,
# spaces, `$`, `{`, `}` or `;` (a workflow's expression syntax and the shell's).
_URL = re.compile(r"(https|ssh|git\+ssh|file)://[A-Za-z0-9._~:/@%+=-]+")
_REF = re.compile(r"[A-Za-z0-9._/+-]+")


@dataclass(frozen=True)
class TrainkitInstall:
    """The requirement every scaffolded workflow installs, and from where."""

    requirement: str
    """``trainkit-gitops==0.2.0`` or ``trainkit-gitops @ git+https://…@<ref>``."""
    index_url: str | None = None

    @property
    def pip_command(self) -> str:
        """The shell line, quoted: ``python -m pip install [--index-url URL] 'REQ'``."""
        index = f"--index-url {shlex.quote(self.index_url)} " if self.index_url else ""
        return f"python -m pip install {index}{shlex.quote(self.requirement)}"


def trainkit_install(
    version: str = __version__, *, git: str | None = None, index_url: str | None = None
) -> TrainkitInstall:
    """The pin for ``version``, or for a git reference; SetupError naming a bad value."""
    if git is not None and index_url is not None:
        raise SetupError(
            [
                Problem(
                    file="trainkit init",
                    message="--git and --index-url are two ways to install trainkit: give one",
                )
            ]
        )
    if index_url is not None:
        if not _URL.fullmatch(index_url):
            raise SetupError(
                [
                    Problem(
                        file="--index-url",
                        message=f"{index_url!r} is not a URL trainkit writes into a workflow: "
                        "give https://host/path/simple (letters, digits and ._~:/@%+=- only)",
                    )
                ]
            )
        return TrainkitInstall(f"{DISTRIBUTION}=={version}", index_url)
    if git is not None:
        url, at, ref = git.rpartition("@")
        if not at or not _URL.fullmatch(url) or "://" in ref or not _REF.fullmatch(ref):
            raise SetupError(
                [
                    Problem(
                        file="--git",
                        message=f"{git!r} is not URL@REF: give the repository and a tag or "
                        "commit, e.g. https://github.com/acme/trainkit@v0.2.0 (a branch would "
                        "move under every workflow)",
                    )
                ]
            )
        return TrainkitInstall(f"{DISTRIBUTION} @ git+{url}@{ref}")
    return TrainkitInstall(f"{DISTRIBUTION}=={version}")
