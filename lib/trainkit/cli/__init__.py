"""The ``trainkit`` command: thin wrappers that call library functions and print results.

One module per command (``cmd_<command>.py``: its parser and what it runs); the parser is
built from them here. Everything heavy (the models, cdk8s, validation) is imported by the
command that needs it, so that ``trainkit synth`` and ``check`` with unchanged inputs
(``runcache``) answer without loading any of it.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from trainkit import __version__

from ..errors import TrainkitError
from ..repo_root import find_root, rebase
from . import (
    cmd_check,
    cmd_completion,
    cmd_crds,
    cmd_explain,
    cmd_init,
    cmd_plan,
    cmd_rehearse,
    cmd_schema,
    cmd_synth,
    cmd_validate,
)
from .printing import report

__all__ = ["main"]

COMMANDS = (
    cmd_init,
    cmd_synth,
    cmd_check,
    cmd_validate,
    cmd_crds,
    cmd_rehearse,
    cmd_explain,
    cmd_plan,
    cmd_schema,
    cmd_completion,
)
"""In the order ``trainkit --help`` lists them."""


def parser() -> argparse.ArgumentParser:
    """The ``trainkit`` parser: one subcommand per module of ``COMMANDS``."""
    p = argparse.ArgumentParser(
        prog="trainkit",
        description="Turn Python training-job definitions under jobs/ into the Kubernetes "
        "manifests Argo CD syncs (generated/). Commands run from any directory of the "
        "repository (the nearest one upwards holding jobs/, else the top of the git work tree).",
    )
    p.add_argument("-V", "--version", action="version", version=f"trainkit {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``trainkit ARGV``; 0 success, 1 a problem to fix, 2 a usage error (argparse exits)."""
    args = parser().parse_args(argv)
    args.started_in = Path.cwd()
    root = find_root(args.started_in) if getattr(args, "finds_root", True) else args.started_in
    if root != args.started_in:
        _rebase_paths(args, root)
        os.chdir(root)
    if hasattr(args, "out"):
        args.out = str(args.out).rstrip("/") or "."
    if hasattr(args, "paths") and not args.paths:
        args.paths = ["generated"]  # the repository's, wherever the command started
    try:
        code: int = args.func(args)
    except KeyboardInterrupt as e:
        # Commands that start processes (definitions, rehearse) stop them before re-raising.
        what = f" ({e})" if str(e) else ""
        print(f"trainkit {args.command}: interrupted{what}", file=sys.stderr)
        return 130
    except TrainkitError as e:
        report(args, e.problems)
        return 1
    finally:
        if root != args.started_in:
            os.chdir(args.started_in)
    return code


def _rebase_paths(args: argparse.Namespace, root: Path) -> None:
    """Paths given in a subdirectory, said from the repository root instead."""
    for name in getattr(args, "given_paths", ()):
        setattr(args, name, rebase(getattr(args, name), args.started_in, root))
    if isinstance(getattr(args, "file", None), str):
        args.file = rebase(args.file, args.started_in, root)
    if getattr(args, "paths", None):
        args.paths = [rebase(p, args.started_in, root) for p in args.paths]
