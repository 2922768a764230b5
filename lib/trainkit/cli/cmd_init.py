"""trainkit init: write a new repository."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import Any

__all__ = ["add", "run"]


def add(sub: Any) -> None:
    """Add the command to the parser's subcommands."""
    p = sub.add_parser(
        "init",
        help="start a repository: platform, one team, one example job, CI",
        description="Write a new repository into DIR (default: the current directory): "
        "jobs/platform/ with one cluster, one team and queue, a policy and the Argo CD "
        "settings, an example job with its script, .gitignore, a CI workflow and a "
        "pre-commit configuration. `trainkit synth` and `trainkit check` pass on it as "
        "written. Existing files are never overwritten (README.md is kept, .gitignore gets "
        "the lines trainkit needs).",
    )
    p.add_argument("dir", nargs="?", default=".", metavar="DIR")
    p.set_defaults(func=run, finds_root=False)


def run(args: argparse.Namespace) -> int:
    from ..scaffold import scaffold

    dest = Path(args.dir)
    done = scaffold(dest)
    shown = "." if args.dir in (".", "") else args.dir.rstrip("/")
    for rel in done.created:
        print(f"created {shown}/{rel}")
    for rel in done.extended:
        print(f"extended {shown}/{rel} (the lines trainkit needs were missing)")
    for rel in done.kept:
        print(f"kept {shown}/{rel}")
    cd = f"cd {shlex.quote(shown)} && " if shown != "." else ""
    print(
        "\nNext: set repo_url and your clusters in jobs/platform/clusters.py, then\n"
        f"  {cd}trainkit synth && trainkit check\n"
        "and commit jobs/ and generated/ together; CI runs .github/workflows/trainkit.yml."
    )
    return 0
