"""Argo CD objects for ``generated/argocd/``.

Pure functions: plain values in, plain dicts out, keys in manifest order (apiVersion, kind,
metadata, spec). Nothing here reads files; the caller passes the Lua health checks in
(:func:`trainkit.health.health_checks`) and serializes the results.

What ``generated/argocd/`` holds (:func:`argocd_files`)::

    kustomization.yaml            what the root Application syncs (and an admin applies once)
    root-application.yaml         the root Application: syncs generated/argocd/ itself
    root-appproject.yaml          its AppProject: Applications and AppProjects in Argo CD's namespace
    appproject.yaml               the AppProject of the cluster Applications
    application-<cluster>.yaml    one Application per cluster, syncing generated/clusters/<cluster>/
    components/health-checks/     a kustomize Component patching the Lua health checks into argocd-cm
    argocd-operator/resource-health-checks.yaml
                                  the same checks as an ArgoCD CR's spec.resourceHealthChecks

Why one self-managing root Application and not an ApplicationSet: clusters are not the only
thing a pull request changes here. A new team adds a namespace to the AppProject's
destinations, a trainkit upgrade changes the Applications' ignoreDifferences or sync options;
an ApplicationSet applied by hand would create Applications for new clusters but leave its
own template and the AppProject as they were on the day it was applied. The root
Application syncs all of ``generated/argocd/`` (itself included), so every change, a cluster
added or removed included, is a pull request and nothing else. Each cluster's Application is
then a plain rendered object, so "server or name, never both" is decided here in Python
rather than in a goTemplate/templatePatch.
"""

from __future__ import annotations

import copy
import posixpath
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..resolve import Plan
from .meta import MANAGED_BY, SYNC_WAVE

__all__ = [
    "API_VERSION",
    "BOOTSTRAP_FIELD_MANAGER",
    "CLUSTER_KINDS",
    "COMPONENT_DIR",
    "HEALTH_CHECKS_FIELD_MANAGER",
    "IGNORE_DIFFERENCES",
    "IN_CLUSTER",
    "NAMESPACE_ANNOTATIONS",
    "NAMESPACE_RESOURCE_WHITELIST",
    "OPERATOR_FILE",
    "RESOURCES_FINALIZER",
    "RETRY",
    "ROOT_SYNC_OPTIONS",
    "SYNC_OPTIONS",
    "ArgoFile",
    "ClusterTarget",
    "application_name",
    "argocd_files",
    "project_destinations",
    "render_app_project",
    "render_application",
    "render_health_component",
    "render_health_patch",
    "render_operator_health_checks",
    "render_root_app_project",
    "render_root_application",
    "root_application_name",
    "root_project_name",
]

API_VERSION = "argoproj.io/v1alpha1"

# The in-cluster destination, where Argo CD itself runs and keeps its Applications
# (pkg/apis/application/v1alpha1/application_defaults.go KubernetesInternalAPIServerAddr).
IN_CLUSTER = "https://kubernetes.default.svc"

# With this finalizer, deleting an Application deletes the objects it synced
# (controller/appcontroller.go finalizeApplicationDeletion); pkg/apis/application/v1alpha1/
# application_defaults.go ResourcesFinalizerName.
RESOURCES_FINALIZER = "resources-finalizer.argocd.argoproj.io"

# Argo CD's own server-side apply field manager (common/common.go ArgoCDSSAManager). The
# bootstrap apply uses it too, so Argo CD owns every field from the first apply and a field
# that later leaves git is removed, not kept alive by a second manager.
BOOTSTRAP_FIELD_MANAGER = "argocd-controller"

# The manager for `kubectl apply --server-side` of the argocd-cm patch: it owns only the
# health-check keys, so re-applying it never removes keys an admin or the install set.
HEALTH_CHECKS_FIELD_MANAGER = "trainkit-health-checks"

# Namespaces outlive the Application: automated prune skips an object whose live copy says
# Prune=false (gitops-engine/pkg/sync/sync_context.go isPruningDisabled), and deleting the
# Application skips one saying Delete=false (controller/appcontroller.go shouldBeDeleted).
# Options are comma-separated "Key=value" items, matched exactly after trimming
# (gitops-engine/pkg/sync/resource/annotations.go GetAnnotationOptionValue). A team that
# leaves a cluster thus keeps its namespace there, with PVCs trainkit does not own;
# IgnoreExtraneous keeps that left-behind namespace from marking the Application OutOfSync
# forever (controller/state.go: an extraneous live object with it does not change syncCode).
NAMESPACE_ANNOTATIONS: Mapping[str, str] = {
    "argocd.argoproj.io/sync-options": "Prune=false,Delete=false",
    "argocd.argoproj.io/compare-options": "IgnoreExtraneous",
}

