"""Plan → every file of the generated tree: objects rendered, serialized through cdk8s,
headed, each Application's kustomization over the files it holds, and each cluster's over
its Applications (see ``synth`` for the layout, ``synth.parts`` for the parts)."""

from __future__ import annotations

import dataclasses
import functools
import posixpath
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import yaml

from .. import health
from ..effective import EffectiveJob, effective_job
from ..errors import DefinitionError, escape_char
from ..load import Definition
from ..policy import check_policy
from ..render import argocd as render_argocd
from ..render.cluster_scoped import render_namespace, render_queue
from ..render.jax import render_jaxjob
from ..render.kubeflow_trainer import render_runtime, render_trainjob
from ..render.kuberay import render_raycluster, render_rayjob
from ..render.kueue_objects import (
    render_cluster_queue,
    render_local_queue,
    render_resource_flavor,
    render_workload_priority_class,
)
from ..render.kustomize import (
    KUSTOMIZE_CONFIG,
    KUSTOMIZE_OPENAPI,
    cluster_scoped_openapi,
    kustomization,
    kustomize_component,
    kustomize_config,
)
from ..render.meta import JOB_LABEL
from ..render.mpi_operator import render_mpijob
from ..render.paddle import render_paddlejob
from ..render.script import render_script_configmap, render_working_dir_configmap
from ..render.tensorflow import render_tfjob
from ..render.training_operator import render_pytorchjob
from ..render.xgboost import render_xgboostjob
from ..repo_root import DEFAULT_COMMAND
from ..resolve import ClusterPlan, Plan, PlannedJob, PlannedRuntime, problem
from ..serialize import YamlCache, to_yaml
from ..write import HEADER_PREFIX
from .parts import (
    COMPONENT_DIR,
    PLATFORM_DIR,
    AppDir,
    app_dirs,
    logical_path,
    place,
    team_file,
    unit_key,
)
from .patching import apply_patches, patched_problems
from .rendered import Groups, Rendered

__all__ = [
    "Groups",
    "KeptMoved",
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
    "XGBoostJob": render_xgboostjob,
    "JAXJob": render_jaxjob,
    "RayJob": render_rayjob,
    "RayCluster": render_raycluster,
    "TrainJob": render_trainjob,
}


def _cluster_objects(cp: ClusterPlan) -> Iterator[Rendered]:
    """Every object of a cluster: the platform's below ``platform/``, each team's job and
    its ConfigMap at its logical path ``<namespace>/<file>`` (``synth.parts`` places it)."""
    base = f"clusters/{cp.cluster.name}"
    platform = f"{base}/{PLATFORM_DIR}"
    for ns, team, source in cp.namespaces:
        yield Rendered(
            f"{platform}/namespaces/{ns}.yaml",
            render_namespace(namespace=ns, team=team, source=source),
            source,
        )
    for pq in cp.queues:
        yield Rendered(
            f"{platform}/queues/{pq.queue.name}.yaml",
            render_queue(pq, cp.cluster),
            pq.definition.file,
        )
    for flavor in cp.kueue.flavors:
        yield Rendered(
            f"{platform}/kueue/resourceflavor-{flavor.obj.name}.yaml",
            render_resource_flavor(flavor),
            flavor.file,
        )
    for cq in cp.kueue.cluster_queues:
        namespaces = cp.kueue.namespaces.get(cq.obj.name, ())
        yield Rendered(
            f"{platform}/kueue/clusterqueue-{cq.obj.name}.yaml",
            render_cluster_queue(cq, cp.cluster, namespaces),
            cq.file,
        )
    for wpc in cp.kueue.workload_priorities:
        yield Rendered(
            f"{platform}/kueue/workloadpriorityclass-{wpc.obj.name}.yaml",
            render_workload_priority_class(wpc),
            wpc.file,
        )
    for ns, lq, tdef in cp.kueue.local_queues:
        owner = tdef.obj.name  # type: ignore[attr-defined]
        yield Rendered(
            f"{platform}/{ns}/localqueue-{lq}.yaml",
            render_local_queue(ns, lq, owner, tdef.file),
            tdef.file,
        )
    for pr in cp.runtimes:
        path = (
            f"{platform}/{pr.namespace}/trainingruntime-{pr.runtime.name}.yaml"
            if pr.namespace
            else f"{platform}/runtimes/{pr.runtime.name}.yaml"
        )
        yield Rendered(path, render_runtime(pr), pr.definition.file, pr.definition, pr)
    for pj in cp.jobs:
        for cm in (render_script_configmap(pj), render_working_dir_configmap(pj)):
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


