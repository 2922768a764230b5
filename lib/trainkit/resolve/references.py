"""Platform references: teams' namespaces, queues and clusters, queue hierarchies."""

from __future__ import annotations

from ..errors import Problem
from ..load import PLATFORM_DIR, Definition
from ..model import Cluster, FlavorQuota, Queue
from ..model.platform import VOLCANO_DEFAULT_QUEUE, system_namespace
from .index import Index
from .problems import known, problem

__all__ = [
    "check_clusters",
    "check_kueue",
    "check_queues",
    "check_teams",
    "kueue_clusters",
    "on_cluster",
]


def on_cluster(obj: object, cluster: str) -> bool:
    """Whether an object with an optional ``clusters`` list exists on ``cluster``."""
    clusters = getattr(obj, "clusters", None)
    return clusters is None or cluster in clusters


def check_clusters(d: Definition, names: list[str] | None, index: Index) -> list[Problem]:
    return [
        problem(
            d, f"unknown cluster {c!r}; defined clusters: {known(index.clusters)}", f"clusters[{i}]"
        )
        for i, c in enumerate(names or [])
        if c not in index.clusters
    ]


def check_teams(index: Index, problems: list[Problem]) -> None:
    argo_ns = index.argocd.obj.namespace if index.argocd is not None else None
    seen_ns: dict[str, tuple[str, Definition]] = {}
    for name, declared in index.teams.items():
        team, d = declared.obj, declared.definition
        ns = team.target_namespace
        if ns == argo_ns or (argo_ns is not None and system_namespace(ns)):
            problems.append(
                problem(
                    d,
                    f"namespace {ns!r} is Argo CD's (ArgoCD.namespace); give the team a "
                    "namespace of its own",
                    "namespace",
                )
            )
        if ns in seen_ns:
            other, od = seen_ns[ns]
            problems.append(
                problem(
                    d,
                    f"namespace {ns!r} already belongs to team {other!r} ({od.file}:{od.line}); "
                    "each team needs its own namespace",
                    "namespace",
                )
            )
        seen_ns.setdefault(ns, (name, d))
        for i, q in enumerate(team.queues):
            if q == VOLCANO_DEFAULT_QUEUE:
                continue  # Volcano's own queue, which Volcano creates
            if q not in index.queues and q not in index.cluster_queues:
                both = {**index.queues, **index.cluster_queues}
                problems.append(
                    problem(
                        d,
                        f"unknown queue {q!r}; defined queues (Volcano Queues and Kueue "
                        f"ClusterQueues): {known(both)}",
                        f"queues[{i}]",
                    )
                )
            elif q in index.children:
                problems.append(_not_a_leaf(d, q, index, f"queues[{i}]"))
        for i, w in enumerate(team.workload_priority_classes):
            if w not in index.workload_priorities:
                problems.append(
                    problem(
                        d,
                        f"unknown WorkloadPriorityClass {w!r}; defined: "
                        f"{known(index.workload_priorities)} (declare "
                        "WorkloadPriorityClass(name=..., value=...) in jobs/platform/)",
                        f"workload_priority_classes[{i}]",
                    )
                )
        problems.extend(check_clusters(d, team.clusters, index))
        for i, profile in enumerate(team.network_profiles):
            if profile not in index.profiles:
                problems.append(
                    problem(
                        d,
                        f"unknown network profile {profile!r}; defined network profiles: "
                        f"{known(index.profiles)} (declare NetworkProfile(name=...) in "
                        f"jobs/{PLATFORM_DIR}/ or remove it here)",
                        f"network_profiles[{i}]",
                    )
                )


def _not_a_leaf(d: Definition, queue: str, index: Index, field: str) -> Problem:
    # Volcano 1.12's capacity plugin allocates only to leaf queues (isLeafQueue in
    # volcano-sh/volcano pkg/scheduler/plugins/capacity/capacity.go).
    kids = known(index.children[queue])
    return problem(
        d,
        f"queue {queue!r} is the parent of {kids}; Volcano runs jobs only in leaf queues, so "
        "jobs there would never start: use one of its children",
        field,
    )


