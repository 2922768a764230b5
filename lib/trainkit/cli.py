"""The ``trainkit`` command: thin wrappers that call library functions and print results.

Everything heavy (the models, cdk8s, validation) is imported by the command that needs
it, so that ``trainkit synth`` and ``check`` with unchanged inputs (``runcache``)
answer without loading any of it.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shlex
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainkit import __version__

from .errors import ManifestError, Problem, SetupError, StaleOutputError, TrainkitError
from .progress import Progress
from .repo_root import find_root, rebase

if TYPE_CHECKING:
    from .load import LoadOptions
    from .runcache import Record, RunCache
    from .validate import CrdSet, NeededCrd
    from .write import Changes

__all__ = ["main"]


def _load_options(args: argparse.Namespace) -> LoadOptions:
    from .load import LoadOptions

    return LoadOptions(
        timeout=args.load_timeout, memory=args.load_memory << 20, isolation=args.isolation
    )


def _notices(
    notices: Sequence[str],
    warnings: Sequence[Problem | str] = (),
    args: argparse.Namespace | None = None,
) -> None:
    for notice in notices:
        print(f"note: {notice}", file=sys.stderr)
    located = [w for w in warnings if isinstance(w, Problem)]
    if located and args is not None and _format(args) == "github":
        from .validate import format_github

        print(format_github(located, level="warning", title=f"trainkit {args.command}"), end="")
        warnings = [w for w in warnings if not isinstance(w, Problem)]
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)


def _format(args: argparse.Namespace) -> str:
    """How problems are reported: text (people), github (workflow annotations) or json."""
    return str(getattr(args, "format", "text")) if getattr(args, "reports", False) else "text"


def _say(args: argparse.Namespace, text: str) -> None:
    """A result line: on stdout, unless stdout carries JSON."""
    print(text, file=sys.stderr if _format(args) == "json" else sys.stdout)
    if _format(args) == "json":
        print("[]")  # no problems


def _require_node() -> None:
    """cdk8s writes the manifests and runs on Node.js: say so in one line, not a traceback."""
    node = os.environ.get("JSII_NODE", "node")
    if shutil.which(node) is None:
        raise SetupError(
            [
                Problem(
                    file=node,
                    message="Node.js not found on PATH; trainkit writes manifests with cdk8s, "
                    "which runs on it: install Node.js 18 or newer (https://nodejs.org, "
                    "`apt-get install nodejs`, `brew install node`) and run again",
                )
            ]
        )


def _require_baseline(args: argparse.Namespace) -> bool:
    # CI must compare with what Argo CD deploys; a developer's clone may lack it.
    return bool(args.require_baseline or os.environ.get("CI"))


def _synth(args: argparse.Namespace) -> int:
    runs = _run_cache(args)
    record = _unchanged(args, runs, "synth", {})
    if record is not None:
        _notices((), record.warnings)
        if args.check:
            _say(args, f"{args.out}/ is up to date ({len(record.outputs)} files)")
        else:
            from .write import Changes

            _say(args, f"{args.out}/: {Changes(unchanged=len(record.outputs)).summary()}")
        return 0
    _prestart()
    _require_node()
    from .serialize import prewarm

    # Something changed, so some object will need cdk8s: node starts beside the imports.
    prewarm(1, background=True)
    from .synth import synthesize

    out = synthesize(
        Path(args.jobs), Path(args.out), check=args.check, against=args.against,
        load_options=_load_options(args), require_baseline=_require_baseline(args),
        use_cache=not args.no_cache, runs=runs, incremental=True,
    )  # fmt: skip
    _notices(out.notices, out.plan.warnings, args)
    if args.check:
        _raise_if_stale(out.changes, args.out)
        _say(args, f"{args.out}/ is up to date ({len(out.files)} files)")
    else:
        _say(args, f"{args.out}/: {out.changes.summary()}")
    return 0


def _prestart() -> None:
    """Definitions will run: start their origin process while the pipeline is imported."""
    from .load.server import prestart

    prestart()


def _run_cache(args: argparse.Namespace) -> RunCache | None:
    """The run records for this command line, unless caches are off (see ``cache_dir``).

    Only for text reports: a recorded warning is a line of text, not a located problem.
    """
    from .cache_dir import cache_enabled

    jobs = Path(args.jobs)
    if not cache_enabled(no_cache=args.no_cache) or not jobs.is_dir():
        return None
    from .runcache import RunCache, synth_options

    options = synth_options(args.against, _require_baseline(args), Path.cwd())
    return RunCache(jobs.resolve().parent, jobs, Path(args.out), options)


def _unchanged(
    args: argparse.Namespace, runs: RunCache | None, kind: str, extra: dict[str, object]
) -> Record | None:
    if runs is None or _format(args) != "text":
        return None
    return runs.unchanged(kind, extra, args.against, require=_require_baseline(args))


def _raise_if_stale(changes: Changes, out: str, command: str | None = None) -> None:
    """StaleOutputError naming each file and the command that regenerates (default: synth's)."""
    from .repo_root import synth_command

    if not changes.any:
        return
    command = command or synth_command(Path.cwd())
    problems = [
        Problem(file=f"{out}/{path}", message=f"{what}; run `{command}` and commit the result")
        for what, paths in (
            ("would be added", changes.added),
            ("is out of date", changes.changed),
            ("would be removed", changes.removed),
        )
        for path in paths
    ]
    raise StaleOutputError(problems)


def _crds_path(args: argparse.Namespace) -> str | None:
    """``--crds`` (said from the repository root), else ``$TRAINKIT_CRDS`` from where we started."""
    if args.crds:
        return str(args.crds)
    env = os.environ.get("TRAINKIT_CRDS")
    return str(Path(args.started_in, env)) if env else None


def _load_crds(args: argparse.Namespace) -> tuple[CrdSet | None, str]:
    """The CRDs to validate against (``--crds`` or ``$TRAINKIT_CRDS``) and how to say so."""
    from .validate import crds_dir, load_crds

    # --crds was said from the repository root already; $TRAINKIT_CRDS from where we started.
    path = crds_dir(args.crds) if args.crds else crds_dir(None, base=args.started_in)
    if path is None:
        return None, "object rules only, NOT against CRDs (no --crds)"
    return load_crds(path), f"the CRDs in {args.crds or os.environ.get('TRAINKIT_CRDS')}"


def _unverified(args: argparse.Namespace, needs: list[NeededCrd], where: str) -> None:
    """Without CRDs: name every kind whose schema went unchecked; an error with --require-crds."""
    from .validate import describe_kind

    if not needs:
        return
    kinds = ", ".join(describe_kind(n.key) for n in needs)
    message = (
        f"not validated against CRDs (no --crds, and TRAINKIT_CRDS is not set): the schemas "
        f"and CEL rules of {kinds} went unchecked, so the cluster may still reject these "
        "objects or silently drop their unknown fields; pass --crds with the pinned upstream "
        "CRDs (trainkit crds --fetch DIR) or your clusters' (kubectl get crd -o yaml)"
    )
    if args.require_crds:
        raise SetupError([Problem(file=where, message=message + " (--require-crds)")])
    _notices(
        [], [Problem(file=where, message=message + "; --require-crds makes this an error")], args
    )


def _check(args: argparse.Namespace) -> int:
    from .runcache import check_inputs

    runs = _run_cache(args)
    # A check without CRDs warns (or fails) on every run: never answered from a record.
    crds_path = _crds_path(args)
    tools = check_inputs(crds_path) if runs is not None and crds_path else None
    record = _unchanged(args, runs, "check", tools) if tools is not None else None
    if record is not None:
        _notices((), record.warnings)
        _checked(args, len(record.outputs), record.facts)
        return 0
    _prestart()
    from .synth import synthesize
    from .validate import PodAllowance, crd_needs, validate_tree

    _require_node()
    out_dir = Path(args.out)
    with Progress(sys.stderr, "trainkit check") as progress:
        progress.step("running the definitions and rendering")
        out = synthesize(
            Path(args.jobs), out_dir, check=True, against=args.against,
            load_options=_load_options(args), require_baseline=_require_baseline(args),
            use_cache=not args.no_cache, runs=runs,
        )  # fmt: skip
        progress.clear()
        _notices(out.notices, out.plan.warnings, args)
        _raise_if_stale(out.changes, args.out)
        progress.step("reading the CRDs")
        crds, against = _load_crds(args)
        if crds is None:
            progress.clear()
            _unverified(args, crd_needs(out.files.items()), f"{args.out}/")
        # Pods may have what the platform's NetworkProfiles grant; CEL transition rules
        # (oldSelf) run against the deployed version of each object.
        allowance = PodAllowance.from_profiles(out.plan.network_profiles)
        problems, builds = validate_tree(
            out_dir, crds, root=Path.cwd(), baseline=out.baseline, allowance=allowance,
            progress=progress.step,
        )  # fmt: skip
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
    _say(
        args,
        f"{args.out}/ is up to date ({files} files); valid against {facts['against']}; "
        f"{facts['builds']} kustomize builds; no in-place change of what {facts['deployed']} "
        "deploys",
    )


def _validate(args: argparse.Namespace) -> int:
    from .validate import crd_needs, format_github, format_json, format_text, validate_paths

    crds, against = _load_crds(args)
    paths = [Path(p) for p in args.paths]
    if crds is None:
        files = [f for p in paths for f in (sorted(p.rglob("*.y*ml")) if p.is_dir() else [p])]
        _unverified(args, crd_needs((f.as_posix(), _read(f)) for f in files), ", ".join(args.paths))
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


def _crds(args: argparse.Namespace) -> int:
    from .crd_report import crd_report

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
        load_options=_load_options(args),
        started_in=args.started_in,
    )


