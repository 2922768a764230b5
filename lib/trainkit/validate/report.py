"""Turning Problems into text for people and JSON for tools (CI annotations, editors)."""

from __future__ import annotations

import json
from collections.abc import Iterable

from trainkit.errors import Problem, printable

__all__ = ["format_github", "format_json", "format_text"]


def _key(p: Problem) -> tuple[str, int, str, str, str]:
    return (p.file, p.line or 0, p.obj, p.field, p.message)


def format_text(problems: Iterable[Problem]) -> str:
    """Grouped by file: the file on its own line, then ``  line N: obj: field: message``."""
    lines: list[str] = []
    current: str | None = None
    for p in sorted(problems, key=_key):
        if p.file != current:
            current = p.file
            lines.append(printable(p.file))
        parts = [f"line {p.line}"] if p.line is not None else []
        parts += [printable(x) for x in (p.obj, p.field) if x]
        parts.append(printable(p.message, keep="\n\t"))
        lines.append("  " + ": ".join(parts))
    return "\n".join(lines) + ("\n" if lines else "")


def format_json(problems: Iterable[Problem]) -> str:
    """A sorted JSON list of ``{file, line, obj, field, message}`` objects."""
    rows = [
        {"file": p.file, "line": p.line, "obj": p.obj, "field": p.field, "message": p.message}
        for p in sorted(problems, key=_key)
    ]
    return json.dumps(rows, indent=2, ensure_ascii=False) + "\n"


def format_github(problems: Iterable[Problem], *, level: str = "error", title: str = "") -> str:
    """GitHub Actions workflow commands: ``::error file=F,line=N,title=T::obj: field: message``.

    The runner turns each into an annotation on that line of the pull request's diff.
    Values are escaped as the runner expects (``%``, CR and LF everywhere; ``:`` and
    ``,`` too inside the properties).
    """
    lines = []
    for p in sorted(problems, key=_key):
        props = [f"file={_escape_property(p.file)}"]
        if p.line is not None:
            props.append(f"line={p.line}")
        if title:
            props.append(f"title={_escape_property(title)}")
        message = ": ".join(x for x in (p.obj, p.field, p.message) if x)
        lines.append(f"::{level} {','.join(props)}::{_escape_data(message)}")
    return "".join(f"{line}\n" for line in lines)


def _escape_data(text: str) -> str:
    # actions/toolkit packages/core/src/command.ts: escapeData and escapeProperty. Other
    # controls (and bidi overrides) are escaped first, so an annotation shows them.
    text = printable(text, keep="\r\n")
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")