def check_queues(index: Index, problems: list[Problem]) -> dict[str, int]:
    """Problems of queue parents; returns each queue's depth below Volcano's root."""
    depths: dict[str, int] = {}
    queues = index.queues
    for name, declared in queues.items():
        queue, d = declared.obj, declared.definition
        problems.extend(check_clusters(d, queue.clusters, index))
        problems.extend(_not_volcano(d, queue.clusters, index))
        hierarchical = name in index.children or (
            queue.parent is not None and name in index.children.get(queue.parent, [])
        )
        if hierarchical and queue.deserved is None:
            # The capacity plugin, which hierarchical queues need, never reads weight
            # (volcano-sh/volcano v1.12 pkg/scheduler/plugins/capacity/capacity.go).
            problems.append(
                problem(
                    d,
                    "a queue in a hierarchy is scheduled by Volcano's capacity plugin, which "
                    "ignores weight; set deserved=Capacity(...) (and guarantee= if some of it "
                    "must never be lent)",
                    "deserved",
                )
            )
        depth, chain, parent = 0, [name], queue.parent
        while parent is not None:
            if parent not in queues:
                problems.append(
                    problem(
                        d,
                        f"unknown parent queue {parent!r}; defined queues: {known(queues)}",
                        "parent",
                    )
                )
                break
            if parent in chain:
                problems.append(
                    problem(
                        d, "queue parents form a cycle: " + " → ".join([*chain, parent]), "parent"
                    )
                )
                break
            pq = queues[parent].obj
            if chain == [name]:
                missing = _missing_clusters(queue, pq, set(index.clusters))
                if missing:
                    problems.append(
                        problem(
                            d,
                            f"parent queue {parent!r} does not exist on "
                            f"cluster(s) {known(missing)}",
                            "parent",
                        )
                    )
            chain.append(parent)
            depth += 1
            parent = pq.parent
        depths[name] = depth
    return depths


def _not_volcano(d: Definition, names: list[str] | None, index: Index) -> list[Problem]:
    """A queue named on a cluster without Volcano: its CRD is not there, so Argo CD could not
    sync the cluster's tree. Without ``clusters`` a queue goes to the Volcano clusters only."""
    return _wrong_scheduler(d, names, index, "volcano", "Queue")


def _wrong_scheduler(
    d: Definition, names: list[str] | None, index: Index, scheduler: str, what: str
) -> list[Problem]:
    """A ``what`` named on a cluster whose admission is not ``scheduler``: its CRD is not
    there (or nothing reads it), so Argo CD could not sync the cluster's tree."""
    out = []
    for i, c in enumerate(names or []):
        if c not in index.clusters or index.clusters[c].obj.scheduler == scheduler:
            continue
        has = index.clusters[c].obj.scheduler
        if scheduler == "volcano" and has == "default":
            why = (
                "schedules with kube-scheduler (Cluster.scheduler='default') and has no "
                "Volcano queues"
            )
        elif scheduler == "volcano":
            why = (
                "admits jobs through Kueue (scheduler='kueue'), which reads no Volcano Queue "
                "(declare a ClusterQueue for it)"
            )
        else:
            why = f"has no Kueue (scheduler={has!r}), so a {what} there means nothing"
        out.append(
            problem(
                d,
                f"cluster {c!r} {why}; remove it from the {what}'s clusters, or set "
                f"scheduler={scheduler!r} on the Cluster in {index.clusters[c].file}",
                f"clusters[{i}]",
            )
        )
    return out


