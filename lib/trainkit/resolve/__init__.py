"""Resolve references between definitions and group the result per cluster.

The plan is where a job meets its platform: the team's namespace, queue and
clusters, the cluster's GPU resource and accelerator, the network profile, and
for a TrainJob the runtime it names. Every reference error names what exists,
and every error is collected before the plan is refused. What the platform
*allows* (caps, registries, queue capacity) is checked later, on the pods the
controllers will create (``trainkit.policy``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..errors import DefinitionError, Problem
from ..load import PLATFORM_DIR, Definition
from ..model import (
    JOB_KINDS,
    ArgoCD,
    Cluster,
    ClusterQueue,
    NetworkProfile,
    Queue,
    RayCluster,
    ResourceFlavor,
    Team,
    WorkloadPriorityClass,
)
from .index import Declared, Index, build_index
from .jobs import PlannedJob, check_head_services, check_ray_clusters, check_unique, place
from .network import check_profiles
from .problems import problem
from .references import check_kueue, check_queues, check_teams, on_cluster, queue_path
from .rendezvous import check_rendezvous
from .runtimes import PlannedRuntime, collect_runtimes

__all__ = [
    "ClusterPlan",
    "Declared",
    "Index",
    "KueueObjects",
    "Plan",
    "PlannedJob",
    "PlannedQueue",
    "PlannedRuntime",
    "build_plan",
    "problem",
    "queue_path",
]


@dataclass(frozen=True)
class PlannedQueue:
    queue: Queue
    definition: Definition
    depth: int
    """0 for children of Volcano's root; parents are created before children."""


@dataclass(frozen=True)
class KueueObjects:
    """What a Kueue cluster gets: its flavors and ClusterQueues, and a LocalQueue of each
    queue in the namespace of every team that lists it."""

    flavors: tuple[Declared[ResourceFlavor], ...] = ()
    cluster_queues: tuple[Declared[ClusterQueue], ...] = ()
    local_queues: tuple[tuple[str, str, Definition], ...] = ()
    """(namespace, queue, the Team's definition), sorted."""
    namespaces: dict[str, tuple[str, ...]] = field(default_factory=dict)
    workload_priorities: tuple[Declared[WorkloadPriorityClass], ...] = ()
    """ClusterQueue → the namespaces of the teams that list it (its namespaceSelector)."""


@dataclass(frozen=True)
class ClusterPlan:
    cluster: Cluster
    definition: Definition
    namespaces: tuple[tuple[str, str, str], ...]
    """(namespace, team, file declaring the team), sorted."""
    queues: tuple[PlannedQueue, ...]
    runtimes: tuple[PlannedRuntime, ...]
    jobs: tuple[PlannedJob, ...]
    kueue: KueueObjects = KueueObjects()


@dataclass(frozen=True)
class Plan:
    clusters: tuple[ClusterPlan, ...]
    index: Index
    warnings: tuple[Problem, ...] = ()
    """Not errors, but worth fixing (printed as warnings)."""

    @property
    def argocd(self) -> ArgoCD | None:
        return self.index.argocd.obj if self.index.argocd else None

    @property
    def argocd_definition(self) -> Definition | None:
        return self.index.argocd.definition if self.index.argocd else None

    @property
    def network_profiles(self) -> tuple[NetworkProfile, ...]:
        """Every declared profile: what manifests may grant pods (``trainkit check``)."""
        return tuple(p.obj for _, p in sorted(self.index.profiles.items()))

    def jobs(self) -> list[PlannedJob]:
        return [pj for cp in self.clusters for pj in cp.jobs]


def build_plan(defs: Sequence[Definition]) -> Plan:
    """Resolve every reference; raise one DefinitionError listing all problems."""
    problems: list[Problem] = []
    warnings: list[Problem] = []
    index = build_index(defs, problems)
    check_teams(index, problems)
    depths = check_queues(index, problems)
    check_kueue(index, problems)
    check_profiles(index, problems)
    runtimes = collect_runtimes(defs, index, problems, warnings)

    jobs = [d for d in defs if isinstance(d.obj, JOB_KINDS)]
    if jobs and not index.clusters:
        problems.append(
            Problem(
                file=f"jobs/{PLATFORM_DIR}/",
                message=(
                    "no Cluster is defined; add Cluster(name=..., server=..., gpus_per_node=...) "
                    f"to a file in jobs/{PLATFORM_DIR}/"
                ),
            )
        )
    # Where each RayCluster runs (its clusters, else its team's): a RayJob on it follows.
    ray_clusters = {
        (d.team, d.obj.name): _where(d.obj, index.teams.get(d.team))
        for d in jobs
        if isinstance(d.obj, RayCluster)
    }
    placed = [
        p for d in jobs if isinstance(d.obj, JOB_KINDS)
        for p in place(d.obj, d, index, runtimes, problems, ray_clusters)
    ]  # fmt: skip
    check_unique(placed, problems)
    check_head_services(placed, problems)
    check_rendezvous(placed, problems)
    placed = check_ray_clusters(placed, problems)
    if problems:
        # A job on several clusters can hit the same cluster-independent problem on each.
        raise DefinitionError(list(dict.fromkeys(problems)))

    per_cluster: dict[str, list[PlannedJob]] = defaultdict(list)
    for p in placed:
        per_cluster[p.cluster.name].append(p)
    plans = []
    for name in sorted(index.clusters):
        declared = index.clusters[name]
        cqueues = sorted(
            (
                PlannedQueue(q.obj, q.definition, depths[qn])
                for qn, q in index.queues.items()
                if on_cluster(q.obj, name) and declared.obj.scheduler == "volcano"
            ),
            key=lambda pq: (pq.depth, pq.queue.name),
        )
        namespaces = sorted(
            {
                (t.obj.target_namespace, tn, t.file)
                for tn, t in index.teams.items()
                if on_cluster(t.obj, name)
            }
        )
        cjobs = sorted(per_cluster[name], key=lambda p: (p.namespace, p.kind, p.object_name))
        plans.append(
            ClusterPlan(
                declared.obj,
                declared.definition,
                tuple(namespaces),
                tuple(cqueues),
                tuple(runtimes.on(name)),
                tuple(cjobs),
                _kueue_objects(index, declared.obj),
            )
        )
    return Plan(tuple(plans), index, tuple(dict.fromkeys(warnings)))


def _where(rc: RayCluster, team: Declared[Team] | None) -> list[str] | None:
    """The clusters a RayCluster runs on: its own, else its team's (None: every cluster)."""
    if rc.clusters is not None:
        return rc.clusters
    return team.obj.clusters if team is not None else None


def _kueue_objects(index: Index, cluster: Cluster) -> KueueObjects:
    if cluster.scheduler != "kueue":
        return KueueObjects()
    name = cluster.name
    queues = tuple(q for _, q in sorted(index.cluster_queues.items()) if on_cluster(q.obj, name))
    local = sorted(
        (t.obj.target_namespace, q, t.definition)
        for t in index.teams.values()
        if on_cluster(t.obj, name)
        for q in t.obj.queues
        if any(cq.obj.name == q for cq in queues)
    )
    return KueueObjects(
        flavors=tuple(f for _, f in sorted(index.flavors.items()) if on_cluster(f.obj, name)),
        cluster_queues=queues,
        local_queues=tuple(local),
        workload_priorities=tuple(
            w for _, w in sorted(index.workload_priorities.items()) if on_cluster(w.obj, name)
        ),
        namespaces={
            cq.obj.name: tuple(sorted({ns for ns, q, _ in local if q == cq.obj.name}))
            for cq in queues
        },
    )