# No CreateNamespace=true: trainkit emits the v1 Namespace objects itself, so Argo CD tracks
# and diffs them like everything else. ServerSideApply because the training CRs can outgrow
# the 262144-byte last-applied annotation and because Kueue co-owns fields;
# RespectIgnoreDifferences so the fields below are left alone on sync too, not only in the diff.
SYNC_OPTIONS: tuple[str, ...] = ("ServerSideApply=true", "RespectIgnoreDifferences=true")
ROOT_SYNC_OPTIONS: tuple[str, ...] = ("ServerSideApply=true",)

# A failed automated sync is not re-attempted for the same revision once its retries are
# spent (controller/appcontroller.go autoSync, alreadyAttemptedSync). A new team's first sync
# can fail with "namespace ... is not permitted in project" until the root Application has
# applied the AppProject that lists it; both refresh on their own timers (up to ~3 minutes
# apart), so the retries must outlast that: 10 attempts, capped at 3 minutes apart, ~20
# minutes in all. refresh: each retry syncs the newest revision, so a fix committed during
# the retries is picked up instead of waiting for them to run out.
RETRY: Mapping[str, Any] = {
    "limit": 10,
    "backoff": {"duration": "5s", "factor": 2, "maxDuration": "3m"},
    "refresh": True,
}

# Fields that Kueue writes on admission / preemption; without these, self-heal would fight it.
IGNORE_DIFFERENCES: tuple[Mapping[str, Any], ...] = (
    {
        "group": "kubeflow.org",
        "kind": "PyTorchJob",
        "jsonPointers": ["/spec/runPolicy/suspend"],
    },
    *(
        {"group": "kubeflow.org", "kind": kind, "jsonPointers": ["/spec/runPolicy/suspend"]}
        for kind in ("MPIJob", "TFJob", "PaddleJob")
    ),
    # Kueue toggles a RayJob's spec.suspend (kuberay rayjob_types.go: with
    # shutdownAfterJobFinishes, which trainkit writes).
    {"group": "ray.io", "kind": "RayJob", "jsonPointers": ["/spec/suspend"]},
    {
        "group": "trainer.kubeflow.org",
        "kind": "TrainJob",
        "jsonPointers": ["/spec/suspend"],
        # Kueue (>= v0.17) also adds its own runtimePatches entry to admitted TrainJobs.
        "jqPathExpressions": [
            '.spec.runtimePatches[] | select(.manager == "kueue.x-k8s.io/manager")'
        ],
    },
)

# Cluster-scoped kinds other than Namespace, permitted by kind. Not by name: a live object
# the project does not permit is dropped from the Application's managed objects
# (controller/state.go CompareAppState, IsLiveResourcePermitted), so a queue or runtime whose
# name left both git and the project would never be pruned. Namespaces are permitted by name
# (see render_app_project): they are never pruned anyway.
CLUSTER_KINDS: tuple[tuple[str, str], ...] = (
    ("kueue.x-k8s.io", "ClusterQueue"),
    ("kueue.x-k8s.io", "ResourceFlavor"),
    ("scheduling.volcano.sh", "Queue"),
    ("trainer.kubeflow.org", "ClusterTrainingRuntime"),
)
# (group, kind); "" is the core API group.
NAMESPACE_RESOURCE_WHITELIST: tuple[tuple[str, str], ...] = (
    ("", "ConfigMap"),
    ("batch.paddlepaddle.org", "PaddleJob"),
    ("kubeflow.org", "MPIJob"),
    ("kubeflow.org", "PaddleJob"),
    ("kubeflow.org", "PyTorchJob"),
    ("kubeflow.org", "TFJob"),
    ("kueue.x-k8s.io", "LocalQueue"),
    ("ray.io", "RayJob"),
    ("trainer.kubeflow.org", "TrainJob"),
    ("trainer.kubeflow.org", "TrainingRuntime"),
)

# The root Application manages only Argo CD objects in Argo CD's namespace.
_ROOT_KINDS: tuple[tuple[str, str], ...] = (
    ("argoproj.io", "AppProject"),
    ("argoproj.io", "Application"),
)