def check_kueue(index: Index, problems: list[Problem]) -> None:
    """ClusterQueues and ResourceFlavors: on Kueue clusters, each flavor declared there."""
    for flavor_decl in index.flavors.values():
        f, d = flavor_decl.obj, flavor_decl.definition
        problems.extend(check_clusters(d, f.clusters, index))
        problems.extend(_wrong_scheduler(d, f.clusters, index, "kueue", "ResourceFlavor"))
        if f.topology_name is not None:
            # A flavor naming a missing Topology cannot be used for topology-aware scheduling
            # (kueue v0.19.2 pkg/cache/scheduler/clusterqueue.go: the ClusterQueue is
            # inactive, "TopologyNotFound").
            for c in kueue_clusters(index):
                if f.clusters is not None and c not in f.clusters:
                    continue
                installed = index.clusters[c].obj.kueue_topologies
                if f.topology_name not in installed:
                    problems.append(
                        problem(
                            d,
                            f"Topology {f.topology_name!r} is not installed on cluster {c!r} "
                            f"(Cluster.kueue_topologies: {known(installed)}); Kueue would "
                            "leave the flavor's queues inactive: add it to the cluster's "
                            "kueue_topologies, or limit the flavor's clusters",
                            "topology_name",
                        )
                    )
                    break
    for wpc in index.workload_priorities.values():
        problems.extend(check_clusters(wpc.definition, wpc.obj.clusters, index))
        problems.extend(
            _wrong_scheduler(
                wpc.definition, wpc.obj.clusters, index, "kueue", "WorkloadPriorityClass"
            )
        )
    for queue_decl in index.cluster_queues.values():
        cq, d = queue_decl.obj, queue_decl.definition
        problems.extend(check_clusters(d, cq.clusters, index))
        problems.extend(_wrong_scheduler(d, cq.clusters, index, "kueue", "ClusterQueue"))
        clusters = [c for c in kueue_clusters(index) if cq.clusters is None or c in cq.clusters]
        # An AdmissionCheck that does not exist leaves the queue inactive
        # ("AdmissionCheckNotFound", kueue v0.19.2 apis/kueue/v1beta2/clusterqueue_types.go;
        # pkg/cache/scheduler/clusterqueue.go): it must be one the cluster installs.
        for i, rule in enumerate(cq.check_rules()):
            for c in clusters:
                checks = index.clusters[c].obj.kueue_admission_checks
                if rule.check not in checks:
                    problems.append(
                        problem(
                            d,
                            f"admission check {rule.check!r} is not installed on cluster {c!r} "
                            f"(Cluster.kueue_admission_checks: {known(checks)}); Kueue "
                            "would leave the queue inactive, admitting nothing: add it to the "
                            "cluster's kueue_admission_checks, or limit the queue's clusters",
                            f"admission_checks[{i}]",
                        )
                    )
                    break
        for i, fq in enumerate(cq.flavors):
            problems.extend(_gpus_twice(d, i, fq, [index.clusters[c].obj for c in clusters]))
            flavor = index.flavors.get(fq.flavor)
            if flavor is None:
                problems.append(
                    problem(
                        d,
                        f"unknown ResourceFlavor {fq.flavor!r}; defined flavors: "
                        f"{known(index.flavors)}; Kueue would leave the queue inactive",
                        f"flavors[{i}].flavor",
                    )
                )
                continue
            missing = [c for c in clusters if not on_cluster(flavor.obj, c)]
            if missing:
                problems.append(
                    problem(
                        d,
                        f"ResourceFlavor {fq.flavor!r} ({flavor.file}) does not exist on "
                        f"cluster {missing[0]!r}, where this queue does; Kueue would leave the "
                        "queue inactive: add the cluster to the flavor's clusters",
                        f"flavors[{i}].flavor",
                    )
                )


def _gpus_twice(d: Definition, i: int, fq: FlavorQuota, clusters: list[Cluster]) -> list[Problem]:
    """An ``extended`` entry naming a cluster's GPU resource would quote the GPUs twice."""
    out = []
    for field in ("quota", "borrowing_limit", "lending_limit"):
        limit = getattr(fq, field)
        for c in clusters:
            if limit is not None and c.gpu_resource in limit.extended:
                out.append(
                    problem(
                        d,
                        f"flavor {fq.flavor!r} quotes {c.gpu_resource!r} in extended, the GPU "
                        f"resource of cluster {c.name!r}, which gpu= already quotes there: use "
                        "gpu= and drop it from extended",
                        f"flavors[{i}].{field}.extended",
                    )
                )
                break
    return out


def kueue_clusters(index: Index) -> list[str]:
    return sorted(n for n, c in index.clusters.items() if c.obj.scheduler == "kueue")


def queue_path(index: Index, name: str) -> list[Queue]:
    """The queue and its ancestors up to (not including) Volcano's root."""
    path: list[Queue] = []
    while name in index.queues and len(path) <= len(index.queues):
        queue = index.queues[name].obj
        path.append(queue)
        if queue.parent is None:
            break
        name = queue.parent
    return path


def not_a_leaf(d: Definition, queue: str, index: Index, field: str) -> Problem | None:
    return _not_a_leaf(d, queue, index, field) if queue in index.children else None


def _missing_clusters(child: Queue, parent: Queue, clusters: set[str]) -> set[str]:
    child_on = set(child.clusters) if child.clusters is not None else clusters
    parent_on = set(parent.clusters) if parent.clusters is not None else clusters
    return child_on - parent_on
