"""The ``trainkit`` command: thin wrappers that call library functions and print results.

Everything heavy (the models, cdk8s, validation) is imported by the command that needs
it, so that ``trainkit synth`` and ``check`` with unchanged inputs (``runcache``)
answer without loading any of it.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import ManifestError, Problem, StaleOutputError, TrainkitError

if TYPE_CHECKING:
    from .load import LoadOptions
    from .runcache import Record, RunCache
    from .validate import CrdSet
    from .write import Changes

__all__ = ["main"]


def _load_options(args: argparse.Namespace) -> LoadOptions:
    from .load import LoadOptions

    return LoadOptions(
        timeout=args.load_timeout, memory=args.load_memory << 20, isolation=args.isolation
    )


def _notices(notices: Sequence[str], warnings: Sequence[Problem | str] = ()) -> None:
    for notice in notices:
        print(f"note: {notice}", file=sys.stderr)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)


def _require_baseline(args: argparse.Namespace) -> bool:
    # CI must compare with what Argo CD deploys; a developer's clone may lack it.
    return bool(args.require_baseline or os.environ.get("CI"))


def _synth(args: argparse.Namespace) -> int:
    runs = _run_cache(args)
    record = _unchanged(args, runs, "synth", {})
    if record is not None:
        _notices((), record.warnings)
        if args.check:
            print(f"{args.out}/ is up to date ({len(record.outputs)} files)")
        else:
            from .write import Changes

            print(f"{args.out}/: {Changes(unchanged=len(record.outputs)).summary()}")
        return 0
    from .synth import synthesize

    out = synthesize(
        Path(args.jobs), Path(args.out), check=args.check, against=args.against,
        load_options=_load_options(args), require_baseline=_require_baseline(args),
        use_cache=not args.no_cache, runs=runs,
    )  # fmt: skip
    _notices(out.notices, out.plan.warnings)
    if args.check:
        _raise_if_stale(out.changes, args.out)
        print(f"{args.out}/ is up to date ({len(out.files)} files)")
    else:
        print(f"{args.out}/: {out.changes.summary()}")
    return 0


def _run_cache(args: argparse.Namespace) -> RunCache | None:
    """The run records for this command line, unless caches are off (see ``cache_dir``)."""
    from .cache_dir import cache_enabled

    jobs = Path(args.jobs)
    if not cache_enabled(no_cache=args.no_cache) or not jobs.is_dir():
        return None
    from .runcache import RunCache, synth_options

    options = synth_options(args.against, _require_baseline(args))
    return RunCache(jobs.resolve().parent, jobs, Path(args.out), options)


def _unchanged(
    args: argparse.Namespace, runs: RunCache | None, kind: str, extra: dict[str, object]
) -> Record | None:
    if runs is None:
        return None
    return runs.unchanged(kind, extra, args.against, require=_require_baseline(args))


def _raise_if_stale(changes: Changes, out: str) -> None:
    if not changes.any:
        return
    problems = [
        Problem(file=f"{out}/{path}", message=f"{what}; run `make synth` and commit the result")
        for what, paths in (
            ("would be added", changes.added),
            ("is out of date", changes.changed),
            ("would be removed", changes.removed),
        )
        for path in paths
    ]
    raise StaleOutputError(problems)


def _load_crds(option: str | None) -> tuple[CrdSet | None, str]:
    """The CRDs to validate against (``--crds`` or ``$TRAINKIT_CRDS``) and how to say so."""
    from .validate import crds_dir, load_crds

    directory = crds_dir(option)
    if directory is None:
        return None, "object rules only (no --crds)"
    return load_crds(directory), f"the CRDs in {directory}"


def _check(args: argparse.Namespace) -> int:
    from .runcache import check_inputs

    runs = _run_cache(args)
    tools = check_inputs(args.crds) if runs is not None else None
    record = _unchanged(args, runs, "check", tools) if tools is not None else None
    if record is not None:
        _notices((), record.warnings)
        _checked(args, len(record.outputs), record.facts)
        return 0
    from .synth import synthesize
    from .validate import PodAllowance, validate_tree

    out_dir = Path(args.out)
    out = synthesize(
        Path(args.jobs), out_dir, check=True, against=args.against,
        load_options=_load_options(args), require_baseline=_require_baseline(args),
        use_cache=not args.no_cache, runs=runs,
    )  # fmt: skip
    _notices(out.notices, out.plan.warnings)
    _raise_if_stale(out.changes, args.out)
    crds, against = _load_crds(args.crds)
    # Pods may have what the platform's NetworkProfiles grant; CEL transition rules
    # (oldSelf) run against the deployed version of each object.
    allowance = PodAllowance.from_profiles(out.plan.network_profiles)
    problems, builds = validate_tree(
        out_dir, crds, root=Path.cwd(), baseline=out.baseline, allowance=allowance
    )
    if problems:
        raise ManifestError(problems)
    facts: dict[str, object] = {
        "against": against,
        "builds": builds,
        "deployed": out.baseline.description,
    }
    if out.runs is not None and out.record is not None and tools is not None:
        key = out.runs.key("check", out.record.imports, tools)
        out.runs.save("check", dataclasses.replace(out.record, key=key, facts=facts))
    _checked(args, len(out.files), facts)
    return 0


def _checked(args: argparse.Namespace, files: int, facts: dict[str, object]) -> None:
    print(
        f"{args.out}/ is up to date ({files} files); valid against {facts['against']}; "
        f"{facts['builds']} kustomize builds; no in-place change of what {facts['deployed']} "
        "deploys"
    )


def _validate(args: argparse.Namespace) -> int:
    from .validate import format_json, format_text, validate_paths

    crds, against = _load_crds(args.crds)
    problems = validate_paths([Path(p) for p in args.paths], crds, root=Path.cwd())
    if args.format == "json":
        print(format_json(problems), end="")
    elif problems:
        print(format_text(problems), end="")
    if problems:
        print(f"trainkit validate: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    if args.format == "text":
        print(f"valid: {', '.join(args.paths)} against {against}")
    return 0


def _rehearse(args: argparse.Namespace) -> int:
    from .rehearse import rehearse_file

    # rehearse_file prints per-rank output and its own verdict as it goes.
    rehearse_file(
        Path(args.file),
        jobs_dir=Path(args.jobs) if args.jobs else None,
        job_name=args.job,
        nodes=args.nodes,
        procs_per_node=args.procs_per_node,
        timeout=args.timeout,
        out=sys.stdout,
        load_options=_load_options(args),
    )
    return 0


def _explain(args: argparse.Namespace) -> int:
    from .explain import explain_jobs, format_json, format_text

    jobs, problems = explain_jobs(
        Path(args.jobs), args.job, cluster=args.cluster, options=_load_options(args)
    )
    print((format_json if args.format == "json" else format_text)(jobs, problems), end="")
    return 0


def _schema(args: argparse.Namespace) -> int:
    from .schema import write_schemas

    changes = write_schemas(Path(args.out), check=args.check)
    if args.check:
        _raise_if_stale(changes, args.out)
        print(f"{args.out}/ is up to date")
    else:
        print(f"{args.out}/: {changes.summary()}")
    return 0


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="trainkit",
        description="Turn Python training-job definitions under jobs/ into the Kubernetes "
        "manifests Argo CD syncs (generated/).",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    s = sub.add_parser(
        "synth",
        help="write generated/ from jobs/",
        description="Load every definition under --jobs, validate it, and write "
        "the generated tree atomically (stale files of deleted jobs are removed). "
        "On any error nothing is written and every problem is printed.",
    )
    _common(s)
    s.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 if the output directory is not up to date",
    )
    s.set_defaults(func=_synth)

    c = sub.add_parser(
        "check",
        help="fail if generated/ is stale or invalid",
        description="Check that the output directory is exactly what the "
        "definitions produce (the CI gate).",
    )
    _common(c)
    _crds(c)
    c.set_defaults(func=_check)

    v = sub.add_parser(
        "validate",
        help="validate manifests against CRDs and Kubernetes rules",
        description="Validate YAML manifests offline as the API server would: "
        "CRD schemas (unknown fields are errors, the server would drop them "
        "silently), CEL rules, names, labels and quantities. A kind with no CRD "
        "in the directory is reported.",
    )
    v.add_argument(
        "paths",
        nargs="*",
        default=["generated"],
        metavar="PATH",
        help="files or directories (default: generated)",
    )
    _crds(v)
    v.add_argument(
        "--format",
        choices=["text", "json"],
        default="text",
        help="text for people (default), json for CI",
    )
    v.set_defaults(func=_validate)

    r = sub.add_parser(
        "rehearse",
        help="run a job's script locally as N nodes × P processes with torchrun",
        description="Run the job's real script on this machine's CPU: one torchrun per "
        "simulated node with exactly the env the Training Operator (PyTorchJob) or Kubeflow "
        "Trainer (TrainJob, with the runtime of its first cluster) injects (master mapped "
        "to 127.0.0.1, free ports), the job's env and args, and the script in a stand-in "
        "for /workspace. GPU-only settings are downgraded and reported. Fails, naming the "
        "node and rank, if any process exits non-zero; stops every process at --timeout. "
        "Needs torch: pip install -e '.[rehearse]'.",
    )
    r.add_argument("file", help="definition file, e.g. jobs/vision/resnet50_ddp.py")
    r.add_argument(
        "--job",
        help="job name (name=), when the file defines several; KIND/NAME when a "
        "PyTorchJob and a TrainJob share it",
    )
    r.add_argument(
        "--jobs",
        metavar="DIR",
        help="directory of definitions whose platform/ holds a TrainJob's runtime "
        "(default: the jobs/ directory holding FILE)",
    )
    r.add_argument("--nodes", type=int, help="simulated nodes (default: the job's, at most 2)")
    r.add_argument(
        "--procs-per-node", type=int, help="processes per node (default: the job's, at most 2)"
    )
    r.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        help="seconds before every process is stopped (default: 300)",
    )
    _loading(r)
    r.set_defaults(func=_rehearse)

    e = sub.add_parser(
        "explain",
        help="show the pods a job becomes on each cluster",
        description="Show what the controllers will create for a job on each of its clusters "
        "(or --cluster): image, command, args, every env variable with where it comes from "
        "(the job, its runtime, the operator), resources, volumes, world size and the Volcano "
        "PodGroup the scheduler must admit. Policy problems of the job are listed at the end.",
    )
    e.add_argument("job", help="job name, KIND/NAME, or the object's name (NAME-rN)")
    e.add_argument("--cluster", help="only this cluster")
    e.add_argument("--jobs", default="jobs", help="directory of definitions (default: jobs)")
    e.add_argument(
        "--format", choices=["text", "json"], default="text", help="text (default) or json"
    )
    _loading(e)
    e.set_defaults(func=_explain)

    sc = sub.add_parser(
        "schema",
        help="write the JSON Schemas of the definition kinds",
        description="Write one JSON Schema per definition kind (for editors and CI).",
    )
    sc.add_argument("--out", default="schemas", help="directory to write (default: schemas)")
    sc.add_argument("--check", action="store_true", help="write nothing; exit 1 if stale")
    sc.set_defaults(func=_schema)
    return p


def _crds(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--crds",
        metavar="DIR",
        help="directory of CustomResourceDefinitions (default: $TRAINKIT_CRDS); "
        "dump yours with `kubectl get crd -o yaml`",
    )


def _loading(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        "running definitions",
        "Definitions are code from pull requests: each team directory runs in its own "
        "process, read-only and without network where the OS allows it, within these limits.",
    )
    g.add_argument(
        "--load-timeout", type=float, default=60.0, metavar="SECONDS",
        help="seconds one definition file may take (default: 60)",
    )  # fmt: skip
    g.add_argument(
        "--load-memory", type=int, default=2048, metavar="MIB",
        help="memory one definition process may use, in MiB (default: 2048)",
    )  # fmt: skip
    g.add_argument(
        "--isolation", choices=["team", "file"], default="team",
        help="one process per team directory (default) or per definition file",
    )  # fmt: skip


def _common(p: argparse.ArgumentParser) -> None:
    _loading(p)
    p.add_argument("--jobs", default="jobs", help="directory of definitions (default: jobs)")
    p.add_argument("--out", default="generated", help="output directory (default: generated)")
    p.add_argument(
        "--against",
        metavar="REV",
        help="git revision holding what is deployed, to refuse in-place changes of "
        "TrainJobs and other immutable fields (default: origin/<ArgoCD revision>, else "
        "<revision>, else the output directory on disk; 'disk' forces the latter)",
    )
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="neither read nor write the caches (always the case when the environment "
        "variable CI is set): run every definition, write every object through cdk8s",
    )
    p.add_argument(
        "--require-baseline",
        action="store_true",
        help="fail unless origin/<ArgoCD revision> (or --against) is there to compare with "
        "(the default when the environment variable CI is set)",
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if hasattr(args, "out"):
        args.out = str(args.out).rstrip("/") or "."
    try:
        code: int = args.func(args)
    except KeyboardInterrupt as e:
        # Commands that start processes (definitions, rehearse) stop them before re-raising.
        what = f" ({e})" if str(e) else ""
        print(f"trainkit {args.command}: interrupted{what}", file=sys.stderr)
        return 130
    except TrainkitError as e:
        for problem in e.problems:
            print(f"error: {problem}", file=sys.stderr)
        print(f"trainkit {args.command}: {len(e.problems)} error(s)", file=sys.stderr)
        return 1
    return code


if __name__ == "__main__":
    sys.exit(main())