def _init(args: argparse.Namespace) -> int:
    from .scaffold import scaffold

    dest = Path(args.dir)
    done = scaffold(dest)
    shown = "." if args.dir in (".", "") else args.dir.rstrip("/")
    for rel in done.created:
        print(f"created {shown}/{rel}")
    for rel in done.extended:
        print(f"extended {shown}/{rel} (the lines trainkit needs were missing)")
    for rel in done.kept:
        print(f"kept {shown}/{rel}")
    cd = f"cd {shlex.quote(shown)} && " if shown != "." else ""
    print(
        "\nNext: set repo_url and your clusters in jobs/platform/clusters.py, then\n"
        f"  {cd}trainkit synth && trainkit check\n"
        "and commit jobs/ and generated/ together; CI runs .github/workflows/trainkit.yml."
    )
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


def _plan(args: argparse.Namespace) -> int:
    from .plan import build_review, format_json, format_markdown, format_text

    review = build_review(
        Path(args.jobs), Path(args.out), against=args.against, load_options=_load_options(args)
    )
    _notices(review.notices, review.warnings)
    if review.report.note and args.format != "text":
        print(f"note: {review.report.note}", file=sys.stderr)  # text says it in the plan
    formats = {"text": format_text, "markdown": format_markdown, "json": format_json}
    print(formats[args.format](review.report), end="")
    return 0


