"""Resolve references between definitions and group the result per cluster.

The plan is where a job meets its platform: the team's namespace, queue and
clusters, the cluster's GPU resource, and for a TrainJob the runtime it
names. Every reference error names what exists, and every error is collected
before the plan is refused.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import DefinitionError, Problem
from ..load import PLATFORM_DIR, Definition
from ..model import ArgoCD, Cluster, NetworkProfile, Policy, PyTorchJob, Queue, Team, TrainJob
from .jobs import PlannedJob, check_unique, place
from .platform import by_name, check_queues, check_teams, on_cluster
from .policy import check_policy
from .problems import problem
from .runtimes import PlannedRuntime, collect_runtimes

__all__ = ["ClusterPlan", "Plan", "PlannedJob", "PlannedQueue", "PlannedRuntime", "build_plan"]


@dataclass(frozen=True)
class PlannedQueue:
    queue: Queue
    definition: Definition
    depth: int
    """0 for children of Volcano's root; parents are created before children."""


@dataclass(frozen=True)
class ClusterPlan:
    cluster: Cluster
    definition: Definition
    namespaces: tuple[tuple[str, str, str], ...]
    """(namespace, team, file declaring the team), sorted."""
    queues: tuple[PlannedQueue, ...]
    runtimes: tuple[PlannedRuntime, ...]
    jobs: tuple[PlannedJob, ...]


@dataclass(frozen=True)
class Plan:
    clusters: tuple[ClusterPlan, ...]
    argocd: ArgoCD | None
    argocd_definition: Definition | None
    network_profiles: tuple[NetworkProfile, ...] = ()
    """Every declared profile: what manifests may grant pods (``trainkit check``)."""


def build_plan(defs: Sequence[Definition]) -> Plan:
    """Resolve every reference; raise one DefinitionError listing all problems."""
    problems: list[Problem] = []
    clusters = by_name(defs, Cluster, problems)
    teams = by_name(defs, Team, problems)
    queues = by_name(defs, Queue, problems)
    argocds = [(d.obj, d) for d in defs if isinstance(d.obj, ArgoCD)]
    for _, extra in argocds[1:]:
        problems.append(
            problem(extra, f"only one ArgoCD is allowed; first at {argocds[0][1].file}")
        )

    cluster_names = set(clusters)
    check_teams(teams, queues, cluster_names, problems)
    depths = check_queues(queues, cluster_names, problems)
    runtimes = collect_runtimes(defs, clusters, teams, queues, problems)

    jobs = [(d.obj, d) for d in defs if isinstance(d.obj, PyTorchJob | TrainJob)]
    if jobs and not clusters:
        problems.append(
            Problem(
                file=f"jobs/{PLATFORM_DIR}/",
                message=(
                    "no Cluster is defined; add Cluster(name=..., server=..., gpus_per_node=...) "
                    f"to a file in jobs/{PLATFORM_DIR}/"
                ),
            )
        )
    placed = [p for j, d in jobs for p in place(j, d, teams, queues, clusters, runtimes, problems)]
    check_unique(placed, problems)
    profiles = by_name(defs, NetworkProfile, problems)
    policies = [d for d in defs if isinstance(d.obj, Policy)]
    placed, runtimes = check_policy(placed, runtimes, teams, profiles, policies, clusters, problems)
    if problems:
        # A job on several clusters can hit the same cluster-independent problem on each.
        raise DefinitionError(list(dict.fromkeys(problems)))

    per_cluster: dict[str, list[PlannedJob]] = defaultdict(list)
    for p in placed:
        per_cluster[p.cluster.name].append(p)
    plans = []
    for name in sorted(clusters):
        cluster, cdef = clusters[name]
        cqueues = sorted(
            (
                PlannedQueue(q, qd, depths[qn])
                for qn, (q, qd) in queues.items()
                if on_cluster(q, name)
            ),
            key=lambda pq: (pq.depth, pq.queue.name),
        )
        namespaces = sorted(
            {
                (t.target_namespace, tn, td.file)
                for tn, (t, td) in teams.items()
                if on_cluster(t, name)
            }
        )
        cjobs = sorted(per_cluster[name], key=lambda p: (p.namespace, p.kind, p.object_name))
        plans.append(
            ClusterPlan(
                cluster,
                cdef,
                tuple(namespaces),
                tuple(cqueues),
                tuple(runtimes.on(name)),
                tuple(cjobs),
            )
        )
    argo = argocds[0] if argocds else None
    return Plan(
        tuple(plans),
        argo[0] if argo else None,
        argo[1] if argo else None,
        tuple(p for _, (p, _) in sorted(profiles.items())),
    )
