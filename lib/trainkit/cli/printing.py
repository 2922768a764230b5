"""What the commands print: results, notes and warnings, and problems as text, GitHub
annotations or JSON."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import Problem, StaleOutputError

if TYPE_CHECKING:
    from ..write import Changes

__all__ = ["notices", "raise_if_stale", "report", "report_format", "say"]


def report_format(args: argparse.Namespace) -> str:
    """How problems are reported: text (people), github (workflow annotations) or json."""
    return str(getattr(args, "format", "text")) if getattr(args, "reports", False) else "text"


def say(args: argparse.Namespace, text: str) -> None:
    """A result line: on stdout, unless stdout carries JSON."""
    print(text, file=sys.stderr if report_format(args) == "json" else sys.stdout)
    if report_format(args) == "json":
        print("[]")  # no problems


def notices(
    notices: Sequence[str],
    warnings: Sequence[Problem | str] = (),
    args: argparse.Namespace | None = None,
) -> None:
    for notice in notices:
        print(f"note: {notice}", file=sys.stderr)
    located = [w for w in warnings if isinstance(w, Problem)]
    if located and args is not None and report_format(args) == "github":
        from ..validate import format_github

        print(format_github(located, level="warning", title=f"trainkit {args.command}"), end="")
        warnings = [w for w in warnings if not isinstance(w, Problem)]
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)


def report(args: argparse.Namespace, problems: Sequence[Problem]) -> None:
    fmt = report_format(args)
    if fmt == "github":
        from ..validate import format_github

        print(format_github(problems, title=f"trainkit {args.command}"), end="")
    elif fmt == "json":
        from ..validate import format_json

        print(format_json(problems), end="")
    else:
        for problem in problems:
            print(f"error: {problem}", file=sys.stderr)
    print(f"trainkit {args.command}: {len(problems)} error(s)", file=sys.stderr)


def raise_if_stale(changes: Changes, out: str, command: str | None = None) -> None:
    """StaleOutputError naming each file and the command that regenerates (default: synth's)."""
    from ..repo_root import synth_command

    if not changes.any:
        return
    command = command or synth_command(Path.cwd())
    problems = [
        Problem(file=f"{out}/{path}", message=f"{what}; run `{command}` and commit the result")
        for what, paths in (
            ("would be added", changes.added),
            ("is out of date", changes.changed),
            ("would be removed", changes.removed),
        )
        for path in paths
    ]
    raise StaleOutputError(problems)