def _schema(args: argparse.Namespace) -> int:
    from .schema import write_schemas

    changes = write_schemas(Path(args.out), check=args.check)
    if args.check:
        _raise_if_stale(changes, args.out, "trainkit schema")
        print(f"{args.out}/ is up to date")
    else:
        print(f"{args.out}/: {changes.summary()}")
    return 0


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="trainkit",
        description="Turn Python training-job definitions under jobs/ into the Kubernetes "
        "manifests Argo CD syncs (generated/). Commands run from any directory of the "
        "repository (the nearest one upwards holding jobs/, else the top of the git work tree).",
    )
    p.add_argument("--version", action="version", version=f"trainkit {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    i = sub.add_parser(
        "init",
        help="start a repository: platform, one team, one example job, CI",
        description="Write a new repository into DIR (default: the current directory): "
        "jobs/platform/ with one cluster, one team and queue, a policy and the Argo CD "
        "settings, an example job with its script, .gitignore, a CI workflow and a "
        "pre-commit configuration. `trainkit synth` and `trainkit check` pass on it as "
        "written. Existing files are never overwritten (README.md is kept, .gitignore gets "
        "the lines trainkit needs).",
    )
    i.add_argument("dir", nargs="?", default=".", metavar="DIR")
    i.set_defaults(func=_init, finds_root=False)

    s = sub.add_parser(
        "synth",
        help="write generated/ from jobs/",
        description="Load every definition under --jobs, validate it, and write "
        "the generated tree atomically (stale files of deleted jobs are removed). "
        "On any error nothing is written and every problem is printed. With the caches "
        "(not under CI, not with --no-cache), a run whose inputs are unchanged does nothing, "
        "and when only job files changed, the others' files are kept from the last run.",
    )
    _common(s)
    s.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 if the output directory is not up to date",
    )
    _report_format(s)
    s.set_defaults(func=_synth)

    c = sub.add_parser(
        "check",
        help="fail if generated/ is stale or invalid",
        description="Check that the output directory is exactly what the "
        "definitions produce (the CI gate).",
    )
    _common(c)
    _crds_option(c)
    _require_crds(c)
    _report_format(c)
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
        metavar="PATH",
        help="files or directories (default: generated)",
    )
    _crds_option(v)
    _require_crds(v)
    _report_format(v)
    v.set_defaults(func=_validate)

    cr = sub.add_parser(
        "crds",
        help="list the CRDs the tree needs, per cluster; fetch the pinned upstream ones",
        description="List the CustomResourceDefinitions (group, version, kind) the generated "
        "tree needs on each cluster and where Argo CD runs, and where --crds (or "
        "$TRAINKIT_CRDS) serves each; exit 1 when one is missing there. --fetch DIR first "
        "downloads the pinned upstream release files those kinds come from (versions, URLs "
        "and SHA-256 checksums ship with trainkit), verified, into DIR.",
    )
    cr.add_argument(
        "--jobs", default="jobs", action=_GivenPath, help="directory of definitions (default: jobs)"
    )
    _crds_option(cr)
    cr.add_argument(
        "--fetch",
        metavar="DIR",
        action=_GivenPath,
        help="download the pinned upstream CRDs the tree needs into DIR (kept when their "
        "checksum already matches), then compare with DIR unless --crds is given",
    )
    cr.add_argument(
        "--all", action="store_true", help="with --fetch: every pinned file, not only those needed"
    )
    cr.add_argument(
        "--mirror",
        metavar="URL_OR_DIR",
        default=os.environ.get("TRAINKIT_CRDS_MIRROR") or None,
        help="read the pinned files from a mirror holding <dir>/<file> as DIR does (a "
        "directory, file:// or https:// URL) instead of upstream (default: "
        "$TRAINKIT_CRDS_MIRROR); the checksums still apply",
    )
    cr.add_argument(
        "--format", choices=["text", "json"], default="text", help="text (default) or json"
    )
    _loading(cr)
    cr.set_defaults(func=_crds)

    r = sub.add_parser(
        "rehearse",
        help="run a job's script locally as N nodes × P processes (torchrun, mpirun or a "
        "local Ray cluster)",
        description="Run the job's real script on this machine's CPU as the pods of its "
        "first cluster would run it (see `trainkit explain`): one torchrun per simulated node "
        "with exactly the env the Training Operator (PyTorchJob) or Kubeflow Trainer "
        "(TrainJob) injects (master mapped to 127.0.0.1, free ports), the env and args the "
        "pods get, and the script files read-only in a writable working directory, as on "
        "the cluster. An MPIJob runs its launcher's mpirun against a hostfile of this "
        "machine with mpi-operator's env (needs Open MPI's mpirun). A RayJob gets a Ray "
        "cluster of this machine, a head and each worker group's nodes with KubeRay's env, "
        "and its entrypoint runs against it (needs ray: pip install -e '.[ray]'); there "
        "--nodes caps each group's workers and --procs-per-node each node's Ray CPUs. "
        "GPU-only settings are downgraded and reported. Fails, naming the node and rank, if "
        "any process exits non-zero; stops every process at --timeout. Needs torch: pip "
        "install -e '.[rehearse]'.",
    )
    r.add_argument("file", help="definition file, e.g. jobs/vision/resnet50_ddp.py")
    r.add_argument(
        "--job",
        help="job name (name=), when the file defines several; KIND/NAME when jobs of "
        "two kinds share it",
    )
    r.add_argument(
        "--jobs",
        metavar="DIR",
        action=_GivenPath,
        help="directory of definitions whose platform/ the job is planned with "
        "(default: the jobs/ directory holding FILE)",
    )
    r.add_argument(
        "--nodes", type=_positive(int), help="simulated nodes (default: the job's, at most 2)"
    )
    r.add_argument(
        "--procs-per-node",
        type=_positive(int),
        help="processes per node (default: the job's, at most 2)",
    )
    r.add_argument(
        "--timeout",
        type=_positive(float),
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
    e.add_argument(
        "--jobs", default="jobs", action=_GivenPath, help="directory of definitions (default: jobs)"
    )
    e.add_argument(
        "--format", choices=["text", "json"], default="text", help="text (default) or json"
    )
    _loading(e)
    e.set_defaults(func=_explain)

    pl = sub.add_parser(
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
    _loading(pl)
    pl.add_argument("--jobs", default="jobs", help="directory of definitions (default: jobs)")
    pl.add_argument(
        "--out", default="generated", help="the generated tree's directory (default: generated)"
    )
    pl.add_argument(
        "--against",
        metavar="REV",
        help="git revision holding what is deployed (default: origin/<ArgoCD revision>, else "
        "<revision>); 'disk' compares with the output directory on disk",
    )
    pl.add_argument(
        "--format",
        choices=["text", "markdown", "json"],
        default="text",
        help="text (default), markdown (a pull-request comment) or json (schemas/plan.schema.json)",
    )
    pl.set_defaults(func=_plan)

    sc = sub.add_parser(
        "schema",
        help="write the JSON Schemas of the definition kinds",
        description="Write one JSON Schema per definition kind (for editors and CI).",
    )
    sc.add_argument(
        "--out", default="schemas", action=_GivenPath, help="directory to write (default: schemas)"
    )
    sc.add_argument("--check", action="store_true", help="write nothing; exit 1 if stale")
    sc.set_defaults(func=_schema)
    return p


def _crds_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--crds",
        metavar="PATH",
        action=_GivenPath,
        help="CustomResourceDefinitions: a directory of YAML files, or one file, holding CRD "
        "documents or a List of them (default: $TRAINKIT_CRDS); dump your cluster's with "
        "`kubectl get crd -o yaml > crds.yaml`, or fetch the pinned upstream ones with "
        "`trainkit crds --fetch DIR`",
    )


def _require_crds(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--require-crds",
        action="store_true",
        help="fail when no CRDs are given (CI): without them the CRD schemas and CEL rules "
        "are not checked, which is otherwise only a warning",
    )


def _report_format(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--format",
        choices=["text", "github", "json"],
        default="text",
        help="how problems are reported: text for people (default), github for GitHub "
        "Actions annotations at file and line, json (a list of {file, line, obj, field, "
        "message} on stdout)",
    )
    p.set_defaults(reports=True)


def _loading(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        "running definitions",
        "Definitions are code from pull requests: each team directory runs in its own "
        "process, read-only and without network where the OS allows it, within these limits.",
    )
    g.add_argument(
        "--load-timeout", type=_positive(float), default=60.0, metavar="SECONDS",
        help="seconds one definition file may take (default: 60)",
    )  # fmt: skip
    g.add_argument(
        "--load-memory", type=_positive(int), default=2048, metavar="MIB",
        help="memory one definition process may use, in MiB (default: 2048)",
    )  # fmt: skip
    g.add_argument(
        "--isolation", choices=["team", "file"], default="team",
        help="one process per team directory (default) or per definition file",
    )  # fmt: skip


def _positive(kind: type[int] | type[float]) -> Any:
    """An argparse type: a number above zero (anything else is a usage error, exit 2)."""

    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"{text} is not above 0")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in its messages
    return parse


