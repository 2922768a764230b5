"""How a job is admitted: the Kueue Workload it becomes, and the resources a Volcano PodGroup
asks for, from the job's own object.

Kueue (kubernetes-sigs/kueue v0.19.2) makes one pod set per replica type of a kubeflow.org
job, in the integration's order, named after the type in lower case, counting its replicas
(default 1), from the job's own pod templates (pkg/controller/jobs/kubeflow/kubeflowjob/
kubeflowjob_controller.go PodSets, ``kueue.NewPodSetReference`` lower-cases; mpijob/
mpijob_controller.go for the MPIJob). The Workload's priority class is
``schedulingPolicy.priorityClass``, else the first pod set's ``priorityClassName``
(kubeflowjob_controller.go PriorityClass).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from ..kube.quantities import parse_quantity
from ..render.meta import KUEUE_PRIORITY_LABEL, KUEUE_QUEUE_LABEL
from .podsets import Workload, WorkloadPodSet, pod_requests

__all__ = [
    "container_amounts",
    "kueue_queue",
    "min_resources",
    "pod_set_workload",
    "replica_workload",
    "resource_list",
    "workload_priority",
]


def kueue_queue(body: Mapping[str, Any]) -> str | None:
    """The LocalQueue a job's ``kueue.x-k8s.io/queue-name`` label names, if any."""
    labels = (body.get("metadata") or {}).get("labels") or {}
    queue = labels.get(KUEUE_QUEUE_LABEL)
    return str(queue) if queue else None


def replica_workload(
    body: Mapping[str, Any],
    replicas: Mapping[str, Any],
    order: Sequence[str],
    scheduling: Mapping[str, Any] | None,
) -> Workload | None:
    """The Workload Kueue makes of a kubeflow.org job whose replica specs are ``replicas``,
    pod sets in ``order`` (the types the job has); None off Kueue."""
    queue = kueue_queue(body)
    if queue is None:
        return None
    present = [rtype for rtype in order if replicas.get(rtype) is not None]
    pod_sets = []
    for rtype in present:
        spec = (replicas[rtype].get("template") or {}).get("spec") or {}
        requests = pod_requests(spec.get("containers") or [], spec.get("initContainers") or [])
        count = int(replicas[rtype].get("replicas", 1))
        pod_sets.append(WorkloadPodSet(rtype.lower(), count, requests))
    priority = (scheduling or {}).get("priorityClass") or next(
        (
            replicas[r]["template"]["spec"]["priorityClassName"]
            for r in present
            if ((replicas[r].get("template") or {}).get("spec") or {}).get("priorityClassName")
        ),
        None,
    )
    return Workload(queue, tuple(pod_sets), priority, workload_priority(body))


def workload_priority(body: Mapping[str, Any]) -> str | None:
    """The WorkloadPriorityClass a job's ``kueue.x-k8s.io/priority-class`` label names (kueue
    v0.19.2 pkg/controller/jobframework/utils.go WorkloadPriorityClassName: every integration
    reads the job's own label, the TrainJob's included)."""
    labels = (body.get("metadata") or {}).get("labels") or {}
    name = labels.get(KUEUE_PRIORITY_LABEL)
    return str(name) if name else None


def pod_set_workload(
    body: Mapping[str, Any],
    pod_sets: Sequence[tuple[str, int, Mapping[str, Any]]],
    priority: str | None = None,
) -> Workload | None:
    """The Workload of ``(name, count, pod spec)`` pod sets, for a job whose integration
    builds them itself (JobSet's replicated jobs, a RayCluster's groups); None off Kueue."""
    queue = kueue_queue(body)
    if queue is None:
        return None
    return Workload(
        queue,
        tuple(
            WorkloadPodSet(
                name.lower(),
                count,
                pod_requests(spec.get("containers") or [], spec.get("initContainers") or []),
            )
            for name, count, spec in pod_sets
        ),
        priority,
        workload_priority(body),
    )


def container_amounts(container: Mapping[str, Any]) -> dict[str, Decimal]:
    """What the kubeflow.org operators count for one container of a PodGroup's
    ``minResources``: its requests when it has any, else its limits (training-operator
    v1.9.4 pkg/controller.v1/common/util.go AddResourceList: the limits only stand in when
    ``requests`` is absent altogether)."""
    res = container.get("resources") or {}
    chosen = res.get("requests") if res.get("requests") is not None else res.get("limits")
    return resource_list(chosen or {})


def resource_list(amounts: Mapping[str, Any]) -> dict[str, Decimal]:
    """A ResourceList's quantities, parsed (unparseable ones left out)."""
    out: dict[str, Decimal] = {}
    for name, value in amounts.items():
        parsed = parse_quantity(str(value))
        if parsed is not None:
            out[str(name)] = parsed
    return out


def min_resources(pods: Sequence[tuple[Sequence[Mapping[str, Any]], int]]) -> dict[str, Decimal]:
    """The sum of ``container_amounts`` over ``(containers, count)`` pods."""
    total: dict[str, Decimal] = {}
    for containers, count in pods:
        for c in containers:
            for name, value in container_amounts(c).items():
                total[name] = total.get(name, Decimal(0)) + value * count
    return total