@functools.cache
def _component_texts() -> tuple[str, str, str]:
    """The YAML of the Component's three files, the same for every cluster and every run
    (the configuration alone took 5 ms to write, once per cluster)."""
    return (
        _dump(kustomize_component()),
        _dump(kustomize_config()),
        _dump(cluster_scoped_openapi()),
    )


class KeptMoved(Exception):
    """A kept file of the last run (``synth.delta``) would now be in another part."""


def render_groups(
    plan: Plan, *, deployed: Iterable[str] = (), kept: Mapping[str, bytes] | None = None
) -> Groups:
    """Every object of the tree as a plain dict at its path, one group per cluster (and
    Argo CD's).

    Each team's jobs are placed in parts (``synth.parts``), keeping the parts of the
    ``deployed`` tree's paths; ``kept`` are files of the last run reused as they are
    (``synth.delta``), placed with the rest: KeptMoved when one would move.
    """
    _check_directories(plan)
    clusters = [(cp.cluster.name, list(_cluster_objects(cp))) for cp in plan.clusters]
    keys: dict[str, str] = {}
    for _, items in clusters:
        for r in items:
            if team_file(r.path) is not None:
                labels = r.body.get("metadata", {}).get("labels") or {}
                keys[r.path] = str(labels.get(JOB_LABEL, "\0" + r.path))
    kept_logical = {logical_path(path): path for path in kept or {}}
    for logical, path in kept_logical.items():
        keys[logical] = unit_key(logical, (kept or {})[path])
    placement = place(keys, deployed)
    if any(placement.path(logical) != path for logical, path in kept_logical.items()):
        raise KeptMoved
    groups: Groups = [
        (name, [dataclasses.replace(r, path=placement.path(r.path)) for r in items])
        for name, items in clusters
    ]
    paths = [r.path for _, items in groups for r in items] + list(kept or {})
    dirs = app_dirs(paths)
    dirs += [AppDir(cp.cluster.name, None) for cp in plan.clusters]
    sources = [
        render_argocd.AppSource(d.cluster, d.path, _generate_paths(d), d.namespace, d.part)
        for d in sorted(set(dirs), key=lambda d: (d.cluster, d.namespace or "", d.part))
    ]
    argo = [
        Rendered(f.path, f.body, f.source, plain=f.kustomize)
        for f in render_argocd.argocd_files(
            plan, health.health_checks(), sources, _team_kinds(plan, groups, kept or {})
        )
    ]
    _check_names(plan, argo)
    if argo:
        groups.append(("argocd", argo))
    return apply_patches(plan, groups)


def _generate_paths(d: AppDir) -> str:
    """What an Application's build reads, relative to its directory: a commit touching
    nothing else does not regenerate it. Part 1's directory holds the further parts, so it
    names its own files (a glob: ``*`` stops at ``/``)."""
    return "*.yaml" if d.namespace is not None and d.part == 1 else "."


_KIND = re.compile(rb"^apiVersion: (\S+)\nkind: (\S+)$", re.MULTILINE)


def _team_kinds(
    plan: Plan, groups: Groups, kept: Mapping[str, bytes]
) -> dict[str, set[tuple[str, str]]]:
    """The (group, kind) of each team's objects, for its AppProject."""
    team_of = {(cp.cluster.name, ns): team for cp in plan.clusters for ns, team, _ in cp.namespaces}
    out: dict[str, set[tuple[str, str]]] = defaultdict(set)

    def add(path: str, api_version: str, kind: str) -> None:
        found = team_file(path)
        team = team_of.get((found[0], found[1])) if found else None
        if team is not None:
            out[team].add((api_version.rpartition("/")[0], kind))

    for _, items in groups:
        for r in items:
            add(r.path, str(r.body.get("apiVersion", "")), str(r.body.get("kind", "")))
    for path, data in kept.items():
        m = _KIND.search(data, 0, 4096)
        if m is not None:
            add(path, m.group(1).decode(), m.group(2).decode())
    return dict(out)


