"""Whether each job's gang can ever be admitted by its queue.

Volcano admits a PodGroup only when its minimum resources fit the queue's
capability, and in a hierarchy the capability of every ancestor too
(volcano-sh/volcano v1.12 pkg/scheduler/plugins/capacity/capacity.go
``jobEnqueueable`` / ``realCapability``; plugins/proportion/proportion.go for
flat queues). A gang larger than that stays Pending forever, holding nothing
but hope: refuse it at synth.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal

from ..effective import EffectiveJob
from ..errors import Problem
from ..kube.quantities import parse_quantity
from ..model import Cluster, PyTorchJob, RayCluster, RayJob
from ..resolve import Index, problem, queue_path
from ..resolve.references import on_cluster
from .caps import scaled_group

__all__ = [
    "check_kueue_fit",
    "check_kueue_topology",
    "check_queue_fit",
    "check_workload_priority",
]


def check_queue_fit(index: Index, jobs: Sequence[EffectiveJob], problems: list[Problem]) -> None:
    for ej in jobs:
        gang = ej.gang
        if gang is None or gang.queue is None or gang.queue not in index.queues:
            continue
        cluster = ej.planned.cluster
        needs = gang.needs()
        # An elastic PyTorchJob's gang is its fewest Workers, an autoscaled Ray cluster's each
        # group's minReplicas; the others (up to max_nodes with an autoscaler) join the
        # PodGroup later and Volcano places them only within the queue's capability
        # (capacity.go allocatable), so count them all too.
        most = gang.at_most or {}
        for queue in queue_path(index, gang.queue):
            if queue.capability is None:
                continue
            amounts = queue.capability.amounts(cluster.gpu_resource)
            over = _over(amounts, needs)
            if not over:
                beyond = _over(amounts, most)
                if beyond:
                    _beyond_capability(index, ej, queue.name, gang.queue, beyond, problems)
                continue
            via = "" if queue.name == gang.queue else f" (an ancestor of {gang.queue!r})"
            wanted = ", ".join(f"{_amount(need)} {name}" for name, need, _ in over)
            caps = ", ".join(f"{limit} {name}" for name, _, limit in over)
            problems.append(
                problem(
                    ej.planned.definition,
                    f"the gang of {gang.min_member} pods needs {wanted} on cluster "
                    f"{cluster.name!r}, but queue {queue.name!r}{via} can hold at most {caps} "
                    f"(Queue.capability in {index.queues[queue.name].file}): Volcano would never "
                    "admit it and the job would stay Pending; use fewer nodes or resources, or "
                    "another queue",
                    "queue" if ej.planned.job.queue else "nodes",
                )
            )


def _over(
    capability: Mapping[str, str], needs: Mapping[str, Decimal]
) -> list[tuple[str, Decimal, str]]:
    """``(resource, need, limit)`` of every resource ``needs`` asks more of than allowed."""
    over = []
    for name, limit in capability.items():
        cap = parse_quantity(limit)
        need = needs.get(name, Decimal(0))
        if cap is not None and need > cap:
            over.append((name, need, limit))
    return over


def _beyond_capability(
    index: Index,
    ej: EffectiveJob,
    queue: str,
    own_queue: str,
    over: list[tuple[str, Decimal, str]],
    problems: list[Problem],
) -> None:
    """An elastic job (or a Ray cluster that autoscales) whose gang fits its queue but whose
    every Worker does not."""
    via = "" if queue == own_queue else f" (an ancestor of {own_queue!r})"
    wanted = ", ".join(f"{_amount(need)} {name}" for name, need, _ in over)
    caps = ", ".join(f"{limit} {name}" for name, _, limit in over)
    job = ej.planned.job
    counted = f"{ej.nodes} Workers"
    if isinstance(job, RayJob | RayCluster):
        scaled = scaled_group(job)
        field = what = f"workers[{scaled}].max_nodes" if scaled is not None else "workers"
        counted = f"{ej.nodes} Ray nodes"
    elif isinstance(job, PyTorchJob) and job.max_workers > job.workers:
        field, what = "elastic", "elastic.max_nodes"
    else:
        field = what = "nodes"
    problems.append(
        problem(
            ej.planned.definition,
            f"at its most, {counted}, the job needs {wanted} on cluster "
            f"{ej.planned.cluster.name!r}, but queue {queue!r}{via} can hold at most {caps} "
            f"(Queue.capability in {index.queues[queue].file}): Volcano would leave the "
            f"Workers beyond what fits Pending for good; lower {what}, or use another queue",
            field,
        )
    )


def _amount(value: Decimal) -> str:
    if value == value.to_integral_value():
        whole = int(value)
        for unit, size in (("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20)):
            if whole >= size and whole % size == 0:
                return f"{whole // size}{unit}"
        return str(whole)
    return format(value.normalize(), "f")


def check_kueue_fit(index: Index, jobs: Sequence[EffectiveJob], problems: list[Problem]) -> None:
    """A job Kueue could never admit: a requested resource its ClusterQueue does not cover,
    or more than one flavor's quota (and what it may borrow) holds. Kueue admits the whole
    workload, every pod set on one flavor per resource group, and otherwise leaves it
    pending forever (kubernetes-sigs/kueue v0.19.2 pkg/scheduler/flavorassigner/
    flavorassigner.go; pkg/cache/scheduler/resource_node.go potentialAvailable)."""
    for ej in jobs:
        pj, workload = ej.planned, ej.workload
        # trainkit names each LocalQueue after the ClusterQueue it points to.
        if workload is None or workload.queue not in index.cluster_queues:
            continue
        declared = index.cluster_queues[workload.queue]
        cq, cluster = declared.obj, pj.cluster
        need = workload.requests()
        field = "queue" if pj.job.queue else "clusters"
        where = f"ClusterQueue {cq.name!r} ({declared.file})"
        # Every non-zero request needs a resource group covering it: findFlavorForPodSets
        # answers "resource %s unavailable in ClusterQueue" otherwise, and the default quota
        # check (BlockUndeclared) skips only zero requests (kueue v0.19.2 pkg/scheduler/
        # flavorassigner/flavorassigner.go; apis/config/v1beta2/configuration_types.go).
        # This covers ephemeral-storage and the extended resources of network profiles.
        covered = set(cq.covered(cluster.gpu_resource))
        missing = sorted(n for n, v in need.items() if v and n not in covered)
        if missing:
            problems.append(
                problem(
                    pj.definition,
                    f"the job requests {', '.join(missing)}, which {where} has no quota for: "
                    "Kueue never admits it ('resource unavailable in ClusterQueue'); add the "
                    "resource to the queue's flavors or drop it from the job",
                    field,
                )
            )
            continue
        # Kueue skips a flavor whose node labels the pods' nodeSelector contradicts
        # (flavorassigner.go flavorSelector: "flavor doesn't match node affinity").
        selectors = [dict(ps.spec.get("nodeSelector") or {}) for ps in ej.pod_sets]
        usable, clashes = [], []
        for fq in cq.flavors:
            flavor = index.flavors.get(fq.flavor)
            labels = flavor.obj.node_labels if flavor is not None else {}
            clash = sorted(
                f"{k}={sel[k]!r} (the flavor's nodes have {v!r})"
                for sel in selectors
                for k, v in labels.items()
                if k in sel and sel[k] != v
            )
            if clash:
                clashes.append(f"flavor {fq.flavor!r}: {clash[0]}")
                continue
            usable.append(fq)
        if not usable:
            problems.append(
                problem(
                    pj.definition,
                    f"the pods' node_selector rules out every flavor of {where} "
                    f"({'; '.join(clashes)}): Kueue finds no flavor for them and leaves the "
                    "job pending forever; drop the selector, which the flavor's node labels "
                    "replace",
                    "node_selector",
                )
            )
            continue
        best: list[tuple[str, Decimal, Decimal]] | None = None
        for fq in usable:
            quota = fq.quota.amounts(cluster.gpu_resource, zero_gpu=True)
            borrow = (
                fq.borrowing_limit.amounts(cluster.gpu_resource, zero_gpu=True)
                if fq.borrowing_limit is not None
                else None
            )
            over = []
            for name, value in need.items():
                if not value:
                    continue
                cap = parse_quantity(quota.get(name, "0")) or Decimal(0)
                if cq.cohort is not None:
                    # With nothing else running: its quota and what the cohort's other
                    # queues lend of the flavor, within its borrowing limit
                    # (resource_node.go potentialAvailable).
                    lent = _lent_by_others(index, cq.name, cq.cohort, fq.flavor, name, cluster)
                    limit = None if borrow is None or name not in borrow else borrow[name]
                    more = lent if limit is None else min(lent, parse_quantity(limit) or 0)
                    cap += more
                if value > cap:
                    over.append((f"{name} in flavor {fq.flavor!r}", value, cap))
            if not over:
                best = None
                break
            if best is None or len(over) < len(best):
                best = over
        if best:
            needs = ", ".join(f"{_amount(v)} {n} (at most {_amount(c)})" for n, v, c in best)
            problems.append(
                problem(
                    pj.definition,
                    f"all its pods together need {needs} on cluster {cluster.name!r}, more than "
                    f"any flavor of {where} holds with what it may borrow: Kueue would leave "
                    "it pending forever; use fewer nodes or resources, or another queue",
                    field,
                )
            )


def _lent_by_others(
    index: Index, queue: str, cohort: str, flavor: str, resource: str, cluster: Cluster
) -> Decimal:
    """What the other ClusterQueues of ``cohort`` on ``cluster`` lend of ``resource`` in
    ``flavor``: each its nominal quota, less what its lending limit keeps back
    (kueue v0.19.2 pkg/cache/scheduler/resource_node.go accumulateFromChild)."""
    total = Decimal(0)
    for name, declared in index.cluster_queues.items():
        other = declared.obj
        if name == queue or other.cohort != cohort or not on_cluster(other, cluster.name):
            continue
        for fq in other.flavors:
            if fq.flavor != flavor:
                continue
            quota = fq.quota.amounts(cluster.gpu_resource, zero_gpu=True).get(resource)
            n = parse_quantity(quota) if quota is not None else None
            if n is None:
                continue
            lend = None
            if fq.lending_limit is not None:
                lend = fq.lending_limit.amounts(cluster.gpu_resource, zero_gpu=True).get(resource)
            total += n if lend is None else min(n, parse_quantity(lend) or Decimal(0))
    return total


def check_workload_priority(
    index: Index, jobs: Sequence[EffectiveJob], problems: list[Problem]
) -> None:
    """A job's ``workload_priority`` is a label only Kueue reads, and only when the class
    exists on the cluster: Kueue refuses to create the Workload of a job naming a missing
    WorkloadPriorityClass, so it never runs (kueue v0.19.2 pkg/controller/jobframework/
    reconciler.go ExtractPriority → pkg/util/priority/priority.go
    GetPriorityFromWorkloadPriorityClass, which fails when the class is missing)."""
    for ej in jobs:
        pj = ej.planned
        name = getattr(pj.job, "workload_priority", None)
        if name is None:
            continue
        cluster = pj.cluster
        if cluster.scheduler != "kueue":
            problems.append(
                problem(
                    pj.definition,
                    f"workload_priority is read by Kueue only, but cluster {cluster.name!r} "
                    f"schedules with {cluster.scheduler!r}: drop it there (priority_class= "
                    "orders the pods and Volcano's gangs)",
                    "workload_priority",
                )
            )
            continue
        declared = index.workload_priorities.get(name)
        if declared is not None and not on_cluster(declared.obj, cluster.name):
            problems.append(
                problem(
                    pj.definition,
                    f"WorkloadPriorityClass {name!r} ({declared.file}) does not exist on cluster "
                    f"{cluster.name!r}: Kueue would not create the job's Workload and it would "
                    "never start; add the cluster to the class's clusters",
                    "workload_priority",
                )
            )


def check_kueue_topology(
    index: Index, jobs: Sequence[EffectiveJob], problems: list[Problem]
) -> None:
    """A job's ``kueue_topology`` is an annotation only Kueue reads, and Kueue admits it only
    on a flavor with a Topology holding the level: a flavor without one is skipped ("does not
    support TopologyAwareScheduling", kueue v0.19.2 pkg/scheduler/flavorassigner/
    tas_flavorassigner.go), one without the level too ("no requested topology level",
    pkg/cache/scheduler/tas_flavor_snapshot.go); with no such flavor the job waits forever."""
    for ej in jobs:
        pj = ej.planned
        topology = getattr(pj.job, "kueue_topology", None)
        if topology is None:
            continue
        cluster = pj.cluster
        if cluster.scheduler != "kueue":
            problems.append(
                problem(
                    pj.definition,
                    f"kueue_topology is read by Kueue only, but cluster {cluster.name!r} "
                    f"schedules with {cluster.scheduler!r}: drop it there (topology= lays out "
                    "the pods with the scheduler's own rules)",
                    "kueue_topology",
                )
            )
            continue
        if pj.ray_cluster is not None:
            problems.append(
                problem(
                    pj.definition,
                    f"kueue_topology on a RayJob that runs on RayCluster {pj.ray_cluster!r}: "
                    "Kueue queues the RayCluster, not the RayJob, and never reads it here; "
                    "set kueue_topology on the RayCluster",
                    "kueue_topology",
                )
            )
            continue
        cq = pj.cluster_queue
        if cq is None:
            continue  # no queue: refused already
        levels: dict[str, list[str]] = {}
        for fq in cq.flavors:
            flavor = index.flavors.get(fq.flavor)
            name = flavor.obj.topology_name if flavor is not None else None
            if name is not None and name in cluster.kueue_topologies:
                levels[fq.flavor] = cluster.kueue_topologies[name]
        if not levels:
            problems.append(
                problem(
                    pj.definition,
                    f"kueue_topology asks for topology-aware scheduling, but no flavor of "
                    f"ClusterQueue {cq.name!r} on cluster {cluster.name!r} has a Topology "
                    "(ResourceFlavor.topology_name): Kueue would never admit the job; give a "
                    "flavor a topology or drop kueue_topology",
                    "kueue_topology",
                )
            )
            continue
        if not any(topology.level in found for found in levels.values()):
            offered = "; ".join(f"flavor {f!r}: {', '.join(lv)}" for f, lv in levels.items())
            problems.append(
                problem(
                    pj.definition,
                    f"kueue_topology level {topology.level!r} is no level of the Topology of "
                    f"any flavor of ClusterQueue {cq.name!r} ({offered}): Kueue would never "
                    "admit the job ('no requested topology level'); use one of those levels",
                    "kueue_topology.level",
                )
            )
