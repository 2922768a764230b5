"""Plan → files of ``generated/``: layout, headers, kustomizations, Argo CD.

The layout (relative to the output directory)::

    argocd/                      the root Application (applied once by an admin, then syncing
                                 this directory), the AppProjects, one Application per cluster;
                                 the argocd-cm health checks (see render/argocd.py)
    clusters/<cluster>/          what Argo CD syncs to <cluster>
        kustomization.yaml       lists every file below; teaches kustomize the CRD fields
        kustomizeconfig.yaml
        kustomize-openapi.yaml   tells kustomize which CRD kinds are cluster-scoped
        namespaces/<ns>.yaml
        queues/<queue>.yaml
        runtimes/<name>.yaml     ClusterTrainingRuntimes
        <namespace>/pytorchjob-<name>.yaml, trainjob-<name>-r<run>.yaml,
                    trainingruntime-<name>.yaml, configmap-<job>-script-<hash>.yaml
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from . import health
from .cache_dir import cache_enabled, repo_cache_dir
from .deployed.baseline import Baseline, resolve_baseline
from .deployed.inplace import keep_deployed, refuse_in_place_changes
from .effective import EffectiveJob, effective_job
from .errors import DefinitionError
from .load import Definition, DefinitionCache, LoadOptions, load_jobs
from .plan import ClusterPlan, Plan, PlannedJob, PlannedRuntime, build_plan
from .policy import check_policy
from .render import argocd as render_argocd
from .render.cluster_scoped import render_namespace, render_queue
from .render.kubeflow_trainer import render_runtime, render_trainjob
from .render.kuberay import render_rayjob
from .render.kueue_objects import render_cluster_queue, render_local_queue, render_resource_flavor
from .render.kustomize import (
    KUSTOMIZE_CONFIG,
    KUSTOMIZE_OPENAPI,
    cluster_scoped_openapi,
    kustomization,
    kustomize_config,
)
from .render.mpi_operator import render_mpijob
from .render.paddle import render_paddlejob
from .render.script import render_script_configmap
from .render.tensorflow import render_tfjob
from .render.training_operator import render_pytorchjob
from .repo_root import DEFAULT_COMMAND, synth_command
from .runcache import Record, RunCache, baseline_id, synth_options
from .serialize import YamlCache, prewarm, to_yaml
from .write import HEADER_PREFIX, Changes, compare_tree, write_tree

__all__ = ["Output", "Rendered", "render_files", "render_objects", "synthesize"]


@dataclass(frozen=True)
class Rendered:
    path: str
    body: dict[str, Any]
    source: str
    definition: Definition | None = None
    """The job or runtime definition, for objects that may not change in place."""
    planned: PlannedJob | PlannedRuntime | None = None
    """The planned job or runtime the object was rendered from."""
    plain: bool = False
    """A kustomize file, written as plain YAML (not a Kubernetes object for cdk8s)."""


@dataclass(frozen=True)
class Output:
    files: dict[str, bytes]
    plan: Plan
    changes: Changes
    baseline: Baseline
    """What the jobs and runtimes were compared with (the deployed tree)."""
    notices: list[str]
    """What the user should know once (e.g. definitions ran unconfined)."""
    jobs: list[EffectiveJob]
    """Every job's pods as the controllers will create them."""
    runs: RunCache | None = None
    """The run records of this output directory (None without caches)."""
    record: Record | None = None
    """What this run recorded (None without caches)."""


def _header(source: str, command: str) -> str:
    return f"{HEADER_PREFIX.decode()} from {source}. Do not edit.\n# Regenerate with: {command}\n"


_RENDER = {
    "PyTorchJob": render_pytorchjob,
    "MPIJob": render_mpijob,
    "TFJob": render_tfjob,
    "PaddleJob": render_paddlejob,
    "RayJob": render_rayjob,
    "TrainJob": render_trainjob,
}


def _cluster_objects(cp: ClusterPlan) -> Iterator[Rendered]:
    base = f"clusters/{cp.cluster.name}"
    for ns, team, source in cp.namespaces:
        yield Rendered(
            f"{base}/namespaces/{ns}.yaml",
            render_namespace(namespace=ns, team=team, source=source),
            source,
        )
    for pq in cp.queues:
        yield Rendered(
            f"{base}/queues/{pq.queue.name}.yaml", render_queue(pq, cp.cluster), pq.definition.file
        )
    for flavor in cp.kueue.flavors:
        yield Rendered(
            f"{base}/kueue/resourceflavor-{flavor.obj.name}.yaml",
            render_resource_flavor(flavor),
            flavor.file,
        )
    for cq in cp.kueue.cluster_queues:
        namespaces = cp.kueue.namespaces.get(cq.obj.name, ())
        yield Rendered(
            f"{base}/kueue/clusterqueue-{cq.obj.name}.yaml",
            render_cluster_queue(cq, cp.cluster, namespaces),
            cq.file,
        )
    for ns, lq, tdef in cp.kueue.local_queues:
        owner = tdef.obj.name  # type: ignore[attr-defined]
        yield Rendered(
            f"{base}/{ns}/localqueue-{lq}.yaml",
            render_local_queue(ns, lq, owner, tdef.file),
            tdef.file,
        )
    for pr in cp.runtimes:
        path = (
            f"{base}/{pr.namespace}/trainingruntime-{pr.runtime.name}.yaml"
            if pr.namespace
            else f"{base}/runtimes/{pr.runtime.name}.yaml"
        )
        yield Rendered(path, render_runtime(pr), pr.definition.file, pr.definition, pr)
    for pj in cp.jobs:
        cm = render_script_configmap(pj)
        if cm is not None:
            yield Rendered(
                f"{base}/{pj.namespace}/configmap-{cm['metadata']['name']}.yaml",
                cm,
                pj.definition.file,
            )
        body = _RENDER[pj.kind](pj)
        yield Rendered(
            f"{base}/{pj.namespace}/{pj.kind.lower()}-{pj.object_name}.yaml",
            body,
            pj.definition.file,
            pj.definition,
            pj,
        )