# AppProjects sync after the Applications. Removing a cluster prunes its Application, whose
# finalizer deletes only the objects the project still permits (controller/appcontroller.go
# finalizeApplicationDeletion → getPermittedAppLiveObjects); the root's sync waits until a
# pruned object is gone (gitops-engine/pkg/sync/sync_context.go, "pruned tasks pending
# deletion") before the next wave, so the cluster leaves the project only once its objects
# are deleted. A new cluster's Application waits the other way round without harm: until the
# project lists it, Argo CD reports InvalidSpecError and attempts no sync
# (controller/appcontroller.go refreshAppConditions). This relies on
# Applications having no health (Argo CD's default since 1.8, docs/operator-manual/health.md;
# resource_customizations/argoproj.io/Application has no health.lua): with a health check for
# them, the root would wait in the Applications' wave for every running job to end.
_PROJECT_WAVE = "1"

_HEALTH_KEY_PREFIX = "resource.customizations.health."
_MANAGED_BY = {MANAGED_BY: "trainkit"}

_ROOT_DIR = "argocd"
COMPONENT_DIR = f"{_ROOT_DIR}/components/health-checks"
"""The Component's directory. Not directly below ``argocd/``: a Component cannot be built
on its own, and ``trainkit check`` builds every ``<dir>/<dir>/kustomization.yaml``."""
OPERATOR_FILE = f"{_ROOT_DIR}/argocd-operator/resource-health-checks.yaml"


@dataclass(frozen=True)
class ArgoFile:
    """One file of ``generated/argocd/``."""

    path: str
    body: dict[str, Any]
    source: str
    """The definition file (or directory) the file is generated from, for its header."""
    kustomize: bool = False
    """A kustomize file (written like the cluster kustomizations), not a manifest."""


def application_name(cluster: str) -> str:
    """The Application name for a cluster: ``trainkit-<cluster>``."""
    return f"trainkit-{cluster}"


def root_application_name() -> str:
    """The root Application's name; no cluster's Application can have it (``trainkit-…``)."""
    return "trainkit"


def root_project_name(project: str) -> str:
    """The root Application's AppProject: never the cluster Applications' project."""
    return f"{project}-root"


