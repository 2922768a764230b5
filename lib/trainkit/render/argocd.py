"""Argo CD objects for ``generated/argocd/``.

Pure functions: plain values in, plain dicts out, keys in manifest order (apiVersion, kind,
metadata, spec). Nothing here reads files; the caller passes the Lua health checks in
(:func:`trainkit.health.health_checks`) and the Application directories of the tree
(``synth.parts``), and serializes the results.

What ``generated/argocd/`` holds (:func:`argocd_files`)::

    kustomization.yaml            what the root Application syncs (and an admin applies once)
    root-application.yaml         the root Application: syncs generated/argocd/ itself
    root-appproject.yaml          its AppProject: Applications and AppProjects in Argo CD's namespace
    appproject.yaml               the platform's AppProject <project>
    appproject-team-<team>.yaml   each team's AppProject <project>-team-<team>
    application-<cluster>-platform.yaml
                                  per cluster, the platform's Application: namespaces, queues,
                                  runtimes, Kueue's objects (clusters/<cluster>/platform/)
    application-<cluster>-<team>[-part-<k>].yaml
                                  per cluster, one Application per part of each team's jobs
                                  (clusters/<cluster>/<namespace>[/part-<k>]/)
    application-<cluster>.yaml    only while ArgoCD(retire_cluster_applications=True): the
                                  retired per-cluster Application of trainkit up to 0.2
    components/health-checks/     a kustomize Component patching the Lua health checks into argocd-cm
    argocd-operator/resource-health-checks.yaml
                                  the same checks as an ArgoCD CR's spec.resourceHealthChecks

Why one self-managing root Application and not an ApplicationSet: clusters are not the only
thing a pull request changes here. A new team adds an AppProject and Applications, a
trainkit upgrade changes the Applications' ignoreDifferences or sync options; an
ApplicationSet applied by hand would create Applications but leave its own template and the
AppProjects as they were on the day it was applied. The root Application syncs all of
``generated/argocd/`` (itself included), so every change is a pull request and nothing else.

**What each AppProject bounds.** A team's Applications are in the team's AppProject, whose
destinations are only the team's namespace on each of the team's clusters, which permits no
cluster-scoped kind, and whose ``namespaceResourceWhitelist`` names the kinds trainkit
generates for the team. Argo CD checks every object of a sync against them
(``controller/sync.go`` validateSyncPermissions), so a team's Application cannot write
another team's namespace, a cluster-scoped object or another cluster, whatever its files
say. The platform's Applications are in the platform's AppProject.

**Ordering without Application health.** Argo CD waits for a child Application only when an
``argoproj.io_Application`` health check is configured (none by default since 1.8,
docs/operator-manual/health.md; v3.4 also changed how an Application's own health
aggregates, #25962), and trainkit adds none to a shared Argo CD. So nothing depends on sync
waves across Applications: a team's namespace, its queue and LocalQueue and the runtimes are
the platform Application's, and a team's Application only creates jobs and their
ConfigMaps. Until the platform's has synced, a team's first sync can fail ("namespaces ...
not found", Trainer's webhook refusing a TrainJob whose runtime does not exist); it is
retried (``TEAM_RETRY``) for longer than the platform's own retries last, so it succeeds as
soon as the platform does. An Application whose retries end in failure is retried by Argo CD
on the next commit: while it is OutOfSync, auto-sync compares revisions
(``controller/appcontroller.go``: ``shouldCompareRevisions``, ``alreadyAttemptedSync``),
so the commit that fixes the platform retries every team's too. Only then "Skipping
auto-sync: failed previous sync attempt" ends. A new team's Application waits without a
failed sync until the root has applied its AppProject: Argo CD reports InvalidSpecError and
attempts no sync (``refreshAppConditions``).

Minimum Argo CD: v3.2 (``syncPolicy.retry.refresh``; ``manifest-generate-paths`` globs are
older, v2.14). Read against v3.5.1.
"""

from __future__ import annotations

