"""Namespace and Volcano Queue manifests."""

from __future__ import annotations

from typing import Any

from ..model import Capacity, Cluster, Resources
from ..resolve import PlannedQueue
from .argocd import NAMESPACE_ANNOTATIONS
from .meta import metadata

__all__ = ["render_namespace", "render_queue", "resource_requirements"]


def render_namespace(*, namespace: str, team: str, source: str) -> dict[str, Any]:
    """A team's Namespace; Argo CD never prunes or deletes it (see ``NAMESPACE_ANNOTATIONS``)."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": metadata(
            name=namespace,
            kind="Namespace",
            source=source,
            team=team,
            annotations=dict(NAMESPACE_ANNOTATIONS),
        ),
    }


def resource_requirements(res: Resources, cluster: Cluster, *, gpu: bool = False) -> dict[str, Any]:
    """A node's ``resources``: requests equal limits (Guaranteed QoS, GPUs packed exactly),
    but for the CPU or memory request a job lowers where the policy allows it."""
    cap = Capacity(
        cpu=res.cpu,
        memory=res.memory,
        gpu=res.gpu,
        ephemeral_storage=res.ephemeral_storage,
        extended=res.extended,
        hugepages=res.hugepages,
    )
    amounts = cap.amounts(cluster.gpu_resource, zero_gpu=gpu)
    requests = dict(amounts)
    if res.cpu_request is not None:
        requests["cpu"] = str(res.cpu_request)
    if res.memory_request is not None:
        requests["memory"] = str(res.memory_request)
    return {"limits": amounts, "requests": requests}


def render_queue(pq: PlannedQueue, cluster: Cluster) -> dict[str, Any]:
    q = pq.queue
    # Volcano's controller patches a missing parent to "root"; writing it avoids drift.
    spec: dict[str, Any] = {
        "parent": q.parent or "root",
        "reclaimable": q.reclaimable,
        "weight": q.weight,
    }
    if q.capability is not None:
        spec["capability"] = q.capability.amounts(cluster.gpu_resource)
    if q.deserved is not None:
        spec["deserved"] = q.deserved.amounts(cluster.gpu_resource)
    if q.guarantee is not None:
        spec["guarantee"] = {"resource": q.guarantee.amounts(cluster.gpu_resource)}
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": metadata(name=q.name, kind="Queue", source=pq.definition.file, depth=pq.depth),
        "spec": spec,
    }
