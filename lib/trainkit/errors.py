"""The one exception tree for user mistakes.

Every error a person can fix is a ``TrainkitError`` carrying one or more
``Problem`` lines; anything else that escapes is a bug in trainkit and is
allowed to show a traceback.

    TrainkitError
    ├── DefinitionError    a job or platform file is wrong (load, models, plan, policy)
    ├── StaleOutputError   generated/ differs from what the definitions produce
    ├── ManifestError      a generated manifest breaks a CRD schema, CEL rule or kustomize build
    ├── SetupError         a tool, file or directory that trainkit needs is missing
    └── RehearsalError     a local rehearsal run failed
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "UNSHOWABLE",
    "DefinitionError",
    "ManifestError",
    "Problem",
    "RehearsalError",
    "SetupError",
    "StaleOutputError",
    "TrainkitError",
    "escape_char",
    "printable",
]

UNSHOWABLE = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
"""Unicode categories never shown raw: controls (terminal escapes, CR, NEL), format
characters (bidirectional overrides), line and paragraph separators, and the lone
surrogates an undecodable file name becomes."""


def escape_char(ch: str) -> str:
    """``\\n``, ``\\x1b``, ``\\u2028``: the character as a Python string literal writes it."""
    code = ord(ch)
    named = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(ch)
    if named is not None:
        return named
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def printable(text: str, keep: str = "") -> str:
    """``text`` with every character of the ``UNSHOWABLE`` categories escaped (but those in
    ``keep``): what a definition controls never reaches a terminal or a log raw."""
    if text.isascii() and text.isprintable():
        return text
    return "".join(
        escape_char(ch) if ch not in keep and unicodedata.category(ch) in UNSHOWABLE else ch
        for ch in text
    )


@dataclass(frozen=True, order=True)
class Problem:
    """One thing wrong, said so that a person can find and fix it.

    ``file`` is the path as the user knows it (``jobs/vision/resnet50.py``),
    ``obj`` names the object (``PyTorchJob 'resnet50-ddp'``), ``field`` the
    dotted field or JSON path, ``message`` what is wrong, what is allowed and
    how to fix it.
    """

    file: str
    message: str
    obj: str = ""
    field: str = ""
    line: int | None = None

    def __str__(self) -> str:
        """The one-line form ``file:line: obj: field: message``, escaped for a terminal
        (``printable``; a message keeps its line breaks and tabs)."""
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        parts = [printable(where)]
        if self.obj:
            parts.append(printable(self.obj))
        if self.field:
            parts.append(printable(self.field))
        parts.append(printable(self.message, keep="\n\t"))
        return ": ".join(parts)


class TrainkitError(Exception):
    """Root of every error caused by input a person can change."""

    def __init__(self, problems: Iterable[Problem] | str) -> None:
        if isinstance(problems, str):
            problems = [Problem(file="trainkit", message=problems)]
        self.problems: list[Problem] = sorted(set(problems), key=_order)
        super().__init__("\n".join(str(p) for p in self.problems))


def _order(p: Problem) -> tuple[str, int, str, str, str]:
    return (p.file, p.line or 0, p.obj, p.field, p.message)


class DefinitionError(TrainkitError, ValueError):
    """A definition under ``jobs/`` is invalid, refers to something unknown, or breaks policy."""


class StaleOutputError(TrainkitError):
    """``generated/`` is not what the definitions produce; run ``make synth``."""


class ManifestError(TrainkitError, ValueError):
    """A manifest would be rejected (or silently changed) by the cluster."""


class SetupError(TrainkitError):
    """Something trainkit needs from the environment is missing (a tool, a directory)."""


class RehearsalError(TrainkitError):
    """A local rehearsal did not finish successfully."""