def _common(p: argparse.ArgumentParser) -> None:
    _loading(p)
    p.add_argument(
        "--jobs", default="jobs", action=_GivenPath, help="directory of definitions (default: jobs)"
    )
    p.add_argument(
        "--out",
        default="generated",
        action=_GivenPath,
        help="output directory (default: generated)",
    )
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
    """Run ``trainkit ARGV``; 0 success, 1 a problem to fix, 2 a usage error (argparse exits)."""
    args = _parser().parse_args(argv)
    args.started_in = Path.cwd()
    root = find_root(args.started_in) if getattr(args, "finds_root", True) else args.started_in
    if root != args.started_in:
        _rebase_paths(args, root)
        os.chdir(root)
    if hasattr(args, "out"):
        args.out = str(args.out).rstrip("/") or "."
    if hasattr(args, "paths") and not args.paths:
        args.paths = ["generated"]  # the repository's, wherever the command started
    try:
        code: int = args.func(args)
    except KeyboardInterrupt as e:
        # Commands that start processes (definitions, rehearse) stop them before re-raising.
        what = f" ({e})" if str(e) else ""
        print(f"trainkit {args.command}: interrupted{what}", file=sys.stderr)
        return 130
    except TrainkitError as e:
        _report(args, e.problems)
        return 1
    finally:
        if root != args.started_in:
            os.chdir(args.started_in)
    return code