def _metadata(
    name: str,
    namespace: str,
    *,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    finalizers: Sequence[str] = (),
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = dict(labels)
    if annotations:
        metadata["annotations"] = dict(annotations)
    if finalizers:
        metadata["finalizers"] = list(finalizers)
    return metadata


def _cluster_ref(server: str | None, name: str | None, *, what: str) -> dict[str, str]:
    """``{"server": ...}`` or ``{"name": ...}``: Argo CD rejects both and neither."""
    if server is not None and name is not None:
        raise ValueError(f"{what}: give the cluster as server or as name, not both")
    if server is None and name is None:
        raise ValueError(f"{what}: give the cluster as server or as name")
    key, value = ("server", server) if server is not None else ("name", name)
    if not value:
        raise ValueError(f"{what}: {key} must not be empty")
    return {key: value}


def _group_kinds(items: Iterable[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"group": group, "kind": kind} for group, kind in items]


def _sync_policy(sync_options: Sequence[str]) -> dict[str, Any]:
    return {
        "automated": {"prune": True, "selfHeal": True},
        "syncOptions": list(sync_options),
        "retry": copy.deepcopy(dict(RETRY)),
    }


def render_application(
    *,
    cluster: str,
    server: str | None,
    destination_name: str | None,
    repo_url: str,
    revision: str,
    path: str,
    project: str,
    argocd_namespace: str,
    labels: Mapping[str, str],
) -> dict[str, Any]:
    """The Argo CD ``Application`` that syncs one cluster's kustomization.

    Exactly one of ``server`` (API server URL) and ``destination_name`` (a cluster name
    registered in Argo CD) must be given, else ``ValueError``. ``path`` is the directory in
    the repository, e.g. ``generated/clusters/<cluster>``.

    ``spec.destination.namespace`` stays empty: every namespaced object trainkit emits names
    its own namespace, and Argo CD refuses a namespaced object without one when the
    destination has none (controller/state.go: "Namespace for ... is missing."). The
    project permits that empty namespace explicitly, see :func:`project_destinations`.
    """
    destination = _cluster_ref(server, destination_name, what=f"Application for {cluster!r}")
    return {
        "apiVersion": API_VERSION,
        "kind": "Application",
        "metadata": _metadata(
            application_name(cluster),
            argocd_namespace,
            labels=labels,
            finalizers=[RESOURCES_FINALIZER],
        ),
        "spec": {
            "project": project,
            "source": {"repoURL": repo_url, "targetRevision": revision, "path": path},
            "destination": destination,
            "syncPolicy": _sync_policy(SYNC_OPTIONS),
            "ignoreDifferences": [copy.deepcopy(dict(item)) for item in IGNORE_DIFFERENCES],
        },
    }


def render_root_application(
    *,
    repo_url: str,
    revision: str,
    path: str,
    project: str,
    argocd_namespace: str,
    labels: Mapping[str, str],
) -> dict[str, Any]:
    """The root ``Application``: syncs ``path`` (``generated/argocd``), itself included.

    No resources finalizer, unlike the cluster Applications: deleting the root by mistake
    must not cascade into deleting every cluster's Application and, through their
    finalizers, every job. Without it, the cluster Applications stay and keep syncing.
    """
    return {
        "apiVersion": API_VERSION,
        "kind": "Application",
        "metadata": _metadata(root_application_name(), argocd_namespace, labels=labels),
        "spec": {
            "project": project,
            "source": {"repoURL": repo_url, "targetRevision": revision, "path": path},
            "destination": {"server": IN_CLUSTER, "namespace": argocd_namespace},
            "syncPolicy": _sync_policy(ROOT_SYNC_OPTIONS),
        },
    }


@dataclass(frozen=True)
class ClusterTarget:
    """What the AppProject needs to know of a cluster."""

    server: str | None
    destination_name: str | None
    namespaces: tuple[str, ...]


def project_destinations(clusters: Iterable[ClusterTarget]) -> list[dict[str, str]]:
    """The AppProject destinations that permit trainkit's objects and nothing else.

    How Argo CD checks them (v3.5.1, ``pkg/apis/application/v1alpha1/app_project_types.go``):

    * ``IsDestinationPermitted`` / ``isDestinationMatched``: an entry matches when its
      ``server`` (or ``name``) glob matches the resolved cluster's server (or name) *and*
      its ``namespace`` glob matches the namespace asked about. Globs are gobwas/glob
      (``util/glob/glob.go``); ``"*"`` matches anything, and an empty pattern compiles to a
      matcher of the empty string only (gobwas/glob ``compiler.go``: no children →
      ``match.Nothing``).
    * (a) The Application's own destination is checked with its ``destination.namespace``
      (``util/argo/argo.go ValidatePermissions``; also ``server/application``): trainkit
      leaves it empty, so each cluster gets one entry with ``namespace: ""``. That entry
      permits no object: a namespaced object without a namespace is refused anyway
      (``controller/state.go``, "Namespace for … is missing").
    * Each namespaced object is checked by its own namespace at sync
      (``controller/sync.go validateSyncPermissions``) and when its live copy is compared
      (``controller/state.go`` via ``IsLiveResourcePermitted``): one entry per namespace
      trainkit generates on that cluster.
    * (b) Cluster-scoped objects (Namespace, Queue, ClusterTrainingRuntime) are never
      matched against destinations (``IsResourcePermitted`` checks destinations only when
      the namespace is not empty; ``validateSyncPermissions`` only when the kind is
      namespaced); only ``clusterResourceWhitelist`` applies, see :func:`render_app_project`.
    """
    destinations: list[dict[str, str]] = []
    for target in clusters:
        ref = _cluster_ref(target.server, target.destination_name, what="cluster destination")
        destinations.append({**ref, "namespace": ""})
        destinations.extend({**ref, "namespace": ns} for ns in sorted(set(target.namespaces)))
    return destinations


def render_app_project(
    *,
    name: str,
    argocd_namespace: str,
    repo_url: str,
    destinations: Sequence[Mapping[str, str]],
    namespaces: Iterable[str],
    labels: Mapping[str, str],
) -> dict[str, Any]:
    """The ``AppProject`` of the cluster Applications.

    ``destinations`` are ``{"server" | "name": ..., "namespace": ...}`` entries, normally
    from :func:`project_destinations`; ``namespace`` is required and may be ``""`` (the
    Applications' own, empty, destination namespace). ``namespaces`` are the Namespace
    objects trainkit generates on any cluster: the whitelist names each of them, and has no
    Namespace entry at all when there are none (an entry without a name would permit every
    namespace: ``types.go isNamedResourceInList``).
    """
    if not destinations:
        raise ValueError(f"AppProject {name!r}: at least one destination is needed")
    rendered_destinations: list[dict[str, str]] = []
    for index, dest in enumerate(destinations):
        what = f"AppProject {name!r} destination #{index + 1}"
        unknown = sorted(set(dest) - {"server", "name", "namespace"})
        if unknown:
            raise ValueError(f"{what}: unknown keys {unknown}; allowed: server, name, namespace")
        entry = _cluster_ref(dest.get("server"), dest.get("name"), what=what)
        namespace = dest.get("namespace")
        if namespace is None:
            raise ValueError(f"{what}: namespace is required ('' for the empty namespace)")
        if namespace.startswith("!") or any(c in namespace for c in "*?[{"):
            raise ValueError(f"{what}: namespace {namespace!r} is a glob; name one namespace")
        entry["namespace"] = namespace
        rendered_destinations.append(entry)
    names = sorted(set(namespaces))
    if "" in names:
        raise ValueError(f"AppProject {name!r}: a Namespace name must not be empty")
    cluster_whitelist: list[dict[str, str]] = [
        {"group": "", "kind": "Namespace", "name": ns} for ns in names
    ]
    cluster_whitelist += _group_kinds(CLUSTER_KINDS)
    return {
        "apiVersion": API_VERSION,
        "kind": "AppProject",
        "metadata": _metadata(
            name, argocd_namespace, labels=labels, annotations={SYNC_WAVE: _PROJECT_WAVE}
        ),
        "spec": {
            "description": "trainkit: training jobs, runtimes and queues generated from Python",
            "sourceRepos": [repo_url],
            "destinations": rendered_destinations,
            "clusterResourceWhitelist": cluster_whitelist,
            "namespaceResourceWhitelist": _group_kinds(NAMESPACE_RESOURCE_WHITELIST),
        },
    }


def render_root_app_project(
    *, name: str, argocd_namespace: str, repo_url: str, labels: Mapping[str, str]
) -> dict[str, Any]:
    """The root Application's ``AppProject``: Applications and AppProjects, in Argo CD's
    namespace on its own cluster, from this repository; no cluster-scoped kind (an empty
    ``clusterResourceWhitelist`` permits none, a missing ``namespaceResourceWhitelist``
    would permit every namespaced kind: ``IsGroupKindNamePermitted``)."""
    return {
        "apiVersion": API_VERSION,
        "kind": "AppProject",
        "metadata": _metadata(
            name, argocd_namespace, labels=labels, annotations={SYNC_WAVE: _PROJECT_WAVE}
        ),
        "spec": {
            "description": "trainkit: the Argo CD objects of generated/argocd/",
            "sourceRepos": [repo_url],
            "destinations": [{"server": IN_CLUSTER, "namespace": argocd_namespace}],
            "namespaceResourceWhitelist": _group_kinds(_ROOT_KINDS),
        },
    }


def render_health_patch(*, argocd_namespace: str, checks: Mapping[str, str]) -> dict[str, Any]:
    """``argocd-cm`` carrying the Lua health checks (``{argocd-cm key: Lua source}``).

    Not a complete ``argocd-cm``: the Component applies it as a strategic-merge patch, and
    ``kubectl apply --server-side --field-manager=trainkit-health-checks`` applies it as a
    partial object; either way only these ``data`` keys are added or replaced.
    """
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "argocd-cm",
            "namespace": argocd_namespace,
            # Argo CD reads only ConfigMaps with this label (util/settings).
            "labels": {"app.kubernetes.io/part-of": "argocd"},
        },
        "data": dict(sorted(checks.items())),
    }


