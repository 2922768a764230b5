"""trainkit crds: the CRDs the tree needs per cluster; fetching the pinned upstream ones."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from .options import (
    GivenPath,
    add_crds_option,
    add_loading,
    load_options,
)

__all__ = ["add", "run"]


def add(sub: Any) -> None:
    """Add the command to the parser's subcommands."""
    p = sub.add_parser(
        "crds",
        help="list the CRDs the tree needs, per cluster; fetch the pinned upstream ones",
        description="List the CustomResourceDefinitions (group, version, kind) the generated "
        "tree needs on each cluster and where Argo CD runs, and where --crds (or "
        "$TRAINKIT_CRDS) serves each; exit 1 when one is missing there. --fetch DIR first "
        "downloads the pinned upstream release files those kinds come from (versions, URLs "
        "and SHA-256 checksums ship with trainkit), verified, into DIR.",
    )
    p.add_argument(
        "--jobs", default="jobs", action=GivenPath, help="directory of definitions (default: jobs)"
    )
    add_crds_option(p)
    p.add_argument(
        "--fetch",
        metavar="DIR",
        action=GivenPath,
        help="download the pinned upstream CRDs the tree needs into DIR (kept when their "
        "checksum already matches), then compare with DIR unless --crds is given",
    )
    p.add_argument(
        "--all", action="store_true", help="with --fetch: every pinned file, not only those needed"
    )
    p.add_argument(
        "--mirror",
        metavar="URL_OR_DIR",
        default=os.environ.get("TRAINKIT_CRDS_MIRROR") or None,
        help="read the pinned files from a mirror holding <dir>/<file> as DIR does (a "
        "directory, file:// or https:// URL) instead of upstream (default: "
        "$TRAINKIT_CRDS_MIRROR); the checksums still apply",
    )
    p.add_argument(
        "--format", choices=["text", "json"], default="text", help="text (default) or json"
    )
    add_loading(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..crd_report import crd_report

    mirror = args.mirror
    if mirror and "://" not in mirror:
        mirror = str(args.started_in / mirror)  # a directory, as seen where the command started
    return crd_report(
        Path(args.jobs),
        args.crds,
        fetch=Path(args.fetch) if args.fetch else None,
        everything=args.all,
        mirror=mirror,
        json_output=args.format == "json",
        load_options=load_options(args),
        started_in=args.started_in,
    )
