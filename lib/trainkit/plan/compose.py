"""``trainkit plan``: the tree from the working copy against what Argo CD deploys.

It runs synth's pipeline up to the files (load, plan, render, the effective
pods and their policy, the in-place refusals against the same baseline), so
it fails with synth's errors, and then compares instead of writing:
``generated/`` is never touched. One difference: a missing baseline, which
synth refuses in CI, only makes the plan one against an empty tree.

The objects are compared as data, so the plan needs no cdk8s (and no node).
The in-place checks read bytes, and only for deployed jobs and runtimes: an
object equal to its deployed version is handed the deployed bytes (what synth
would write too), any other is dumped with PyYAML, which they parse again.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..deployed import Baseline, keep_deployed, refuse_in_place_changes, resolve_baseline
from ..effective import EffectiveJob
from ..errors import Problem, SetupError
from ..load import DefinitionCache, LoadOptions, load_jobs
from ..model import Cluster
from ..resolve import build_plan
from ..synth import Rendered, check_cluster_truth, render_groups
from ..synth.migration import check_migration, migration_steps
from .deployed_pods import deployed_effective, gpu_resource_of
from .facts import ClusterReport, PlanReport
from .rows import object_changes
from .trees import Key, Obj, ReadBaseline, Side, deployed_side, new_side
from .usage import ClusterJobs, queue_usage, team_usage

__all__ = ["Review", "build_review"]


@dataclass(frozen=True)
class Review:
    report: PlanReport
    notices: list[str]
    """What the user should know once (e.g. definitions ran unconfined)."""
    warnings: tuple[Problem, ...]
    """The plan's warnings, as synth prints them."""


def build_review(
    jobs_dir: Path,
    out_dir: Path,
    *,
    root: Path | None = None,
    against: str | None = None,
    load_options: LoadOptions | None = None,
    cache: DefinitionCache | None = None,
) -> Review:
    """The plan of ``jobs_dir`` against the deployed ``out_dir`` (see ``resolve_baseline``).

    Raises synth's errors; a missing baseline is no error: the plan is then
    against an empty tree and ``report.note`` says why. With ``cache``, a definition file
    whose inputs are unchanged is not run again (``load.cache``), as in synth.
    """
    root = root or jobs_dir.resolve().parent
    loaded = load_jobs(jobs_dir, root, options=load_options, cache=cache)
    plan = build_plan(loaded.definitions)
    revision = plan.argocd.revision if plan.argocd else "main"
    baseline, note = _baseline(root, out_dir, against, revision)
    groups = render_groups(plan, deployed=baseline.paths())
    effective = check_cluster_truth(plan, groups)
    notices = check_migration(plan, baseline)
    origins = {r.path: r for _, items in groups for r in items if r.definition is not None}
    models = {cp.cluster.name: cp.cluster for cp in plan.clusters}
    before, read = deployed_side(baseline, models, also=origins)
    files = _job_files(origins, before, read)
    definitions = {path: r.definition for path, r in origins.items() if r.definition is not None}
    kept = set(keep_deployed(files, definitions, read))
    refuse_in_place_changes(files, definitions, read)
    after = new_side(groups, models)
    pods_after: dict[str, dict[Key, EffectiveJob]] = {}
    for ej in effective:
        key = (ej.kind, ej.planned.namespace, ej.name)
        pods_after.setdefault(ej.planned.cluster.name, {})[key] = ej
    max_gpus = {name: team.obj.max_gpus for name, team in plan.index.teams.items()}
    clusters = [
        _cluster(
            name,
            models.get(name),
            before.clusters.get(name, {}),
            after.clusters.get(name, {}),
            pods_after.get(name, {}),
            kept,
            max_gpus,
        )
        for name in sorted(after.clusters.keys() | before.clusters.keys())
    ]
    report = PlanReport.model_construct(
        baseline=baseline.description,
        baseline_found=not baseline.nothing,
        note=note,
        clusters=clusters,
        argocd=object_changes(None, before.argocd, after.argocd, {}, {}),
        migration=migration_steps(plan, read),
    )
    return Review(report, [*loaded.notices, *notices], plan.warnings)


def _cluster(
    name: str,
    model: Cluster | None,
    old: dict[Key, Obj],
    new: dict[Key, Obj],
    new_pods: dict[Key, EffectiveJob],
    kept: set[str],
    max_gpus: dict[str, int | None],
) -> ClusterReport:
    model = model or _removed_cluster(name, old)
    old_pods = deployed_effective(old, model)
    new, new_pods = dict(new), dict(new_pods)
    for key, obj in list(new.items()):
        if obj.path in kept and key in old:
            # Argo CD keeps the deployed object (same definition, older rendering).
            new[key] = old[key]
            new_pods.pop(key, None)
            if key in old_pods:
                new_pods[key] = old_pods[key]
    was, now = _jobs(old, old_pods), _jobs(new, new_pods)
    return ClusterReport.model_construct(
        cluster=name,
        gpu_resource=model.gpu_resource,
        changes=object_changes(name, old, new, old_pods, new_pods),
        queues=queue_usage(was, now, model.gpu_resource),
        teams=team_usage(was, now, max_gpus),
    )


def _baseline(
    root: Path, out_dir: Path, against: str | None, revision: str
) -> tuple[Baseline, str]:
    """The deployed tree, or an empty one and why: the plan is information, never blocked."""
    empty = "planned against an empty tree (every object shows as added)"
    try:
        baseline = resolve_baseline(root, out_dir, against, revision)
    except SetupError as err:
        why = "; ".join(p.message for p in err.problems)
        return Baseline("an empty tree", out_dir, nothing=True), f"{why}; {empty}"
    if baseline.nothing:
        fetch = (
            f"fetch what Argo CD deploys (`git fetch origin {revision}`; in CI, "
            "actions/checkout with fetch-depth: 0) or name it with --against REV"
        )
        return baseline, f"{baseline.description}: {empty}; {fetch}"
    return baseline, ""


def _job_files(origins: dict[str, Rendered], before: Side, read: ReadBaseline) -> dict[str, bytes]:
    """The new bytes of each deployed job and runtime, for the in-place checks.

    They look only at paths the baseline has. An object equal to its deployed
    version gets the deployed bytes (synth's would be the same); the others are
    serialized here, for the checks parse them.
    """
    deployed = {o.path: o for objects in before.clusters.values() for o in objects.values()}
    files: dict[str, bytes] = {}
    for path, r in origins.items():
        old = read.files.get(path)
        if old is None:
            continue
        obj = deployed.get(path)
        files[path] = old if obj is not None and obj.body == r.body else _dump(r.body)
    return files


def _dump(body: dict[str, Any]) -> bytes:
    text = yaml.dump(body, Dumper=yaml.CSafeDumper, sort_keys=False, default_flow_style=False)
    return text.encode("utf-8")


def _removed_cluster(name: str, deployed: dict[Key, Obj]) -> Cluster:
    # Gone from the definitions: only its name and GPU resource matter to the pods.
    fields: dict[str, Any] = {"name": name, "gpu_resource": gpu_resource_of(deployed)}
    return Cluster.model_construct(**fields)


def _jobs(objects: dict[Key, Obj], pods: dict[Key, EffectiveJob]) -> ClusterJobs:
    return ClusterJobs(
        jobs=[(objects[k], ej) for k, ej in sorted(pods.items()) if k in objects],
        queues={o.name: o for o in objects.values() if o.kind in ("Queue", "ClusterQueue")},
    )
