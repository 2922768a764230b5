"""trainkit plan: what the definitions will do to each cluster, against what Argo CD deploys."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .options import (
    GivenPath,
    add_definitions_cache,
    add_loading,
    load_options,
)
from .pipeline import definitions_cache
from .printing import notices

__all__ = ["add", "run"]


def add(sub: Any) -> None:
    """Add the command to the parser's subcommands."""
    p = sub.add_parser(
        "plan",
        help="show what the definitions will do to each cluster, against what Argo CD deploys",
        description="Compare the tree synthesized from the definitions (in memory; the output "
        "directory is not written) with what Argo CD deploys: per cluster, the objects it will "
        "create, change or delete, grouped by team, with the fields that change (a job's new "
        "run is one row); what every job in git would request of each queue and team at once; "
        "each new or changed job's nodes, processes, world size, GPUs, image and queue. Fails "
        "with the errors synth reports, nothing else; without a deployed tree it plans against "
        "an empty one and says why.",
    )
    add_loading(p)
    p.add_argument("--jobs", default="jobs", help="directory of definitions (default: jobs)")
    p.add_argument(
        "--out", default="generated", help="the generated tree's directory (default: generated)"
    )
    p.add_argument(
        "--against",
        metavar="REV",
        help="git revision holding what is deployed (default: origin/<ArgoCD revision>, else "
        "<revision>); 'disk' compares with the output directory on disk",
    )
    p.add_argument(
        "--format",
        choices=["text", "markdown", "json"],
        default="text",
        help="text (default), markdown (a pull-request comment) or json (schemas/plan.schema.json)",
    )
    p.add_argument(
        "--json-file",
        metavar="FILE",
        action=GivenPath,
        help="also write the plan as json into FILE (e.g. a pull-request comment in markdown "
        "and the data for programs from one run); written only when the plan succeeds",
    )
    add_definitions_cache(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..plan import build_review, format_json, format_markdown, format_text

    jobs = Path(args.jobs)
    review = build_review(
        jobs, Path(args.out), against=args.against, load_options=load_options(args),
        cache=definitions_cache(jobs, no_cache=args.no_cache),
    )  # fmt: skip
    notices(review.notices, review.warnings)
    if review.report.note and args.format != "text":
        print(f"note: {review.report.note}", file=sys.stderr)  # text says it in the plan
    formats = {"text": format_text, "markdown": format_markdown, "json": format_json}
    if args.json_file:
        _write(Path(args.json_file), format_json(review.report))
    print(formats[args.format](review.report), end="")
    return 0


def _write(path: Path, text: str) -> None:
    from ..errors import Problem, SetupError

    try:
        path.write_text(text, encoding="utf-8")
    except OSError as err:
        raise SetupError(
            [Problem(file=str(path), message=f"cannot write the plan: {err.strerror or err}")]
        ) from err
