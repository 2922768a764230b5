"""Plan → every file of the generated tree: objects rendered, serialized through cdk8s,
headed, and each cluster's kustomization over the files it holds."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import yaml

from .. import health
from ..effective import EffectiveJob, effective_job
from ..errors import DefinitionError, escape_char
from ..load import Definition
from ..policy import check_policy
from ..render import argocd as render_argocd
from ..render.cluster_scoped import render_namespace, render_queue
from ..render.kubeflow_trainer import render_runtime, render_trainjob
from ..render.kuberay import render_rayjob
from ..render.kueue_objects import render_cluster_queue, render_local_queue, render_resource_flavor
from ..render.kustomize import (
    KUSTOMIZE_CONFIG,
    KUSTOMIZE_OPENAPI,
    cluster_scoped_openapi,
    kustomization,
    kustomize_config,
)
from ..render.mpi_operator import render_mpijob
from ..render.paddle import render_paddlejob
from ..render.script import render_script_configmap
from ..render.tensorflow import render_tfjob
from ..render.training_operator import render_pytorchjob
from ..repo_root import DEFAULT_COMMAND
from ..resolve import ClusterPlan, Plan, PlannedJob, PlannedRuntime
from ..serialize import YamlCache, to_yaml
from ..write import HEADER_PREFIX
from .patching import apply_patches, patched_problems
from .rendered import Groups, Rendered

__all__ = [
    "Groups",
    "Rendered",
    "check_cluster_truth",
    "effective_jobs",
    "header",
    "render_files",
    "render_groups",
    "rendered_runtimes",
]


def header(source: str, command: str) -> str:
    """The two comment lines of a generated file. The definition's path and the command
    are user text: shown as printable ASCII (everything else, and ``\\``, escaped as in a
    Python string), so that no reader ends the comment early (a line break, or NEL, LS
    and PS, which YAML 1.1 readers such as kustomize's and Argo CD's take for one)."""
    return (
        f"{HEADER_PREFIX.decode()} from {_comment(source)}. Do not edit.\n"
        f"# Regenerate with: {_comment(command)}\n"
    )


def _comment(text: str) -> str:
    if text.isascii() and text.isprintable() and "\\" not in text:
        return text
    return "".join(
        ch if " " <= ch <= "~" and ch != "\\" else "\\\\" if ch == "\\" else escape_char(ch)
        for ch in text
    )


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


def render_groups(plan: Plan) -> Groups:
    """Every object of the tree as a plain dict, one group per cluster (and Argo CD)."""
    groups: Groups = [(cp.cluster.name, list(_cluster_objects(cp))) for cp in plan.clusters]
    argo = [
        Rendered(f.path, f.body, f.source, plain=f.kustomize)
        for f in render_argocd.argocd_files(plan, health.health_checks())
    ]
    if argo:
        groups.append(("argocd", argo))
    return apply_patches(plan, groups)


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
        raise DefinitionError(patched_problems(problems, groups))
    return jobs


def render_files(
    plan: Plan,
    cache: YamlCache,
    origins: dict[str, Definition] | None = None,
    groups: Groups | None = None,
    command: str = DEFAULT_COMMAND,
    kept: Mapping[str, bytes] | None = None,
) -> dict[str, bytes]:
    """Every file of the generated tree, as bytes (deterministic for a given plan).

    ``origins``, when given, receives the definition of each job and runtime file;
    ``command`` is the one the headers say regenerates the tree; ``kept`` are files of the
    last run reused as they are (``synth.delta``), listed in the kustomizations like the rest.
    """
    if groups is None:
        groups = render_groups(plan)
    # Kubernetes objects go through cdk8s; kustomize's own files are plain YAML.
    objects = [(chart, [r for r in items if not r.plain]) for chart, items in groups]
    texts = to_yaml([(chart, [r.body for r in items]) for chart, items in objects], cache)
    files: dict[str, bytes] = dict(kept or {})
    for (_, items), group_texts in zip(objects, texts, strict=True):
        for r, text in zip(items, group_texts, strict=True):
            files[r.path] = (header(r.source, command) + text).encode("utf-8")
            if origins is not None and r.definition is not None:
                origins[r.path] = r.definition
    for r in (r for _, items in groups for r in items if r.plain):
        files[r.path] = (header(r.source, command) + _dump(r.body)).encode("utf-8")
    for cp in plan.clusters:
        base = f"clusters/{cp.cluster.name}/"
        paths = sorted(p.removeprefix(base) for p in files if p.startswith(base))
        for name, source, body in (
            ("kustomization.yaml", "jobs/", kustomization(paths, cluster=True)),
            (KUSTOMIZE_CONFIG, "trainkit", kustomize_config()),
            (KUSTOMIZE_OPENAPI, "trainkit", cluster_scoped_openapi()),
        ):
            files[base + name] = (header(source, command) + _dump(body)).encode("utf-8")
    return {k: files[k] for k in sorted(files)}
