"""trainkit check: the gate — generated/ up to date, valid, and built as Argo CD builds it."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

from ..errors import ManifestError, Problem
from ..progress import Progress
from .crd_input import crds_path, load_crds, tree_crds, unverified
from .options import (
    add_common,
    add_crds_option,
    add_report_format,
    add_require_crds,
    load_options,
    require_baseline,
)
from .pipeline import prestart, require_node, run_cache, unchanged
from .printing import notices, raise_if_stale, say

__all__ = ["add", "run"]


def add(sub: Any) -> None:
    """Add the command to the parser's subcommands."""
    p = sub.add_parser(
        "check",
        help="fail if generated/ is stale or invalid",
        description="Check that the output directory is exactly what the "
        "definitions produce (the CI gate).",
    )
    add_common(p)
    add_crds_option(p)
    add_require_crds(p)
    add_report_format(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..kubectl import find_kubectl
    from ..runcache import check_inputs

    runs = run_cache(args)
    # A check without CRDs warns (or fails) on every run: never answered from a record.
    given = crds_path(args)
    tools = check_inputs(given, find_kubectl()) if runs is not None and given else None
    record = unchanged(args, runs, "check", tools) if tools is not None else None
    if record is not None:
        notices((), record.warnings)
        _checked(args, len(record.outputs), record.facts)
        return 0
    prestart(args, runs)
    from ..synth import synthesize
    from ..validate import PodAllowance, TreeBuilds, crd_needs, planned_objects, validate_tree

    require_node()
    out_dir = Path(args.out)
    # Builds whose inputs passed the last check (same trainkit, CRDs, kubectl) are not
    # run again.
    last = runs.last("check") if runs is not None and tools is not None else None
    passed = last.facts.get("build_inputs") if last is not None else None
    if last is None or runs is None or last.frame != runs.frame("check", tools or {}):
        passed = None
    # The builds run beside the rendering: kustomize reads the files on disk, and the synth
    # then proves them up to date (a stale tree is refused before any build is read). They
    # start once the definitions loaded and passed the platform's rules: a run refused
    # before would only kill them.
    reuse = passed if isinstance(passed, dict) else None
    started: list[TreeBuilds] = []

    def start_builds() -> None:
        if not started:
            started.append(TreeBuilds(out_dir, reuse, probe=True, keys=True))

    try:
        with Progress(sys.stderr, "trainkit check") as progress:
            progress.step("running the definitions and rendering")
            out = synthesize(
                Path(args.jobs), out_dir, check=True, against=args.against,
                load_options=load_options(args), require_baseline=require_baseline(args),
                use_cache=not args.no_cache, runs=runs, rendering=start_builds,
            )  # fmt: skip
            start_builds()  # a no-op: the synth rendered, so they started
            builds = started[0]
            progress.clear()
            notices(out.notices, out.plan.warnings, args)
            raise_if_stale(out.changes, args.out)
            progress.step("reading the CRDs")
            policy = out.plan.index.policy
            tree = tree_crds(policy.obj, policy.file) if policy else tree_crds(None, None)
            crds, against = load_crds(args, tree)
            if crds is None:
                progress.clear()
                unverified(args, crd_needs(out.files.items()), f"{args.out}/")
            # Pods may have what the platform's NetworkProfiles and Teams grant; CEL transition
            # rules (oldSelf) run against the deployed version of each object.
            allowance = PodAllowance.from_profiles(
                out.plan.network_profiles,
                [p for team in out.plan.index.teams.values() for p in team.obj.host_paths],
            )
            # Each build, decoded as Argo CD decodes it, must hold exactly what was rendered.
            planned = planned_objects(out.objects, out.files, out.kept)
            notes: list[Problem] = []
            digests: dict[str, str] = {}
            # A file that holds what was rendered for it is validated as those objects; a
            # kept file (deployed bytes, not this rendering) is read as it is.
            written = {p: data for p, data in out.files.items() if p not in out.kept}
            problems, count = validate_tree(
                out_dir, crds, root=Path.cwd(), baseline=out.baseline, allowance=allowance,
                progress=progress.step, planned=planned, notes=notes, digests=digests,
                builds=builds, written=written,
            )  # fmt: skip
            progress.clear()
            notices((), notes, args)
    finally:
        for started_builds in started:
            started_builds.stop()
    if problems:
        raise ManifestError(problems)
    facts: dict[str, object] = {
        "against": against,
        "builds": count,
        "deployed": out.baseline.description,
        "nothing_deployed": out.baseline.nothing,
        "build_inputs": digests,
    }
    if out.runs is not None and out.record is not None and tools is not None:
        key = out.runs.key("check", out.record.imports, tools)
        warnings = [*out.record.warnings, *(str(n) for n in notes)]
        frame = out.runs.frame("check", tools)
        record = dataclasses.replace(
            out.record, key=key, facts=facts, warnings=warnings, frame=frame
        )
        out.runs.save("check", record)
    _checked(args, len(out.files), facts)
    return 0


def _checked(args: argparse.Namespace, files: int, facts: dict[str, object]) -> None:
    if facts.get("nothing_deployed"):
        # "nothing known to be deployed (not a git repository)": every object is new.
        deployed = f"{facts['deployed']}, so every object is new"
    else:
        deployed = f"no in-place change of what {facts['deployed']} deploys"
    say(
        args,
        f"{args.out}/ is up to date ({files} files); valid against {facts['against']}; "
        f"{facts['builds']} kustomize builds; {deployed}",
    )
