"""How the planner words a reference error: the definition it is in, what exists."""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import Problem
from ..load import Definition

__all__ = ["known", "problem"]


def problem(d: Definition, message: str, field: str = "") -> Problem:
    """A problem of ``d``, on the line of the keyword that holds ``field``."""
    return Problem(
        file=d.file, line=d.line_of(field), obj=d.obj.describe(), field=field, message=message
    )


def known(names: Iterable[str]) -> str:
    """``'a', 'b'`` — or ``none`` — for "defined X: …" hints."""
    names = sorted(names)
    return ", ".join(repr(n) for n in names) if names else "none"
