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

import os
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from . import health
from .deployed.baseline import Baseline, resolve_baseline
from .deployed.inplace import keep_deployed, refuse_in_place_changes
from .effective import EffectiveJob, effective_job
from .errors import DefinitionError
from .load import Definition, LoadOptions, load_jobs
from .plan import ClusterPlan, Plan, PlannedJob, PlannedRuntime, build_plan
from .policy import check_policy
from .render import argocd as render_argocd
from .render.cluster_scoped import render_namespace, render_queue
from .render.kubeflow_trainer import render_runtime, render_trainjob
from .render.kustomize import (
    KUSTOMIZE_CONFIG,
    KUSTOMIZE_OPENAPI,
    cluster_scoped_openapi,
    kustomization,
    kustomize_config,
)
from .render.script import render_script_configmap
from .render.training_operator import render_pytorchjob
from .serialize import YamlCache, prewarm, to_yaml
from .write import HEADER_PREFIX, Changes, compare_tree, write_tree

__all__ = ["Output", "Rendered", "render_files", "render_objects", "synth_command", "synthesize"]

DEFAULT_COMMAND = "trainkit synth"
CACHE_FILE = Path(".trainkit") / "yaml-cache.json"


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


def synth_command(root: Path) -> str:
    """The command that regenerates the tree of the repository at ``root``.

    ``$TRAINKIT_SYNTH_COMMAND``, else ``synth-command`` under ``[tool.trainkit]`` of the
    repository's ``pyproject.toml`` (trainkit's own says ``make synth``), else
    ``trainkit synth``. Headers and messages name it, so they hold in every checkout
    whichever way a run was started.
    """
    explicit = os.environ.get("TRAINKIT_SYNTH_COMMAND")
    if explicit:
        return explicit
    try:
        with (root / "pyproject.toml").open("rb") as fh:
            config = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError):
        return DEFAULT_COMMAND
    tool = config.get("tool")
    section = tool.get("trainkit") if isinstance(tool, dict) else None
    command = section.get("synth-command") if isinstance(section, dict) else None
    return command if isinstance(command, str) and command.strip() else DEFAULT_COMMAND


def _header(source: str, command: str) -> str:
    return f"{HEADER_PREFIX.decode()} from {source}. Do not edit.\n# Regenerate with: {command}\n"


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
        body = render_trainjob(pj) if pj.kind == "TrainJob" else render_pytorchjob(pj)
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
    cache_path: Path | None = None,
    use_cache: bool = True,
    against: str | None = None,
    load_options: LoadOptions | None = None,
    require_baseline: bool = False,
) -> Output:
    """Load, plan and render; then write ``out_dir`` atomically (or only compare, with check).

    Nothing is written when a job or runtime would change where the cluster
    forbids it, compared with the deployed tree: git revision ``against``, or
    by default what Argo CD follows (see ``deployed.resolve_baseline``).
    The YAML cache lives in ``<root>/.trainkit/`` unless ``cache_path`` says otherwise.
    """
    root = root or jobs_dir.resolve().parent
    if use_cache and cache_path is None:
        cache_path = root / CACHE_FILE
    cache = YamlCache(cache_path if use_cache else None)
    # Node starts while the definitions run (in processes forked before its thread exists).
    loaded = load_jobs(
        jobs_dir, root, options=load_options, while_loading=prewarm if cache.empty else None
    )
    plan = build_plan(loaded.definitions)
    groups = render_groups(plan)
    effective = check_cluster_truth(plan, groups)
    origins: dict[str, Definition] = {}
    files = render_files(plan, cache, origins, groups, synth_command(root))
    revision = plan.argocd.revision if plan.argocd else "main"
    baseline = resolve_baseline(root, out_dir, against, revision, require=require_baseline)
    keep_deployed(files, origins, baseline)
    refuse_in_place_changes(files, origins, baseline)
    if check:
        changes = compare_tree(out_dir, files)
    else:
        changes = write_tree(out_dir, files, display=_display(out_dir, root))
    cache.save()
    return Output(files, plan, changes, baseline, loaded.notices, effective)


def _display(path: Path, root: Path) -> str:
    # The parent resolved, not the directory: a symlinked output is named as the user wrote it.
    full = Path(os.path.abspath(path))
    try:
        return (full.parent.resolve() / full.name).relative_to(root.resolve()).as_posix() + "/"
    except ValueError:
        return path.as_posix()