import copy
import hashlib
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
    "GENERATE_PATHS",
    "HEALTH_CHECKS_FIELD_MANAGER",
    "IGNORE_DIFFERENCES",
    "IN_CLUSTER",
    "MAX_NAME",
    "MIN_ARGOCD",
    "NAMESPACE_ANNOTATIONS",
    "OPERATOR_FILE",
    "PLATFORM_NAMESPACED_KINDS",
    "PYTORCHJOB_AUTOSCALED_REPLICAS",
    "RESOURCES_FINALIZER",
    "RETIRED_SYNC_OPTIONS",
    "RETRY",
    "ROOT_SYNC_OPTIONS",
    "SYNC_OPTIONS",
    "TEAM_RETRY",
    "AppSource",
    "ArgoFile",
    "ClusterTarget",
    "application_name",
    "argocd_files",
    "fit_name",
    "project_destinations",
    "render_app_project",
    "render_application",
    "render_health_component",
    "render_health_patch",
    "render_operator_health_checks",
    "render_retired_application",
    "render_root_app_project",
    "render_root_application",
    "render_team_app_project",
    "retired_application_name",
    "root_application_name",
    "root_project_name",
    "team_project_name",
]

API_VERSION = "argoproj.io/v1alpha1"
MIN_ARGOCD = "3.2"
"""The oldest Argo CD whose behaviour the generated objects rely on (``retry.refresh``)."""

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

# No CreateNamespace=true: trainkit emits the v1 Namespace objects itself (in the platform's
# Application; a team's AppProject permits no cluster-scoped kind, and the namespace Argo CD
# would create is checked against it: gitops-engine sync_context.go autoCreateNamespace, then
# the permission check of every task). ServerSideApply because the training CRs can outgrow
# the 262144-byte last-applied annotation and because Kueue co-owns fields;
# RespectIgnoreDifferences so the fields below are left alone on sync too, not only in the diff.
SYNC_OPTIONS: tuple[str, ...] = ("ServerSideApply=true", "RespectIgnoreDifferences=true")
ROOT_SYNC_OPTIONS: tuple[str, ...] = ("ServerSideApply=true",)
# A retired Application keeps every object when it is deleted, even by hand with cascade:
# Argo CD >= 3.4 reads Delete=false from the Application's own sync options when the object
# has none (controller/appcontroller.go shouldBeDeleted); older ones rely on the finalizer
# being gone.
RETIRED_SYNC_OPTIONS: tuple[str, ...] = (*SYNC_OPTIONS, "Delete=false")

# A failed automated sync is not re-attempted for the same revision once its retries are
# spent (controller/appcontroller.go autoSync, alreadyAttemptedSync: "Skipping auto-sync:
# failed previous sync attempt"). The root and the platform's Applications: 10 attempts,
# 5 s doubling up to 3 minutes apart, ~17 minutes in all. refresh: each retry syncs the
# newest revision, so a fix committed during the retries is picked up at once.
RETRY: Mapping[str, Any] = {
    "limit": 10,
    "backoff": {"duration": "5s", "factor": 2, "maxDuration": "3m"},
    "refresh": True,
}
# A team's Application waits for the platform's (its namespace, runtimes) and for the root
# (its AppProject, which both refresh on their own timers, up to ~3 minutes apart): 16
# attempts, ~35 minutes, outlast the platform's whole retries and one more refresh.
TEAM_RETRY: Mapping[str, Any] = {**RETRY, "limit": 16}

PYTORCHJOB_AUTOSCALED_REPLICAS = (
    "select(.spec.elasticPolicy.metrics != null) | .spec.pytorchReplicaSpecs.Worker.replicas"
)
"""The Worker count of a PyTorchJob whose autoscaler owns it (a jq path expression)."""

