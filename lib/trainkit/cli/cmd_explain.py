"""trainkit explain: the pods a job becomes on each cluster."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .options import (
    GivenPath,
    add_definitions_cache,
    add_loading,
    load_options,
)
from .pipeline import definitions_cache

__all__ = ["add", "run"]


def add(sub: Any) -> None:
    """Add the command to the parser's subcommands."""
    p = sub.add_parser(
        "explain",
        help="show the pods a job becomes on each cluster",
        description="Show what the controllers will create for a job on each of its clusters "
        "(or --cluster): image, command, args, every env variable with where it comes from "
        "(the job, its runtime, the operator), resources, volumes, world size and the Volcano "
        "PodGroup the scheduler must admit. Policy problems of the job are listed at the end.",
    )
    p.add_argument("job", help="job name, KIND/NAME, or the object's name (NAME-rN)")
    p.add_argument("--cluster", help="only this cluster")
    p.add_argument(
        "--jobs", default="jobs", action=GivenPath, help="directory of definitions (default: jobs)"
    )
    p.add_argument(
        "--format", choices=["text", "json"], default="text", help="text (default) or json"
    )
    add_loading(p)
    add_definitions_cache(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..explain import explain_jobs, format_json, format_text

    directory = Path(args.jobs)
    jobs, problems = explain_jobs(
        directory, args.job, cluster=args.cluster, options=load_options(args),
        cache=definitions_cache(directory, no_cache=args.no_cache),
    )  # fmt: skip
    print((format_json if args.format == "json" else format_text)(jobs, problems), end="")
    return 0