class _GivenPath(argparse.Action):
    """Stores a path option and notes that it was given: given paths are relative to the
    directory the command started in, defaults to the repository root."""

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
        values: Any, option_string: str | None = None,
    ) -> None:  # fmt: skip
        setattr(namespace, self.dest, values)
        namespace.given_paths = {*getattr(namespace, "given_paths", ()), self.dest}


def _rebase_paths(args: argparse.Namespace, root: Path) -> None:
    """Paths given in a subdirectory, said from the repository root instead."""
    for name in getattr(args, "given_paths", ()):
        setattr(args, name, rebase(getattr(args, name), args.started_in, root))
    if isinstance(getattr(args, "file", None), str):
        args.file = rebase(args.file, args.started_in, root)
    if getattr(args, "paths", None):
        args.paths = [rebase(p, args.started_in, root) for p in args.paths]


def _report(args: argparse.Namespace, problems: Sequence[Problem]) -> None:
    fmt = _format(args)
    if fmt == "github":
        from .validate import format_github

        print(format_github(problems, title=f"trainkit {args.command}"), end="")
    elif fmt == "json":
        from .validate import format_json

        print(format_json(problems), end="")
    else:
        for problem in problems:
            print(f"error: {problem}", file=sys.stderr)
    print(f"trainkit {args.command}: {len(problems)} error(s)", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