def render_health_component(patch_file: str) -> dict[str, Any]:
    """A kustomize ``Component`` patching ``patch_file`` into the install's ``argocd-cm``.

    The target selects by kind and name only: a Component runs before the including
    kustomization's ``namespace:`` transformer, so a patch naming a namespace would find no
    match in an install whose resources have none (and vice versa).
    """
    return {
        "apiVersion": "kustomize.config.k8s.io/v1alpha1",
        "kind": "Component",
        "patches": [
            {
                "path": patch_file,
                "target": {"version": "v1", "kind": "ConfigMap", "name": "argocd-cm"},
            }
        ],
    }


def render_operator_health_checks(checks: Mapping[str, str]) -> dict[str, Any]:
    """The checks as the ``spec.resourceHealthChecks`` of an argocd-operator ``ArgoCD`` CR.

    The operator rewrites ``argocd-cm``'s data wholesale on every reconcile and builds the
    health keys from these entries as ``resource.customizations.health.<group>_<kind>``
    (argocd-operator ``controllers/argocd/configmap.go`` reconcileArgoConfigMap,
    getResourceHealthChecks; fields ``group``, ``kind``, ``check`` in
    ``api/v1beta1/argocd_types.go`` ResourceHealthCheck). Only the fragment: the list is
    atomic in the CRD, so it is merged into the CR by hand, not applied over it.
    """
    entries = []
    for key, source in sorted(checks.items()):
        group_kind = key.removeprefix(_HEALTH_KEY_PREFIX)
        group, sep, kind = group_kind.partition("_")
        if not key.startswith(_HEALTH_KEY_PREFIX) or not (sep and group and kind):
            raise ValueError(f"health check key {key!r} is not {_HEALTH_KEY_PREFIX}<group>_<Kind>")
        entries.append({"group": group, "kind": kind, "check": source})
    return {"spec": {"resourceHealthChecks": entries}}