def _dump(data: dict[str, Any]) -> str:
    return yaml.dump(data, Dumper=yaml.CSafeDumper, sort_keys=False, default_flow_style=False)


Groups = list[tuple[str, list[Rendered]]]


def render_groups(plan: Plan) -> Groups:
    """Every object of the tree as a plain dict, one group per cluster (and Argo CD)."""
    groups: Groups = [(cp.cluster.name, list(_cluster_objects(cp))) for cp in plan.clusters]
    argo = [
        Rendered(f.path, f.body, f.source, plain=f.kustomize)
        for f in render_argocd.argocd_files(plan, health.health_checks())
    ]
    if argo:
        groups.append(("argocd", argo))
    return groups


def effective_jobs(groups: Groups) -> list[EffectiveJob]:
    """The pods of every job as the controllers will create them (see ``effective``)."""
    runtimes = {id(planned): body for planned, body in rendered_runtimes(groups)}
    return [
        effective_job(r.planned, r.body, runtimes.get(id(r.planned.runtime)))
        for _, items in groups
        for r in items
        if isinstance(r.planned, PlannedJob)
    ]


def rendered_runtimes(groups: Groups) -> list[tuple[PlannedRuntime, dict[str, Any]]]:
    """Every runtime with the object rendered for it."""
    return [
        (r.planned, r.body)
        for _, items in groups
        for r in items
        if isinstance(r.planned, PlannedRuntime)
    ]


def check_cluster_truth(plan: Plan, groups: Groups) -> list[EffectiveJob]:
    """The effective jobs; raise DefinitionError with every policy problem they have."""
    jobs = effective_jobs(groups)
    problems = check_policy(plan, jobs, rendered_runtimes(groups))
    if problems:
        raise DefinitionError(problems)
    return jobs


def render_files(
    plan: Plan,
    cache: YamlCache,
    origins: dict[str, Definition] | None = None,
    groups: Groups | None = None,
    command: str = DEFAULT_COMMAND,
) -> dict[str, bytes]:
    """Every file of the generated tree, as bytes (deterministic for a given plan).

    ``origins``, when given, receives the definition of each job and runtime file;
    ``command`` is the one the headers say regenerates the tree.
    """
    if groups is None:
        groups = render_groups(plan)
    # Kubernetes objects go through cdk8s; kustomize's own files are plain YAML.
    objects = [(chart, [r for r in items if not r.plain]) for chart, items in groups]
    texts = to_yaml([(chart, [r.body for r in items]) for chart, items in objects], cache)
    files: dict[str, str] = {}
    for (_, items), group_texts in zip(objects, texts, strict=True):
        for r, text in zip(items, group_texts, strict=True):
            files[r.path] = _header(r.source, command) + text
            if origins is not None and r.definition is not None:
                origins[r.path] = r.definition
    for r in (r for _, items in groups for r in items if r.plain):
        files[r.path] = _header(r.source, command) + _dump(r.body)
    for cp in plan.clusters:
        base = f"clusters/{cp.cluster.name}/"
        paths = sorted(p.removeprefix(base) for p in files if p.startswith(base))
        files[base + "kustomization.yaml"] = _header("jobs/", command) + _dump(
            kustomization(paths, cluster=True)
        )
        files[base + KUSTOMIZE_CONFIG] = _header("trainkit", command) + _dump(kustomize_config())
        files[base + KUSTOMIZE_OPENAPI] = _header("trainkit", command) + _dump(
            cluster_scoped_openapi()
        )
    return {k: files[k].encode("utf-8") for k in sorted(files)}


def render_objects(
    jobs_dir: Path, *, root: Path | None = None, load_options: LoadOptions | None = None
) -> tuple[list[tuple[str, dict[str, Any]]], list[str]]:
    """Every object of the tree by path, and the load's notices; nothing is written.

    Rendered but not serialized or compared with the deployed tree: what the tree
    holds is known without node or git (``trainkit crds``).
    """
    root = root or jobs_dir.resolve().parent
    loaded = load_jobs(jobs_dir, root, options=load_options)
    plan = build_plan(loaded.definitions)
    objects = [(r.path, r.body) for _, items in render_groups(plan) for r in items]
    return objects, loaded.notices


