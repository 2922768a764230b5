"""Resolve references between definitions and group the result per cluster.

The plan is where a job meets its platform: the team's namespace, queue and
clusters, and the cluster's GPU resource. Every reference error names what
exists, and every error is collected before the plan is refused.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from .errors import DefinitionError, Problem
from .load import PLATFORM_DIR, Definition
from .model import ArgoCD, Cluster, PyTorchJob, Queue, Team, TrainkitModel

__all__ = ["ClusterPlan", "Plan", "PlannedJob", "PlannedQueue", "build_plan"]

M = TypeVar("M", bound=TrainkitModel)


@dataclass(frozen=True)
class PlannedJob:
    """A job placed on one cluster."""

    job: PyTorchJob
    definition: Definition
    cluster: Cluster
    namespace: str
    queue: str | None
    """Volcano queue, or None on clusters without Volcano."""


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
    jobs: tuple[PlannedJob, ...]


@dataclass(frozen=True)
class Plan:
    clusters: tuple[ClusterPlan, ...]
    argocd: ArgoCD | None
    argocd_definition: Definition | None


def _problem(d: Definition, message: str, field: str = "") -> Problem:
    return Problem(file=d.file, line=d.line, obj=d.obj.describe(), field=field, message=message)


def _known(names: Iterable[str]) -> str:
    names = sorted(names)
    return ", ".join(repr(n) for n in names) if names else "none"


def _by_name(
    defs: Sequence[Definition], kind: type[M], problems: list[Problem]
) -> dict[str, tuple[M, Definition]]:
    out: dict[str, tuple[M, Definition]] = {}
    for d in defs:
        obj = d.obj
        if not isinstance(obj, kind):
            continue
        name = str(getattr(obj, "name"))  # noqa: B009 - every named kind has .name
        if name in out:
            first = out[name][1]
            problems.append(
                _problem(
                    d,
                    f"duplicate {kind.__name__} name; first defined at {first.file}:{first.line}",
                    "name",
                )
            )
            continue
        out[name] = (obj, d)
    return out


def build_plan(defs: Sequence[Definition]) -> Plan:
    """Resolve every reference; raise one DefinitionError listing all problems."""
    problems: list[Problem] = []
    clusters = _by_name(defs, Cluster, problems)
    teams = _by_name(defs, Team, problems)
    queues = _by_name(defs, Queue, problems)
    argocds = [(d.obj, d) for d in defs if isinstance(d.obj, ArgoCD)]
    for _, extra in argocds[1:]:
        problems.append(
            _problem(extra, f"only one ArgoCD is allowed; first at {argocds[0][1].file}")
        )

    cluster_names = set(clusters)
    _check_teams(teams, queues, cluster_names, problems)
    depths = _check_queues(queues, cluster_names, problems)

    jobs = [(d.obj, d) for d in defs if isinstance(d.obj, PyTorchJob)]
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
    placed = [p for j, d in jobs for p in _place(j, d, teams, queues, clusters, problems)]
    _check_unique(placed, problems)
    if problems:
        raise DefinitionError(problems)

    per_cluster: dict[str, list[PlannedJob]] = defaultdict(list)
    for p in placed:
        per_cluster[p.cluster.name].append(p)
    plans = []
    for name in sorted(clusters):
        cluster, cdef = clusters[name]
        cqueues = sorted(
            (PlannedQueue(q, qd, depths[qn]) for qn, (q, qd) in queues.items() if _on(q, name)),
            key=lambda pq: (pq.depth, pq.queue.name),
        )
        namespaces = sorted(
            {(t.target_namespace, tn, td.file) for tn, (t, td) in teams.items() if _on(t, name)}
        )
        cjobs = sorted(per_cluster[name], key=lambda p: (p.namespace, p.job.name))
        plans.append(ClusterPlan(cluster, cdef, tuple(namespaces), tuple(cqueues), tuple(cjobs)))
    argo = argocds[0] if argocds else None
    return Plan(tuple(plans), argo[0] if argo else None, argo[1] if argo else None)


def _on(obj: Queue | Team, cluster: str) -> bool:
    return obj.clusters is None or cluster in obj.clusters


def _check_teams(
    teams: dict[str, tuple[Team, Definition]],
    queues: dict[str, tuple[Queue, Definition]],
    clusters: set[str],
    problems: list[Problem],
) -> None:
    seen_ns: dict[str, str] = {}
    for name, (team, d) in teams.items():
        ns = team.target_namespace
        if ns in seen_ns:
            problems.append(
                _problem(
                    d,
                    f"namespace {ns!r} is already team {seen_ns[ns]!r}'s; "
                    "each team needs its own namespace",
                    "namespace",
                )
            )
        seen_ns.setdefault(ns, name)
        for i, q in enumerate(team.queues):
            if q not in queues:
                problems.append(
                    _problem(
                        d, f"unknown queue {q!r}; defined queues: {_known(queues)}", f"queues[{i}]"
                    )
                )
        for i, c in enumerate(team.clusters or []):
            if c not in clusters:
                problems.append(
                    _problem(
                        d,
                        f"unknown cluster {c!r}; defined clusters: {_known(clusters)}",
                        f"clusters[{i}]",
                    )
                )


def _check_queues(
    queues: dict[str, tuple[Queue, Definition]], clusters: set[str], problems: list[Problem]
) -> dict[str, int]:
    depths: dict[str, int] = {}
    for name, (queue, d) in queues.items():
        for i, c in enumerate(queue.clusters or []):
            if c not in clusters:
                problems.append(
                    _problem(
                        d,
                        f"unknown cluster {c!r}; defined clusters: {_known(clusters)}",
                        f"clusters[{i}]",
                    )
                )
        depth, chain, parent = 0, [name], queue.parent
        while parent is not None:
            if parent not in queues:
                problems.append(
                    _problem(
                        d,
                        f"unknown parent queue {parent!r}; defined queues: {_known(queues)}",
                        "parent",
                    )
                )
                break
            if parent in chain:
                problems.append(
                    _problem(
                        d, "queue parents form a cycle: " + " → ".join([*chain, parent]), "parent"
                    )
                )
                break
            pq = queues[parent][0]
            if chain == [name]:
                missing = _missing_clusters(queue, pq, clusters)
                if missing:
                    problems.append(
                        _problem(
                            d,
                            f"parent queue {parent!r} does not exist on "
                            f"cluster(s) {_known(missing)}",
                            "parent",
                        )
                    )
            chain.append(parent)
            depth += 1
            parent = pq.parent
        depths[name] = depth
    return depths


def _missing_clusters(child: Queue, parent: Queue, clusters: set[str]) -> set[str]:
    child_on = set(child.clusters) if child.clusters is not None else clusters
    parent_on = set(parent.clusters) if parent.clusters is not None else clusters
    return child_on - parent_on


def _place(
    job: PyTorchJob,
    d: Definition,
    teams: dict[str, tuple[Team, Definition]],
    queues: dict[str, tuple[Queue, Definition]],
    clusters: dict[str, tuple[Cluster, Definition]],
    problems: list[Problem],
) -> list[PlannedJob]:
    if d.team not in teams:
        problems.append(
            _problem(
                d,
                f"team {d.team!r} (directory jobs/{d.team}/) is not declared; "
                f"add Team(name={d.team!r}, queues=[...]) to jobs/{PLATFORM_DIR}/; "
                f"declared teams: {_known(teams)}",
            )
        )
        return []
    team, tdef = teams[d.team]
    allowed = team.clusters if team.clusters is not None else sorted(clusters)
    wanted = job.clusters if job.clusters is not None else allowed
    if not wanted:
        problems.append(_problem(d, "the job runs on no cluster; set clusters=[...]", "clusters"))
    out = []
    for i, cname in enumerate(wanted):
        field = f"clusters[{i}]" if job.clusters is not None else "clusters"
        if cname not in clusters:
            problems.append(
                _problem(
                    d, f"unknown cluster {cname!r}; defined clusters: {_known(clusters)}", field
                )
            )
            continue
        if cname not in allowed:
            problems.append(
                _problem(
                    d,
                    f"team {team.name!r} may not run on cluster {cname!r} "
                    f"(Team.clusters in {tdef.file} allows {_known(allowed)})",
                    field,
                )
            )
            continue
        cluster = clusters[cname][0]
        queue = _queue_for(d, job, team, tdef, cluster, queues, problems)
        if job.resources.gpu > cluster.gpus_per_node:
            problems.append(
                _problem(
                    d,
                    f"{job.resources.gpu} exceeds the {cluster.gpus_per_node} "
                    f"GPUs per node of cluster {cname!r}",
                    "resources.gpu",
                )
            )
        out.append(PlannedJob(job, d, cluster, team.target_namespace, queue))
    if job.resources.gpu and job.nprocs > job.resources.gpu:
        problems.append(
            _problem(
                d,
                f"{job.nprocs} processes per node but only "
                f"{job.resources.gpu} GPUs: each process drives one GPU; "
                "lower procs_per_node or raise resources.gpu",
                "procs_per_node",
            )
        )
    return out


def _queue_for(
    d: Definition,
    job: PyTorchJob,
    team: Team,
    tdef: Definition,
    cluster: Cluster,
    queues: dict[str, tuple[Queue, Definition]],
    problems: list[Problem],
) -> str | None:
    if cluster.scheduler != "volcano":
        return None
    name = job.queue or (team.queues[0] if team.queues else None)
    if name is None:
        problems.append(
            _problem(
                d,
                f"cluster {cluster.name!r} schedules with Volcano but team "
                f"{team.name!r} has no queues; add queues=[...] to its Team "
                f"in {tdef.file}",
                "queue",
            )
        )
        return None
    if name not in team.queues:
        problems.append(
            _problem(
                d,
                f"team {team.name!r} may not use queue {name!r}; its queues: "
                f"{_known(team.queues)} (Team in {tdef.file})",
                "queue",
            )
        )
        return None
    if name in queues and not _on(queues[name][0], cluster.name):
        problems.append(
            _problem(
                d,
                f"queue {name!r} does not exist on cluster {cluster.name!r}; "
                "add the cluster to the Queue's clusters or choose other "
                "clusters",
                "queue",
            )
        )
    return name


def _check_unique(placed: list[PlannedJob], problems: list[Problem]) -> None:
    seen: dict[tuple[str, str, str], PlannedJob] = {}
    for p in placed:
        key = (p.cluster.name, p.namespace, p.job.name)
        first = seen.get(key)
        if first is not None and first.definition is not p.definition:
            problems.append(
                _problem(
                    p.definition,
                    f"another PyTorchJob named {p.job.name!r} "
                    f"runs in namespace {p.namespace!r} on cluster "
                    f"{p.cluster.name!r} ({first.definition.file}:"
                    f"{first.definition.line}); rename one",
                    "name",
                )
            )
        seen.setdefault(key, p)
