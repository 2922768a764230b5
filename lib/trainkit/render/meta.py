"""Labels, annotations and Argo CD sync waves shared by every rendered object."""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = [
    "DEFINITION_ANNOTATION",
    "JOB_LABEL",
    "KUEUE_PRIORITY_LABEL",
    "KUEUE_QUEUE_LABEL",
    "MANAGED_BY",
    "SOURCE_ANNOTATION",
    "SYNC_WAVE",
    "TEAM_LABEL",
    "VOLCANO_QUEUE_ANNOTATION",
    "definition_hash",
    "metadata",
    "pod_labels",
    "pod_metadata",
    "wave",
]

MANAGED_BY = "app.kubernetes.io/managed-by"
TEAM_LABEL = "trainkit.dev/team"
JOB_LABEL = "trainkit.dev/job"
SOURCE_ANNOTATION = "trainkit.dev/source"
DEFINITION_ANNOTATION = "trainkit.dev/definition"
"""A hash of everything a job is rendered from (its definition, scripts, placement), not of
trainkit's version: an unchanged definition keeps its deployed bytes across upgrades."""
SYNC_WAVE = "argocd.argoproj.io/sync-wave"
VOLCANO_QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
KUEUE_PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
"""Kueue v0.19 reads a job's LocalQueue from this label only (the annotation was removed)."""

# Argo CD applies a wave only when the previous one is synced *and healthy*, and
# a running job never becomes healthy until it ends: platform objects go first,
# every job shares the last wave so no job blocks another.
_WAVES = {
    "Namespace": -30,
    "Queue": -20,
    # Kueue: flavors before the queues that quote them, LocalQueues after their ClusterQueue.
    "ResourceFlavor": -25,
    # Kueue refuses to create the Workload of a job naming a missing class.
    "WorkloadPriorityClass": -25,
    "ClusterQueue": -20,
    "LocalQueue": -15,
    # Trainer's webhook rejects a TrainJob whose runtime does not exist yet.
    "ClusterTrainingRuntime": -10,
    "TrainingRuntime": -10,
    "ConfigMap": -5,
    "PyTorchJob": 0,
    "MPIJob": 0,
    "TFJob": 0,
    "PaddleJob": 0,
    "XGBoostJob": 0,
    "JAXJob": 0,
    # Before the RayJobs that name it (clusterSelector): KubeRay only looks a RayCluster up.
    "RayCluster": -1,
    "RayJob": 0,
    "TrainJob": 0,
}


def definition_hash(parts: dict[str, Any]) -> str:
    """``sha256:<16 hex>`` of ``parts`` (plain data), independent of key order."""
    raw = json.dumps(parts, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(raw.encode()).hexdigest()[:16]


def wave(kind: str, depth: int = 0) -> str:
    """Sync wave of a kind; queue parents (smaller depth) before their children."""
    return str(_WAVES[kind] + depth)


def metadata(
    *,
    name: str,
    kind: str,
    source: str,
    namespace: str | None = None,
    team: str | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    depth: int = 0,
) -> dict[str, object]:
    """Metadata every trainkit object carries: who manages it, where it came from, its wave."""
    meta: dict[str, object] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    all_labels = {MANAGED_BY: "trainkit"}
    if team is not None:
        all_labels[TEAM_LABEL] = team
    all_labels.update(labels or {})
    meta["labels"] = all_labels
    meta["annotations"] = {
        SOURCE_ANNOTATION: source,
        SYNC_WAVE: wave(kind, depth),
        **(annotations or {}),
    }
    return meta


def pod_metadata(team: str, job: str, obj: object) -> dict[str, Any]:
    """A job's pod template metadata: the job's ``pod_labels`` and ``pod_annotations`` with
    trainkit's labels (the job's cannot take trainkit's keys: the models refuse them)."""
    meta: dict[str, Any] = {"labels": {**getattr(obj, "pod_labels", {}), **pod_labels(team, job)}}
    annotations = dict(getattr(obj, "pod_annotations", {}))
    topology = getattr(obj, "kueue_topology", None)
    if topology is not None:
        # Kueue reads each pod set's topology request from its template's annotations
        # (kueue v0.19.2 pkg/controller/jobframework/tas.go); only on a Kueue cluster, where
        # policy/queues.py check_kueue_topology lets it through.
        key, value = topology.annotation
        annotations[key] = value
    if annotations:
        meta["annotations"] = annotations
    return meta


def pod_labels(team: str, job: str) -> dict[str, str]:
    """Labels of a job's pods, so ``kubectl get pods -l trainkit.dev/job=…`` finds them."""
    return {MANAGED_BY: "trainkit", TEAM_LABEL: team, JOB_LABEL: job}