def argocd_files(plan: Plan, checks: Mapping[str, str]) -> list[ArgoFile]:
    """Every file of ``generated/argocd/``; none without an ``ArgoCD`` definition."""
    cfg, cdef = plan.argocd, plan.argocd_definition
    if cfg is None or cdef is None:
        return []
    platform_dir = posixpath.dirname(cdef.file) + "/"
    base = cfg.path.strip("/")
    synced: list[ArgoFile] = [
        ArgoFile(
            f"{_ROOT_DIR}/root-application.yaml",
            render_root_application(
                repo_url=cfg.repo_url,
                revision=cfg.revision,
                path=f"{base}/{_ROOT_DIR}",
                project=root_project_name(cfg.project),
                argocd_namespace=cfg.namespace,
                labels=_MANAGED_BY,
            ),
            cdef.file,
        ),
        ArgoFile(
            f"{_ROOT_DIR}/root-appproject.yaml",
            render_root_app_project(
                name=root_project_name(cfg.project),
                argocd_namespace=cfg.namespace,
                repo_url=cfg.repo_url,
                labels=_MANAGED_BY,
            ),
            cdef.file,
        ),
    ]
    targets: list[ClusterTarget] = []
    for cp in plan.clusters:
        c = cp.cluster
        namespaces = tuple(ns for ns, _, _ in cp.namespaces)
        targets.append(ClusterTarget(c.server, c.destination_name, namespaces))
        app = render_application(
            cluster=c.name,
            server=c.server,
            destination_name=c.destination_name,
            repo_url=cfg.repo_url,
            revision=cfg.revision,
            path=f"{base}/clusters/{c.name}",
            project=cfg.project,
            argocd_namespace=cfg.namespace,
            labels=_MANAGED_BY,
        )
        synced.append(ArgoFile(f"{_ROOT_DIR}/application-{c.name}.yaml", app, cp.definition.file))
    if targets:
        synced.append(
            ArgoFile(
                f"{_ROOT_DIR}/appproject.yaml",
                render_app_project(
                    name=cfg.project,
                    argocd_namespace=cfg.namespace,
                    repo_url=cfg.repo_url,
                    destinations=project_destinations(targets),
                    namespaces=(ns for t in targets for ns in t.namespaces),
                    labels=_MANAGED_BY,
                ),
                platform_dir,
            )
        )
    synced.sort(key=lambda f: f.path)
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [posixpath.relpath(f.path, _ROOT_DIR) for f in synced],
    }
    patch_file = "argocd-cm.yaml"
    return [
        *synced,
        ArgoFile(f"{_ROOT_DIR}/kustomization.yaml", kustomization, platform_dir, kustomize=True),
        ArgoFile(
            f"{COMPONENT_DIR}/{patch_file}",
            render_health_patch(argocd_namespace=cfg.namespace, checks=checks),
            cdef.file,
        ),
        ArgoFile(
            f"{COMPONENT_DIR}/kustomization.yaml",
            render_health_component(patch_file),
            cdef.file,
            kustomize=True,
        ),
        ArgoFile(OPERATOR_FILE, render_operator_health_checks(checks), cdef.file),
    ]