def _check_names(plan: Plan, argo: list[Rendered]) -> None:
    """Refuse two Applications of one name (or file): Argo CD would apply one over the other."""
    owners: dict[str, list[str]] = defaultdict(list)
    for r in argo:
        if r.body.get("kind") == "Application":
            source = r.body["spec"]["source"]["path"]
            owners[r.body["metadata"]["name"]].append(source)
    files = [r.path for r in argo]
    clashes = sorted((name, paths) for name, paths in owners.items() if len(paths) > 1)
    cdef = plan.argocd_definition
    if cdef is None or (not clashes and len(set(files)) == len(files)):
        return
    raise DefinitionError(
        [
            problem(
                cdef,
                f"two Applications would be named {name!r} (syncing {' and '.join(paths)}): "
                "Argo CD would apply one over the other; rename a cluster or a team, or "
                "choose another project",
                "project",
            )
            for name, paths in clashes
        ]
        or [problem(cdef, f"two files of generated/argocd/ would clash: {sorted(files)}")]
    )


def _check_directories(plan: Plan) -> None:
    """A team's namespace names its directory beside ``platform/`` and ``kustomize/``."""
    problems = [
        problem(
            team.definition,
            f"namespace {ns!r} is the name of a directory trainkit writes beside the teams' "
            f"in generated/clusters/<cluster>/ ({PLATFORM_DIR}/, {COMPONENT_DIR}/); give the "
            "team another namespace",
            "namespace" if team.obj.namespace else "name",
        )
        for name, team in sorted(plan.index.teams.items())
        if (ns := team.obj.target_namespace) in (PLATFORM_DIR, COMPONENT_DIR)
    ]
    if problems:
        raise DefinitionError(problems)


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
    last run reused as they are (``synth.delta``; ``groups`` must have been rendered with
    them), listed in the kustomizations like the rest.
    """
    if groups is None:
        groups = render_groups(plan, kept=kept)
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
    files.update(_kustomize_files(plan, files, command))
    return {k: files[k] for k in sorted(files)}


def _kustomize_files(plan: Plan, files: Mapping[str, bytes], command: str) -> dict[str, bytes]:
    """Per cluster: each Application's kustomization over its own files, the Component, and
    the cluster's kustomization over its Applications."""
    out: dict[str, bytes] = {}
    owned: dict[str, list[str]] = defaultdict(list)
    for path in files:
        found = team_file(path)
        if found is not None:
            owned[posixpath.dirname(path)].append(posixpath.basename(path))
        elif path.startswith("clusters/") and path.split("/")[2:3] == [PLATFORM_DIR]:
            top = "/".join(path.split("/")[:3])
            owned[top].append(path.removeprefix(top + "/"))
    dirs = app_dirs(files)

    def put(path: str, source: str, body: dict[str, Any] | str) -> None:
        text = body if isinstance(body, str) else _dump(body)
        out[path] = (header(source, command) + text).encode("utf-8")

    component_text, config_text, openapi_text = _component_texts()

    for cp in plan.clusters:
        base = f"clusters/{cp.cluster.name}"
        apps = [AppDir(cp.cluster.name, None)] + [
            d for d in dirs if d.cluster == cp.cluster.name and d.namespace is not None
        ]
        for d in apps:
            listed = sorted(owned.get(d.path, []))
            put(
                f"{d.path}/kustomization.yaml",
                "jobs/",
                kustomization(listed, component=None),
            )
        component = f"{base}/{COMPONENT_DIR}"
        put(f"{component}/kustomization.yaml", "trainkit", component_text)
        put(f"{component}/{KUSTOMIZE_CONFIG}", "trainkit", config_text)
        put(f"{component}/{KUSTOMIZE_OPENAPI}", "trainkit", openapi_text)
        whole = [d.path.removeprefix(base + "/") for d in apps]
        put(f"{base}/kustomization.yaml", "jobs/", kustomization(whole, component=COMPONENT_DIR))
    return out
