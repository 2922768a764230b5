"""trainkit synth: write generated/ from jobs/ (or only compare, with --check)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .options import (
    add_common,
    add_report_format,
    load_options,
    require_baseline,
)
from .pipeline import prestart, require_node, run_cache, unchanged
from .printing import notices, raise_if_stale, say

__all__ = ["add", "run"]


def add(sub: Any) -> None:
    """Add the command to the parser's subcommands."""
    p = sub.add_parser(
        "synth",
        help="write generated/ from jobs/",
        description="Load every definition under --jobs, validate it, and write "
        "the generated tree atomically (stale files of deleted jobs are removed). "
        "On any error nothing is written and every problem is printed. With the caches "
        "(not under CI, not with --no-cache), a run whose inputs are unchanged does nothing, "
        "and when only job files changed, the others' files are kept from the last run.",
    )
    add_common(p)
    p.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 if the output directory is not up to date",
    )
    add_report_format(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    runs = run_cache(args)
    record = unchanged(args, runs, "synth", {})
    if record is not None:
        notices((), record.warnings)
        if args.check:
            say(args, f"{args.out}/ is up to date ({len(record.outputs)} files)")
        else:
            from ..write import Changes

            say(args, f"{args.out}/: {Changes(unchanged=len(record.outputs)).summary()}")
        return 0
    prestart(args, runs)
    require_node()
    from ..serialize import prewarm

    # Something changed, so some object will need cdk8s: node starts beside the imports.
    prewarm(1, background=True)
    from ..synth import synthesize

    out = synthesize(
        Path(args.jobs), Path(args.out), check=args.check, against=args.against,
        load_options=load_options(args), require_baseline=require_baseline(args),
        use_cache=not args.no_cache, runs=runs, incremental=True,
    )  # fmt: skip
    notices(out.notices, out.plan.warnings, args)
    if args.check:
        raise_if_stale(out.changes, args.out)
        say(args, f"{args.out}/ is up to date ({len(out.files)} files)")
    else:
        say(args, f"{args.out}/: {out.changes.summary()}")
    return 0
