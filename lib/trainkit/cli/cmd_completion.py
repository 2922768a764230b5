"""trainkit completion: the shell completion script, generated from the parser."""

from __future__ import annotations

import argparse
from typing import Any

from .completion import SHELLS

__all__ = ["add", "run"]


def add(sub: Any) -> None:
    """Add the command to the parser's subcommands."""
    p = sub.add_parser(
        "completion",
        help="print the shell completion script (bash, zsh or fish)",
        description="Print a completion script for SHELL: commands, their options and "
        'choices, files for paths. bash: eval "$(trainkit completion bash)" in ~/.bashrc; '
        'zsh: eval "$(trainkit completion zsh)" in ~/.zshrc after compinit; fish: '
        "trainkit completion fish > ~/.config/fish/completions/trainkit.fish.",
    )
    p.add_argument("shell", choices=SHELLS, metavar="SHELL", help="bash, zsh or fish")
    p.set_defaults(func=run, finds_root=False)


def run(args: argparse.Namespace) -> int:
    from . import parser
    from .completion import completion_script

    print(completion_script(parser(), args.shell), end="")
    return 0
