"""trainkit validate: manifests against CRDs and Kubernetes' rules, offline."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .crd_input import load_crds, tree_crds, unverified
from .options import (
    add_crds_option,
    add_definitions_cache,
    add_loading,
    add_report_format,
    add_require_crds,
    load_options,
)
from .pipeline import definitions_cache

if TYPE_CHECKING:
    from ..load import Definition
    from ..validate import PodAllowance, TreeCrds

__all__ = ["add", "run"]


def add(sub: Any) -> None:
    """Add the command to the parser's subcommands."""
    p = sub.add_parser(
        "validate",
        help="validate manifests against CRDs and Kubernetes rules",
        description="Validate YAML manifests offline as the API server would: "
        "CRD schemas (unknown fields are errors, the server would drop them "
        "silently), CEL rules, names, labels and quantities. A kind with no CRD "
        "in the directory is reported. Inside a trainkit repository pods may have what "
        "the platform's NetworkProfiles grant, as in `trainkit check`; elsewhere IPC_LOCK "
        "only.",
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
    add_loading(p)
    add_definitions_cache(
        p, which="every platform definition", where="inside a trainkit repository, "
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..validate import crd_needs, format_github, format_json, format_text, validate_paths

    platform = _platform(args)
    # Outside a trainkit repository there is no work tree to guard, nor a platform to list.
    crds, against = load_crds(args, _tree(platform) if platform is not None else None)
    paths = [Path(p) for p in args.paths]
    if crds is None:
        files = [f for p in paths for f in (sorted(p.rglob("*.y*ml")) if p.is_dir() else [p])]
        unverified(args, crd_needs((f.as_posix(), _read(f)) for f in files), ", ".join(args.paths))
    problems = validate_paths(paths, crds, root=Path.cwd(), allowance=_allowance(platform))
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


def _platform(args: argparse.Namespace) -> list[Definition] | None:
    """Inside a trainkit repository (the command runs from its root), the platform's
    definitions; elsewhere None."""
    from ..load import PLATFORM_DIR, load_jobs

    jobs = Path("jobs")
    if not (jobs / PLATFORM_DIR).is_dir():
        return None
    # The platform's files whose inputs are unchanged since synth or check ran them are not
    # run again: their payloads are rebuilt through the models (``load.cache``).
    cache = definitions_cache(jobs, no_cache=args.no_cache)
    loaded = load_jobs(jobs, only={PLATFORM_DIR}, options=load_options(args), cache=cache)
    return loaded.definitions


def _tree(platform: list[Definition]) -> TreeCrds:
    """Which CRD files of the work tree count: those the platform's Policy lists."""
    from ..model import Policy

    for d in platform:
        if isinstance(d.obj, Policy):
            return tree_crds(d.obj, d.file)
    return tree_crds(None, None)


def _allowance(platform: list[Definition] | None) -> PodAllowance:
    """What pods may be granted: inside a trainkit repository, the platform's
    NetworkProfiles, as ``trainkit check`` grants them; elsewhere the baseline."""
    from ..validate import BASELINE, PodAllowance

    if platform is None:
        return BASELINE
    return PodAllowance.from_platform(d.obj for d in platform)


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""  # the validator reports it