# Fields that Kueue writes on admission / preemption, and the autoscaler of an elastic
# PyTorchJob; without these, self-heal would fight them.
IGNORE_DIFFERENCES: tuple[Mapping[str, Any], ...] = (
    {
        "group": "kubeflow.org",
        "kind": "PyTorchJob",
        "jsonPointers": ["/spec/runPolicy/suspend"],
        # An autoscaled elastic PyTorchJob's Worker count is its HorizontalPodAutoscaler's
        # (training-operator v1.9 pkg/controller.v1/pytorch/hpa.go; the CRD's scale
        # subresource writes .spec.pytorchReplicaSpecs.Worker.replicas): git gives the count
        # it starts with, and self-heal must not scale it back. Only on jobs with
        # elasticPolicy.metrics, so a hand scale of any other job is still undone. Argo CD
        # wraps each expression in del() (util/argo/normalizers/diff_normalizer.go) for the
        # diff and, with RespectIgnoreDifferences, keeps the live value on sync
        # (controller/sync.go normalizeTargetResources; docs/user-guide/sync-options.md:
        # only for objects that exist, so a new job starts with git's count).
        "jqPathExpressions": [PYTORCHJOB_AUTOSCALED_REPLICAS],
    },
    *(
        {"group": "kubeflow.org", "kind": kind, "jsonPointers": ["/spec/runPolicy/suspend"]}
        for kind in ("MPIJob", "TFJob", "PaddleJob", "XGBoostJob", "JAXJob")
    ),
    # Kueue toggles a RayJob's spec.suspend (kuberay rayjob_types.go: with
    # shutdownAfterJobFinishes, which trainkit writes).
    {"group": "ray.io", "kind": "RayJob", "jsonPointers": ["/spec/suspend"]},
    # And a queued RayCluster's (kueue pkg/controller/jobs/raycluster/raycluster_controller.go
    # Suspend, RunWithPodSetsInfo).
    {"group": "ray.io", "kind": "RayCluster", "jsonPointers": ["/spec/suspend"]},
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

# The platform's cluster-scoped kinds, permitted by kind. Not by name: `name:` in
# clusterResourceWhitelist exists from Argo CD v3.3 (#24674), and an older CRD drops the field,
# which widens the entry to every name (types.go isNamedResourceInList: no name matches all).
# Nor would names help: a live object the project does not permit is dropped from the
# Application's managed objects (controller/state.go CompareAppState, IsLiveResourcePermitted),
# so a queue or runtime whose name left both git and the project would never be pruned.
CLUSTER_KINDS: tuple[tuple[str, str], ...] = (
    ("", "Namespace"),
    ("kueue.x-k8s.io", "ClusterQueue"),
    ("kueue.x-k8s.io", "ResourceFlavor"),
    ("kueue.x-k8s.io", "WorkloadPriorityClass"),
    ("scheduling.volcano.sh", "Queue"),
    ("trainer.kubeflow.org", "ClusterTrainingRuntime"),
)
# The namespaced kinds of the platform's Application, (group, kind); "" is the core group.
PLATFORM_NAMESPACED_KINDS: tuple[tuple[str, str], ...] = (
    ("kueue.x-k8s.io", "LocalQueue"),
    ("trainer.kubeflow.org", "TrainingRuntime"),
)

# The root Application manages only Argo CD objects in Argo CD's namespace.
_ROOT_KINDS: tuple[tuple[str, str], ...] = (
    ("argoproj.io", "AppProject"),
    ("argoproj.io", "Application"),
)

# AppProjects sync after the Applications. Removing a team from a cluster prunes its
# Applications there, whose finalizer deletes only the objects the project still permits
# (controller/appcontroller.go finalizeApplicationDeletion → getPermittedAppLiveObjects);
# the root's sync waits until a pruned object is gone (gitops-engine sync_context.go,
# "pruned tasks pending deletion") before the next wave, so the project narrows only once
# the jobs are deleted. A team's AppProject removed with the team is pruned last (PruneLast:
# prune waves run in reverse, which alone would delete the project first; sync_context.go
# getSyncTasks), so its Applications' finalizers still find it. A new Application waits the
# other way round without harm (InvalidSpecError until its project exists or lists it). This
# relies on Applications having no health (Argo CD's default since 1.8; with the
# argoproj.io_Application check, the root would wait in the Applications' wave for every
# running job to end).
_PROJECT_WAVE = "1"
_PRUNE_LAST = {"argocd.argoproj.io/sync-options": "PruneLast=true"}

# A commit regenerates only the Applications whose paths it touched
# (argocd.argoproj.io/manifest-generate-paths; util/app/path/path.go AppFilesHaveChanged:
# a path, a directory below which the file lies, or a filepath.Match glob; `;` separates).
GENERATE_PATHS = "argocd.argoproj.io/manifest-generate-paths"

MAX_NAME = 63
"""An Application's name is the value of the app.kubernetes.io/instance label where Argo CD
tracks objects by label (``application.resourceTrackingMethod: label``): at most 63
characters (Kubernetes label values)."""

_HEALTH_KEY_PREFIX = "resource.customizations.health."
_MANAGED_BY = {MANAGED_BY: "trainkit"}

_ROOT_DIR = "argocd"
COMPONENT_DIR = f"{_ROOT_DIR}/components/health-checks"
"""The Component's directory; an admin's to include, never synced by the root."""
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


@dataclass(frozen=True)
class AppSource:
    """One Application's directory of the generated tree (``synth.parts.AppDir``)."""

    cluster: str
    path: str
    """Relative to the generated tree, e.g. ``clusters/gpu-east/vision/part-2``."""
    generate_paths: str
    """Its ``manifest-generate-paths``, relative to ``path``."""
    namespace: str | None = None
    """The team's namespace; None for the platform's Application."""
    part: int = 1


def fit_name(name: str) -> str:
    """``name``, or when longer than ``MAX_NAME`` its first characters and a hash of it."""
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:10]
    return f"{name[: MAX_NAME - 11].rstrip('-')}-{digest}"


