"""Kueue objects (``kueue.x-k8s.io/v1beta2``, v0.19): ResourceFlavors, ClusterQueues and the
teams' LocalQueues.

kubernetes-sigs/kueue v0.19.2: v1beta2 is the storage version (v1beta1 is deprecated); a
ClusterQueue without ``namespaceSelector`` admits no namespace (pkg/cache/scheduler/
clusterqueue.go), so it selects exactly the namespaces of the teams that list it; every flavor
of a resource group quotes every covered resource, in the same order
(pkg/webhooks/clusterqueue_webhook.go validateFlavorQuotas); jobs name their LocalQueue in the
``kueue.x-k8s.io/queue-name`` label and never carry ``suspend``: Kueue's webhook suspends them
at creation and unsuspends them on admission (pkg/controller/jobframework/defaults.go,
reconciler.go), which a value in git would fight on every sync.
"""

from __future__ import annotations

from typing import Any

from ..model import Capacity, Cluster, ClusterQueue, ResourceFlavor, WorkloadPriorityClass
from ..resolve import Declared
from .meta import metadata

__all__ = [
    "KUEUE_API",
    "render_cluster_queue",
    "render_local_queue",
    "render_resource_flavor",
    "render_workload_priority_class",
]

KUEUE_API = "kueue.x-k8s.io/v1beta2"
_NAMESPACE_KEY = "kubernetes.io/metadata.name"


def render_resource_flavor(declared: Declared[ResourceFlavor]) -> dict[str, Any]:
    f = declared.obj
    spec: dict[str, Any] = {}
    if f.node_labels:
        spec["nodeLabels"] = dict(sorted(f.node_labels.items()))
    if f.topology_name is not None:
        spec["topologyName"] = f.topology_name
    return {
        "apiVersion": KUEUE_API,
        "kind": "ResourceFlavor",
        "metadata": metadata(name=f.name, kind="ResourceFlavor", source=declared.file),
        "spec": spec,
    }


def render_cluster_queue(
    declared: Declared[ClusterQueue], cluster: Cluster, namespaces: tuple[str, ...]
) -> dict[str, Any]:
    cq = declared.obj
    resources = cq.covered(cluster.gpu_resource)
    flavors = []
    for fq in cq.flavors:
        quota = _amounts(fq.quota, cluster)
        borrow = _amounts(fq.borrowing_limit, cluster)
        lend = _amounts(fq.lending_limit, cluster)
        entries = []
        for name in resources:
            entry: dict[str, Any] = {"name": name, "nominalQuota": quota.get(name, "0")}
            if name in borrow:
                entry["borrowingLimit"] = borrow[name]
            if name in lend:
                entry["lendingLimit"] = lend[name]
            entries.append(entry)
        flavors.append({"name": fq.flavor, "resources": entries})
    spec: dict[str, Any] = {}
    if cq.cohort is not None:
        spec["cohortName"] = cq.cohort
    if namespaces:  # none selected: the queue admits nothing, as Kueue reads a missing one
        spec["namespaceSelector"] = {
            "matchExpressions": [
                {"key": _NAMESPACE_KEY, "operator": "In", "values": list(namespaces)}
            ]
        }
    preemption: dict[str, Any] = {"reclaimWithinCohort": cq.reclaim_within_cohort}
    if cq.borrow_within_cohort != "Never":
        borrowing: dict[str, Any] = {"policy": cq.borrow_within_cohort}
        if cq.borrow_max_priority is not None:
            borrowing["maxPriorityThreshold"] = cq.borrow_max_priority
        preemption["borrowWithinCohort"] = borrowing
    preemption["withinClusterQueue"] = cq.within_queue
    spec["preemption"] = preemption
    spec["queueingStrategy"] = cq.queueing_strategy
    spec["resourceGroups"] = [{"coveredResources": resources, "flavors": flavors}]
    if cq.weight is not None:
        # A quantity; read only where the platform's Kueue Configuration turns fair sharing
        # on (apis/kueue/v1beta2/fairsharing_types.go).
        spec["fairSharing"] = {"weight": format(cq.weight.normalize(), "f")}
    rules = cq.check_rules()
    if rules:
        spec["admissionChecksStrategy"] = {
            "admissionChecks": [
                {"name": r.check, **({"onFlavors": list(r.on_flavors)} if r.on_flavors else {})}
                for r in rules
            ]
        }
    return {
        "apiVersion": KUEUE_API,
        "kind": "ClusterQueue",
        "metadata": metadata(name=cq.name, kind="ClusterQueue", source=declared.file),
        "spec": spec,
    }


def render_workload_priority_class(declared: Declared[WorkloadPriorityClass]) -> dict[str, Any]:
    w = declared.obj
    body: dict[str, Any] = {
        "apiVersion": KUEUE_API,
        "kind": "WorkloadPriorityClass",
        "metadata": metadata(name=w.name, kind="WorkloadPriorityClass", source=declared.file),
        "value": w.value,
    }
    if w.description:
        body["description"] = w.description
    return body


def render_local_queue(namespace: str, queue: str, team: str, source: str) -> dict[str, Any]:
    return {
        "apiVersion": KUEUE_API,
        "kind": "LocalQueue",
        "metadata": metadata(
            name=queue, kind="LocalQueue", source=source, namespace=namespace, team=team
        ),
        "spec": {"clusterQueue": queue},
    }


def _amounts(capacity: Capacity | None, cluster: Cluster) -> dict[str, str]:
    return {} if capacity is None else capacity.amounts(cluster.gpu_resource, zero_gpu=True)
