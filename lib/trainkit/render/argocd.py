"""Argo CD objects for ``generated/argocd/``: what an admin applies once per Argo CD install.

Pure functions: plain values in, plain dicts out, keys in manifest order (apiVersion, kind,
metadata, spec). Nothing here reads files; the caller passes the Lua health checks in
(:func:`trainkit.argocd.health_checks`) and serializes the results.

* :func:`render_application` - one ``Application`` per cluster, syncing
  ``generated/clusters/<cluster>/`` (a kustomization) with prune, self-heal and server-side apply.
* :func:`render_app_project` - the ``AppProject`` those Applications belong to, limited to the
  trainkit repository, the given destinations and the kinds trainkit generates.
* :func:`render_health_patch` - an ``argocd-cm`` ConfigMap carrying the health checks, meant as a
  strategic-merge patch on the Argo CD install.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "API_VERSION",
    "CLUSTER_RESOURCE_WHITELIST",
    "IGNORE_DIFFERENCES",
    "NAMESPACE_RESOURCE_WHITELIST",
    "RETRY",
    "SYNC_OPTIONS",
    "application_name",
    "render_app_project",
    "render_application",
    "render_health_patch",
]

API_VERSION = "argoproj.io/v1alpha1"

# No CreateNamespace=true: trainkit emits the v1 Namespace objects itself, so Argo CD tracks,
# diffs and prunes them like everything else. ServerSideApply because the training CRs can
# outgrow the 262144-byte last-applied annotation and because Kueue co-owns fields;
# RespectIgnoreDifferences so the fields below are left alone on sync too, not only in the diff.
SYNC_OPTIONS: tuple[str, ...] = ("ServerSideApply=true", "RespectIgnoreDifferences=true")

RETRY: Mapping[str, Any] = {
    "limit": 5,
    "backoff": {"duration": "5s", "factor": 2, "maxDuration": "3m"},
}

# Fields that Kueue writes on admission / preemption; without these, self-heal would fight it.
IGNORE_DIFFERENCES: tuple[Mapping[str, Any], ...] = (
    {
        "group": "kubeflow.org",
        "kind": "PyTorchJob",
        "jsonPointers": ["/spec/runPolicy/suspend"],
    },
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

# (group, kind); "" is the core API group.
CLUSTER_RESOURCE_WHITELIST: tuple[tuple[str, str], ...] = (
    ("", "Namespace"),
    ("scheduling.volcano.sh", "Queue"),
    ("trainer.kubeflow.org", "ClusterTrainingRuntime"),
)
NAMESPACE_RESOURCE_WHITELIST: tuple[tuple[str, str], ...] = (
    ("", "ConfigMap"),
    ("kubeflow.org", "PyTorchJob"),
    ("trainer.kubeflow.org", "TrainJob"),
    ("trainer.kubeflow.org", "TrainingRuntime"),
)


def application_name(cluster: str) -> str:
    """The Application name for a cluster: ``trainkit-<cluster>``."""
    return f"trainkit-{cluster}"


def _metadata(name: str, namespace: str, labels: Mapping[str, str]) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = dict(labels)
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
    labels: dict[str, str],
) -> dict[str, Any]:
    """The Argo CD ``Application`` that syncs one cluster's kustomization.

    Exactly one of ``server`` (API server URL) and ``destination_name`` (a cluster name
    registered in Argo CD) must be given, else ``ValueError``. ``path`` is the directory in
    the repository, e.g. ``generated/clusters/<cluster>``.

    ``spec.destination.namespace`` is deliberately not set: every namespaced object trainkit
    emits carries its own namespace. The AppProject's destinations must therefore allow the
    empty namespace (``namespace: "*"``), see :func:`render_app_project`.
    """
    destination = _cluster_ref(server, destination_name, what=f"Application for {cluster!r}")
    return {
        "apiVersion": API_VERSION,
        "kind": "Application",
        "metadata": _metadata(application_name(cluster), argocd_namespace, labels),
        "spec": {
            "project": project,
            "source": {"repoURL": repo_url, "targetRevision": revision, "path": path},
            "destination": destination,
            "syncPolicy": {
                "automated": {"prune": True, "selfHeal": True},
                "syncOptions": list(SYNC_OPTIONS),
                "retry": copy.deepcopy(dict(RETRY)),
            },
            "ignoreDifferences": [copy.deepcopy(dict(item)) for item in IGNORE_DIFFERENCES],
        },
    }


def render_app_project(
    *,
    name: str,
    argocd_namespace: str,
    repo_url: str,
    destinations: list[dict[str, str]],
    labels: dict[str, str],
) -> dict[str, Any]:
    """The Argo CD ``AppProject`` for trainkit's Applications.

    ``destinations`` are ``{"server" | "name": ..., "namespace": ...}`` entries (Argo CD
    globs allowed). Argo CD checks the Application's own destination namespace against them
    too, and trainkit's Applications leave it empty: use ``"namespace": "*"`` or the
    Applications are refused with ``InvalidSpecError ... do not match any of the allowed
    destinations``. Each namespaced object is then checked by its own namespace.
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
        if not namespace:
            raise ValueError(f"{what}: namespace is required (a glob such as '*' is allowed)")
        entry["namespace"] = namespace
        rendered_destinations.append(entry)
    return {
        "apiVersion": API_VERSION,
        "kind": "AppProject",
        "metadata": _metadata(name, argocd_namespace, labels),
        "spec": {
            "description": "trainkit: training jobs, runtimes and queues generated from Python",
            "sourceRepos": [repo_url],
            "destinations": rendered_destinations,
            "clusterResourceWhitelist": _group_kinds(CLUSTER_RESOURCE_WHITELIST),
            "namespaceResourceWhitelist": _group_kinds(NAMESPACE_RESOURCE_WHITELIST),
        },
    }


def render_health_patch(*, argocd_namespace: str, checks: dict[str, str]) -> dict[str, Any]:
    """``argocd-cm`` carrying the Lua health checks (``{argocd-cm key: Lua source}``).

    Not a complete ``argocd-cm``: apply it as a strategic-merge patch over the Argo CD
    install so that only these ``data`` keys are added or replaced.
    """
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "argocd-cm",
            "namespace": argocd_namespace,
            "labels": {"app.kubernetes.io/part-of": "argocd"},
        },
        "data": dict(sorted(checks.items())),
    }