def application_name(project: str, cluster: str, team: str | None = None, part: int = 1) -> str:
    """``<project>-<cluster>-platform``, ``<project>-<cluster>-<team>`` and, for the
    further parts of a team's jobs, ``...-part-<k>``; shortened to ``MAX_NAME``."""
    name = f"{project}-{cluster}-{'platform' if team is None else team}"
    return fit_name(name if part == 1 else f"{name}-part-{part}")


def retired_application_name(cluster: str) -> str:
    """The per-cluster Application of trainkit up to 0.2 (``trainkit-<cluster>``, whatever
    the project)."""
    return f"trainkit-{cluster}"


def root_application_name() -> str:
    """The root Application's name (``trainkit``, whatever the project); the names of the
    others are checked against it (:func:`argocd_files`)."""
    return "trainkit"


def root_project_name(project: str) -> str:
    """The root Application's AppProject: never the other Applications' projects."""
    return f"{project}-root"


def team_project_name(project: str, team: str) -> str:
    """A team's AppProject."""
    return f"{project}-team-{team}"


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


def _sync_policy(
    sync_options: Sequence[str], retry: Mapping[str, Any] = RETRY, *, automated: bool = True
) -> dict[str, Any]:
    policy: dict[str, Any] = {}
    if automated:
        policy["automated"] = {"prune": True, "selfHeal": True}
    policy["syncOptions"] = list(sync_options)
    if automated:
        policy["retry"] = copy.deepcopy(dict(retry))
    return policy