def synthesize(
    jobs_dir: Path,
    out_dir: Path,
    *,
    root: Path | None = None,
    check: bool = False,
    use_cache: bool = True,
    against: str | None = None,
    load_options: LoadOptions | None = None,
    require_baseline: bool = False,
    runs: RunCache | None = None,
) -> Output:
    """Load, plan and render; then write ``out_dir`` atomically (or only compare, with check).

    Nothing is written when a job or runtime would change where the cluster
    forbids it, compared with the deployed tree: git revision ``against``, or
    by default what Argo CD follows (see ``deployed.resolve_baseline``).

    With ``use_cache`` (and unless ``cache_dir.cache_enabled`` says no: CI, a tracked
    cache), a definition file with unchanged inputs is not run again (``load.cache``),
    an unchanged object is not written by cdk8s again (``serialize``), and the run is
    recorded for the command's no-change check (``runcache``; ``runs`` when the caller
    already made it).
    """
    root = root or jobs_dir.resolve().parent
    if not (use_cache and cache_enabled()):
        runs = None
    elif runs is None:
        runs = RunCache(root, jobs_dir, out_dir, synth_options(against, require_baseline, root))
    directory = repo_cache_dir(root) if runs is not None else None
    cache = YamlCache(directory / "yaml.json" if directory is not None else None)
    definitions = (
        DefinitionCache(directory, runs.data_stamp(), root.resolve())
        if directory is not None and runs is not None
        else None
    )
    # Node starts while the definitions run (in processes forked before it exists).
    loaded = load_jobs(
        jobs_dir, root, options=load_options, while_loading=prewarm, cache=definitions
    )
    plan = build_plan(loaded.definitions)
    groups = render_groups(plan)
    effective = check_cluster_truth(plan, groups)
    origins: dict[str, Definition] = {}
    files = render_files(plan, cache, origins, groups, synth_command(root))
    revision = plan.argocd.revision if plan.argocd else "main"
    baseline = _read_once(
        resolve_baseline(root, out_dir, against, revision, require=require_baseline)
    )
    rendered = {path: _sha(files[path]) for path in origins}
    compare = _to_compare(origins, rendered, baseline, runs.last("synth") if runs else None)
    keep_deployed(files, compare, baseline)
    refuse_in_place_changes(files, compare, baseline)
    if check:
        changes = compare_tree(out_dir, files)
    else:
        changes = write_tree(out_dir, files, display=_display(out_dir, root))
    cache.save()
    record = None
    if runs is not None:
        imports = runs.repository_imports(loaded.imports)
        record = Record(
            key=runs.key("synth", imports, {}),
            revision=revision,
            baseline=baseline_id(baseline),
            outputs={path: _sha(data) for path, data in files.items()},
            rendered=rendered,
            imports=imports,
            warnings=[str(w) for w in plan.warnings],
        )
        runs.save("synth", record)
    return Output(files, plan, changes, baseline, loaded.notices, effective, runs, record)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _to_compare(
    origins: dict[str, Definition],
    rendered: dict[str, str],
    baseline: Baseline,
    last: Record | None,
) -> dict[str, Definition]:
    """The job and runtime files to compare with their deployed versions.

    Keeping deployed bytes and refusing in-place changes depend only on a file's rendered
    bytes and its deployed bytes. So against the same commit as the last run, a file
    rendered exactly as then, which then kept its own bytes, gets the same verdict (none,
    or the run would have failed) without reading git; every other file is compared.
    """
    if last is None or baseline.git is None or last.baseline != baseline_id(baseline):
        return origins
    return {
        path: d
        for path, d in origins.items()
        if not (last.rendered.get(path) == rendered[path] == last.outputs.get(path))
    }


@dataclass(frozen=True)
class _ReadOnce(Baseline):
    """A git baseline whose files are read once per run: keeping deployed bytes, refusing
    in-place changes and validating transition rules all ask for the same files."""

    read: dict[str, bytes | None] = field(default_factory=dict, repr=False, compare=False)

    def read_many(self, paths: Iterable[str]) -> dict[str, bytes]:
        wanted = list(paths)
        unknown = [p for p in wanted if p not in self.read]
        if unknown:
            got = super().read_many(unknown)
            self.read.update((p, got.get(p)) for p in unknown)
        return {p: data for p in wanted if (data := self.read[p]) is not None}


def _read_once(baseline: Baseline) -> Baseline:
    if baseline.git is None:
        return baseline  # the files on disk, or nothing
    return _ReadOnce(baseline.description, baseline.directory, baseline.git, baseline.nothing)


def _display(path: Path, root: Path) -> str:
    # The parent resolved, not the directory: a symlinked output is named as the user wrote it.
    full = Path(os.path.abspath(path))
    try:
        return (full.parent.resolve() / full.name).relative_to(root.resolve()).as_posix() + "/"
    except ValueError:
        return path.as_posix()
