"""Node label rules name labels the cluster's nodes have (``Cluster.node_labels``).

A required node rule (``node_selector``, ``node_affinity`` without a weight) on a label or
value no node carries, or a topology on a label no node has, leaves the pods pending forever,
holding their queue's place; the platform lists its nodes' labels and the plan refuses the
rest. A cluster that lists none is not checked. The kubelet's own labels are on every node.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from pydantic import BaseModel

from ..errors import Problem
from ..model import JOB_KINDS, Cluster
from ..resolve import Index, Plan, problem
from ..resolve.problems import known

__all__ = ["check_node_labels"]

# The kubelet sets these on every node (k8s.io/api core/v1 well_known_labels.go).
_EVERY_NODE = ("kubernetes.io/hostname", "kubernetes.io/os", "kubernetes.io/arch")


def _rules(job: object) -> Iterator[tuple[str, str, list[str]]]:
    """``(field, key, values that must exist)`` of every node label a job's pods name."""
    for key, value in (getattr(job, "node_selector", None) or {}).items():
        yield f"node_selector.{key}", key, [value]
    for i, rule in enumerate(getattr(job, "node_affinity", [])):
        values = list(rule.values) if rule.operator == "In" else []
        yield f"node_affinity[{i}]", rule.key, values
    topology = getattr(job, "topology", None)
    if topology is not None:
        yield "topology", topology.key, []
    for i, rule in enumerate(getattr(job, "pod_affinity", [])):
        yield f"pod_affinity[{i}]", rule.topology_key, []
    names = type(job).model_fields if isinstance(job, BaseModel) else {}
    for name in names:
        value = getattr(job, name)
        roles = value if isinstance(value, list) else [value]
        for i, role in enumerate(roles):
            # A role's or a worker group's own node selector (Role, WorkerGroup).
            selector = getattr(role, "node_selector", None)
            if isinstance(role, BaseModel) and isinstance(selector, Mapping):
                where = f"{name}[{i}]" if isinstance(value, list) else name
                for key, v in selector.items():
                    yield f"{where}.node_selector.{key}", key, [v]


def check_node_labels(plan: Plan, problems: list[Problem]) -> None:
    for cp in plan.clusters:
        listed = cp.cluster.node_labels
        if not listed:
            continue
        for pj in cp.jobs:
            if isinstance(pj.job, JOB_KINDS):
                for field, key, values in _rules(pj.job):
                    message = _problem(cp.cluster, plan.index, key, values)
                    if message is not None:
                        problems.append(problem(pj.definition, message, field))


def _problem(cluster: Cluster, index: Index, key: str, values: list[str]) -> str | None:
    listed = cluster.node_labels
    where = f"Cluster.node_labels in {index.cluster_file(cluster.name)}"
    if key in _EVERY_NODE:
        return None
    if key not in listed:
        return (
            f"no node of cluster {cluster.name!r} has label {key!r} ({where} lists "
            f"{known(listed)}): pods that need it would never be placed; use a listed label, "
            "or ask the platform team to list it"
        )
    missing = [v for v in values if listed[key] and v not in listed[key]]
    if missing:
        return (
            f"no node of cluster {cluster.name!r} has {key}={missing[0]} ({where} lists the "
            f"values {known(listed[key])}): pods that need it would never be placed"
        )
    return None