def render_application(
    *,
    name: str,
    server: str | None,
    destination_name: str | None,
    repo_url: str,
    revision: str,
    path: str,
    project: str,
    argocd_namespace: str,
    labels: Mapping[str, str],
    namespace: str | None = None,
    generate_paths: str | None = None,
) -> dict[str, Any]:
    """An ``Application`` syncing one directory of the tree: a cluster's platform
    (``namespace`` None) or one part of a team's jobs there (``namespace`` the team's).

    Exactly one of ``server`` (API server URL) and ``destination_name`` (a cluster name
    registered in Argo CD) must be given, else ``ValueError``. ``path`` is the directory in
    the repository, e.g. ``generated/clusters/<cluster>/platform``.

    A team's Application names its namespace as the destination's: the team's AppProject
    permits that one (``util/argo/argo.go ValidatePermissions`` checks the Application's own
    destination). The platform's has none: its objects are cluster-scoped or name their own
    namespace, and Argo CD refuses a namespaced object without one when the destination has
    none (controller/state.go: "Namespace for ... is missing."); its project permits that
    empty namespace explicitly, see :func:`project_destinations`. Both carry the resources
    finalizer: an Application the root prunes deletes what it synced.
    """
    what = f"Application {name!r}"
    destination = _cluster_ref(server, destination_name, what=what)
    if namespace is not None:
        destination["namespace"] = namespace
    spec: dict[str, Any] = {
        "project": project,
        "source": {"repoURL": repo_url, "targetRevision": revision, "path": path},
        "destination": destination,
    }
    if namespace is None:
        spec["syncPolicy"] = _sync_policy(ROOT_SYNC_OPTIONS)
    else:
        spec["syncPolicy"] = _sync_policy(SYNC_OPTIONS, TEAM_RETRY)
        spec["ignoreDifferences"] = [copy.deepcopy(dict(item)) for item in IGNORE_DIFFERENCES]
    annotations = {GENERATE_PATHS: generate_paths} if generate_paths else None
    return {
        "apiVersion": API_VERSION,
        "kind": "Application",
        "metadata": _metadata(
            name,
            argocd_namespace,
            labels=labels,
            annotations=annotations,
            finalizers=[RESOURCES_FINALIZER],
        ),
        "spec": spec,
    }


