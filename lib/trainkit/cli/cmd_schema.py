"""trainkit schema: the JSON Schemas of the definition kinds."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .options import (
    GivenPath,
)
from .printing import raise_if_stale

__all__ = ["add", "run"]


def add(sub: Any) -> None:
    """Add the command to the parser's subcommands."""
    p = sub.add_parser(
        "schema",
        help="write the JSON Schemas of the definition kinds",
        description="Write one JSON Schema per definition kind (for editors and CI).",
    )
    p.add_argument(
        "--out", default="schemas", action=GivenPath, help="directory to write (default: schemas)"
    )
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 if stale")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..schema import write_schemas

    changes = write_schemas(Path(args.out), check=args.check)
    if args.check:
        raise_if_stale(changes, args.out, "trainkit schema")
        print(f"{args.out}/ is up to date")
    else:
        print(f"{args.out}/: {changes.summary()}")
    return 0
