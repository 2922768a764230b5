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
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from . import argocd
from .deployed import Baseline, resolve_baseline
from .inplace import refuse_in_place_changes
from .load import Definition, load_jobs
from .plan import ClusterPlan, Plan, build_plan
from .render import argocd as render_argocd
from .render.kustomize import (
    KUSTOMIZE_CONFIG,
    KUSTOMIZE_OPENAPI,
    cluster_scoped_openapi,
    kustomization,
    kustomize_config,
)
from .render.platform import render_namespace, render_queue
from .render.pytorchjob import render_pytorchjob
from .render.script import render_script_configmap
from .render.trainer import render_runtime, render_trainjob
from .serialize import YamlCache, prewarm, to_yaml
from .write import HEADER_PREFIX, Changes, compare_tree, write_tree

__all__ = ["Output", "Rendered", "render_files", "synthesize"]

DEFAULT_COMMAND = "make synth"
CACHE_FILE = Path(".trainkit") / "yaml-cache.json"


@dataclass(frozen=True)
class Rendered:
    path: str
    body: dict[str, Any]
    source: str
    definition: Definition | None = None
    """The job or runtime definition, for objects that may not change in place."""


@dataclass(frozen=True)
class Output:
    files: dict[str, bytes]
    plan: Plan
    changes: Changes
    baseline: Baseline
    """What the jobs and runtimes were compared with (the deployed tree)."""


def _header(source: str) -> str:
    command = os.environ.get("TRAINKIT_SYNTH_COMMAND") or DEFAULT_COMMAND
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
        yield Rendered(path, render_runtime(pr), pr.definition.file, pr.definition)
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
        )


def _dump(data: dict[str, Any]) -> str:
    return yaml.dump(data, Dumper=yaml.CSafeDumper, sort_keys=False, default_flow_style=False)


def render_files(
    plan: Plan, cache: YamlCache, origins: dict[str, Definition] | None = None
) -> dict[str, bytes]:
    """Every file of the generated tree, as bytes (deterministic for a given plan).

    ``origins``, when given, receives the definition of each job and runtime file.
    """
    groups: list[tuple[str, list[Rendered]]] = [
        (cp.cluster.name, list(_cluster_objects(cp))) for cp in plan.clusters
    ]
    argo = render_argocd.argocd_files(plan, argocd.health_checks())
    manifests = [Rendered(f.path, f.body, f.source) for f in argo if not f.kustomize]
    if manifests:
        groups.append(("argocd", manifests))
    texts = to_yaml([(chart, [r.body for r in items]) for chart, items in groups], cache)
    files: dict[str, str] = {}
    for (_, items), group_texts in zip(groups, texts, strict=True):
        for r, text in zip(items, group_texts, strict=True):
            files[r.path] = _header(r.source) + text
            if origins is not None and r.definition is not None:
                origins[r.path] = r.definition
    for cp in plan.clusters:
        base = f"clusters/{cp.cluster.name}/"
        paths = sorted(p.removeprefix(base) for p in files if p.startswith(base))
        files[base + "kustomization.yaml"] = _header("jobs/") + _dump(
            kustomization(paths, cluster=True)
        )
        files[base + KUSTOMIZE_CONFIG] = _header("trainkit") + _dump(kustomize_config())
        files[base + KUSTOMIZE_OPENAPI] = _header("trainkit") + _dump(cluster_scoped_openapi())
    for f in argo:
        if f.kustomize:
            files[f.path] = _header(f.source) + _dump(f.body)
    return {k: files[k].encode("utf-8") for k in sorted(files)}


def synthesize(
    jobs_dir: Path,
    out_dir: Path,
    *,
    root: Path | None = None,
    check: bool = False,
    cache_path: Path | None = None,
    use_cache: bool = True,
    against: str | None = None,
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
    if cache.empty:
        prewarm()
    plan = build_plan(load_jobs(jobs_dir, root))
    origins: dict[str, Definition] = {}
    files = render_files(plan, cache, origins)
    revision = plan.argocd.revision if plan.argocd else "main"
    baseline = resolve_baseline(root, out_dir, against, revision)
    refuse_in_place_changes(files, origins, baseline)
    if check:
        changes = compare_tree(out_dir, files)
    else:
        changes = write_tree(out_dir, files, display=_display(out_dir, root))
    cache.save()
    return Output(files, plan, changes, baseline)


def _display(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix() + "/"
    except ValueError:
        return path.as_posix()