def render_retired_application(
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
    """The per-cluster Application of trainkit up to 0.2, retired: no resources finalizer
    and no automated sync (so it neither applies, prunes nor deletes anything), and
    ``Delete=false``. The root applies it over the deployed one; the per-team Applications
    then take its objects over, and once they have, the root may prune it."""
    destination = _cluster_ref(server, destination_name, what=f"Application for {cluster!r}")
    return {
        "apiVersion": API_VERSION,
        "kind": "Application",
        "metadata": _metadata(retired_application_name(cluster), argocd_namespace, labels=labels),
        "spec": {
            "project": project,
            "source": {"repoURL": repo_url, "targetRevision": revision, "path": path},
            "destination": destination,
            "syncPolicy": _sync_policy(RETIRED_SYNC_OPTIONS, automated=False),
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

    No resources finalizer, unlike the other Applications: deleting the root by mistake
    must not cascade into deleting every Application and, through their finalizers, every
    job. Without it, the other Applications stay and keep syncing.
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
    """What an AppProject needs to know of a cluster: the namespaces it permits there."""

    server: str | None
    destination_name: str | None
    namespaces: tuple[str, ...]


def project_destinations(
    clusters: Iterable[ClusterTarget], *, empty: bool = True
) -> list[dict[str, str]]:
    """The AppProject destinations that permit these namespaces and nothing else.

    How Argo CD checks them (v3.5.1, ``pkg/apis/application/v1alpha1/app_project_types.go``):

    * ``IsDestinationPermitted`` / ``isDestinationMatched``: an entry matches when its
      ``server`` (or ``name``) glob matches the resolved cluster's server (or name) *and*
      its ``namespace`` glob matches the namespace asked about. Globs are gobwas/glob
      (``util/glob/glob.go``); ``"*"`` matches anything, and an empty pattern compiles to a
      matcher of the empty string only (gobwas/glob ``compiler.go``: no children →
      ``match.Nothing``).
    * (a) The Application's own destination is checked with its ``destination.namespace``
      (``util/argo/argo.go ValidatePermissions``). The platform's Applications leave it
      empty, so with ``empty`` each cluster gets one entry with ``namespace: ""``. That
      entry permits no object: a namespaced object without a namespace is refused anyway
      (``controller/state.go``, "Namespace for … is missing"). A team's Applications name
      the team's namespace.
    * Each namespaced object is checked by its own namespace at sync
      (``controller/sync.go validateSyncPermissions``) and when its live copy is compared
      (``controller/state.go`` via ``IsLiveResourcePermitted``): one entry per namespace.
    * (b) Cluster-scoped objects (Namespace, Queue, ClusterTrainingRuntime) are never
      matched against destinations (``IsResourcePermitted`` checks destinations only when
      the namespace is not empty; ``validateSyncPermissions`` only when the kind is
      namespaced); only ``clusterResourceWhitelist`` applies, see :func:`render_app_project`.
    """
    destinations: list[dict[str, str]] = []
    for target in clusters:
        ref = _cluster_ref(target.server, target.destination_name, what="cluster destination")
        if empty:
            destinations.append({**ref, "namespace": ""})
        destinations.extend({**ref, "namespace": ns} for ns in sorted(set(target.namespaces)))
    return destinations


def _destinations(name: str, destinations: Sequence[Mapping[str, str]]) -> list[dict[str, str]]:
    if not destinations:
        raise ValueError(f"AppProject {name!r}: at least one destination is needed")
    rendered: list[dict[str, str]] = []
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
        rendered.append(entry)
    return rendered


def render_app_project(
    *,
    name: str,
    argocd_namespace: str,
    repo_url: str,
    destinations: Sequence[Mapping[str, str]],
    labels: Mapping[str, str],
) -> dict[str, Any]:
    """The platform's ``AppProject``: the cluster-scoped kinds the platform's Applications
    write (``CLUSTER_KINDS``), by kind, and their namespaced ones
    (``PLATFORM_NAMESPACED_KINDS``) in ``destinations``.

    ``destinations`` are ``{"server" | "name": ..., "namespace": ...}`` entries, normally
    from :func:`project_destinations`; ``namespace`` is required and may be ``""`` (the
    Applications' own, empty, destination namespace).
    """
    return {
        "apiVersion": API_VERSION,
        "kind": "AppProject",
        "metadata": _metadata(
            name, argocd_namespace, labels=labels, annotations={SYNC_WAVE: _PROJECT_WAVE}
        ),
        "spec": {
            "description": "trainkit: the platform's namespaces, queues and runtimes",
            "sourceRepos": [repo_url],
            "destinations": _destinations(name, destinations),
            "clusterResourceWhitelist": _group_kinds(CLUSTER_KINDS),
            "namespaceResourceWhitelist": _group_kinds(PLATFORM_NAMESPACED_KINDS),
        },
    }


def render_team_app_project(
    *,
    name: str,
    team: str,
    argocd_namespace: str,
    repo_url: str,
    destinations: Sequence[Mapping[str, str]],
    kinds: Iterable[tuple[str, str]],
    labels: Mapping[str, str],
) -> dict[str, Any]:
    """A team's ``AppProject``: ``destinations`` (the team's namespace on each of its
    clusters), no cluster-scoped kind and exactly ``kinds`` (group, kind) in them.

    ``clusterResourceWhitelist`` is left out: an empty one permits no cluster-scoped kind
    (``IsGroupKindNamePermitted``: ``len(clusterWhitelist) != 0 && ...``). The
    ``namespaceResourceWhitelist`` must not be: left out it permits every namespaced kind
    (``namespaceWhitelist == nil || ...``), so ``kinds`` may not be empty.
    """
    listed = sorted(set(kinds))
    if not listed:
        raise ValueError(f"AppProject {name!r}: no kinds; an empty whitelist permits none")
    rendered = _destinations(name, destinations)
    if any(d["namespace"] == "" for d in rendered):
        raise ValueError(f"AppProject {name!r}: a team's destinations name its namespace")
    return {
        "apiVersion": API_VERSION,
        "kind": "AppProject",
        "metadata": _metadata(
            name,
            argocd_namespace,
            labels=labels,
            annotations={SYNC_WAVE: _PROJECT_WAVE, **_PRUNE_LAST},
        ),
        "spec": {
            "description": f"trainkit: team {team}'s jobs, in its namespace on its clusters",
            "sourceRepos": [repo_url],
            "destinations": rendered,
            "namespaceResourceWhitelist": _group_kinds(listed),
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


def argocd_files(
    plan: Plan,
    checks: Mapping[str, str],
    sources: Sequence[AppSource] = (),
    team_kinds: Mapping[str, Iterable[tuple[str, str]]] | None = None,
) -> list[ArgoFile]:
    """Every file of ``generated/argocd/``; none without an ``ArgoCD`` definition.

    ``sources`` are the Application directories of the tree, ``team_kinds`` the (group, kind)
    of the objects generated for each team. Two Applications may come out with one name
    (cluster ``a-b`` with team ``c``, cluster ``a`` with team ``b-c``): the caller refuses
    that (``synth.layout``).
    """
    cfg, cdef = plan.argocd, plan.argocd_definition
    if cfg is None or cdef is None:
        return []
    platform_dir = posixpath.dirname(cdef.file) + "/"
    base = cfg.path.strip("/")
    kinds = team_kinds or {}
    clusters = {cp.cluster.name: cp for cp in plan.clusters}
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
    team_clusters: dict[str, list[tuple[str, str]]] = {}
    team_files: dict[str, str] = {}
    for cp in plan.clusters:
        for ns, owner, file in cp.namespaces:
            team_clusters.setdefault(owner, []).append((cp.cluster.name, ns))
            team_files[owner] = file
    teams_with_apps: set[str] = set()
    for src in sorted(sources, key=lambda s: (s.cluster, s.namespace or "", s.part)):
        cp = clusters[src.cluster]
        c = cp.cluster
        team: str | None = None
        if src.namespace is not None:
            team = next(t for ns, t, _ in cp.namespaces if ns == src.namespace)
            teams_with_apps.add(team)
        name = application_name(cfg.project, c.name, team, src.part)
        app = render_application(
            name=name,
            server=c.server,
            destination_name=c.destination_name,
            repo_url=cfg.repo_url,
            revision=cfg.revision,
            path=f"{base}/{src.path}",
            project=cfg.project if team is None else team_project_name(cfg.project, team),
            argocd_namespace=cfg.namespace,
            labels=_MANAGED_BY,
            namespace=src.namespace,
            generate_paths=src.generate_paths,
        )
        file = f"{_ROOT_DIR}/application-{name.removeprefix(cfg.project + '-')}.yaml"
        source = cp.definition.file if team is None else team_files.get(team, platform_dir)
        synced.append(ArgoFile(file, app, source))
    if cfg.retire_cluster_applications:
        for cp in plan.clusters:
            c = cp.cluster
            name = retired_application_name(c.name)
            retired = render_retired_application(
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
            synced.append(ArgoFile(f"{_ROOT_DIR}/application-{c.name}.yaml", retired, cdef.file))
    if plan.clusters:
        targets = []
        for cp in plan.clusters:
            c = cp.cluster
            namespaced = {ns for ns, _, _ in cp.kueue.local_queues}
            namespaced |= {pr.namespace for pr in cp.runtimes if pr.namespace}
            targets.append(ClusterTarget(c.server, c.destination_name, tuple(namespaced)))
        synced.append(
            ArgoFile(
                f"{_ROOT_DIR}/appproject.yaml",
                render_app_project(
                    name=cfg.project,
                    argocd_namespace=cfg.namespace,
                    repo_url=cfg.repo_url,
                    destinations=project_destinations(targets),
                    labels=_MANAGED_BY,
                ),
                platform_dir,
            )
        )
    for team in sorted(teams_with_apps):
        team_targets = [
            ClusterTarget(clusters[cn].cluster.server, clusters[cn].cluster.destination_name, (ns,))
            for cn, ns in team_clusters[team]
        ]
        synced.append(
            ArgoFile(
                f"{_ROOT_DIR}/appproject-team-{team}.yaml",
                render_team_app_project(
                    name=team_project_name(cfg.project, team),
                    team=team,
                    argocd_namespace=cfg.namespace,
                    repo_url=cfg.repo_url,
                    destinations=project_destinations(team_targets, empty=False),
                    kinds=kinds.get(team, ()),
                    labels=_MANAGED_BY,
                ),
                team_files[team],
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
