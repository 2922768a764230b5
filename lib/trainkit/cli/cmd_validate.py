"""trainkit validate: manifests against CRDs and Kubernetes' rules, offline."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .crd_input import load_crds, unverified
from .options import (
    add_crds_option,
    add_report_format,
    add_require_crds,
)

__all__ = ["add", "run"]


def add(sub: Any) -> None:
    """Add the command to the parser's subcommands."""
    p = sub.add_parser(
        "validate",
        help="validate manifests against CRDs and Kubernetes rules",
        description="Validate YAML manifests offline as the API server would: "
        "CRD schemas (unknown fields are errors, the server would drop them "
        "silently), CEL rules, names, labels and quantities. A kind with no CRD "
        "in the directory is reported.",
    )
    p.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="files or directories (default: generated)",
    )
    add_crds_option(p)
    add_require_crds(p)
    add_report_format(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..validate import crd_needs, format_github, format_json, format_text, validate_paths

    crds, against = load_crds(args)
    paths = [Path(p) for p in args.paths]
    if crds is None:
        files = [f for p in paths for f in (sorted(p.rglob("*.y*ml")) if p.is_dir() else [p])]
        unverified(args, crd_needs((f.as_posix(), _read(f)) for f in files), ", ".join(args.paths))
    problems = validate_paths(paths, crds, root=Path.cwd())
    if args.format == "json":
        print(format_json(problems), end="")
    elif args.format == "github":
        print(format_github(problems, title="trainkit validate"), end="")
    elif problems:
        print(format_text(problems), end="")
    if problems:
        print(f"trainkit validate: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    if args.format != "json":
        print(f"valid: {', '.join(args.paths)} against {against}")
    return 0


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""  # the validator reports it
