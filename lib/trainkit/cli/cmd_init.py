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
        "settings, an example job with its script, .gitignore, the GitHub workflows (CI, "
        "plan and its pull request comment) and a pre-commit configuration, and runs "
        "`git init` (branch main) where DIR is no git repository. `trainkit synth` and "
        "`trainkit check` pass on it as written. Existing files are never overwritten "
        "(README.md is kept, .gitignore gets the lines trainkit needs). Every workflow "
        "installs the same pinned trainkit: this release from the package index, or "
        "--index-url / --git.",
    )
    p.add_argument("dir", nargs="?", default=".", metavar="DIR")
    pin = p.add_mutually_exclusive_group()
    pin.add_argument(
        "--index-url",
        metavar="URL",
        help="install this trainkit release from your internal package index (pip "
        "--index-url URL), e.g. https://pypi.internal.example/simple",
    )
    pin.add_argument(
        "--git",
        metavar="URL@REF",
        help="install trainkit from a git repository at a tag or commit, e.g. "
        "https://github.com/acme/trainkit@v0.2.0 (pip's trainkit-gitops @ git+URL@REF)",
    )
    p.set_defaults(func=run, finds_root=False)


def run(args: argparse.Namespace) -> int:
    from ..scaffold import scaffold, trainkit_install

    install = trainkit_install(git=args.git, index_url=args.index_url)
    dest = Path(args.dir)
    done = scaffold(dest, install)
    shown = "." if args.dir in (".", "") else args.dir.rstrip("/")
    for rel in done.created:
        print(f"created {shown}/{rel}")
    for rel in done.extended:
        print(f"extended {shown}/{rel} (the lines trainkit needs were missing)")
    for rel in done.kept:
        print(f"kept {shown}/{rel}")
    for note in done.notes:
        print(note)
    cd = f"cd {shlex.quote(shown)} && " if shown != "." else ""
    print(
        "\nNext: set repo_url and your clusters in jobs/platform/clusters.py, then\n"
        f"  {cd}trainkit synth && trainkit check\n"
        "and commit jobs/ and generated/ together. The workflows (.github/workflows/trainkit.yml,\n"
        "and plan.yml on pull requests) install trainkit with:\n"
        f"  {install.pip_command}"
    )
    return 0
