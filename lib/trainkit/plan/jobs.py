"""Placing jobs: the team's namespace, clusters and queue; a TrainJob's runtime."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import Problem
from ..load import PLATFORM_DIR, Definition
from ..model import Cluster, NetworkProfile, PyTorchJob, Queue, Resources, Team, TrainJob
from .platform import on_cluster
from .problems import known, problem
from .runtimes import PlannedRuntime, Runtimes

__all__ = ["Job", "PlannedJob", "check_unique", "place"]

Job = PyTorchJob | TrainJob

# Trainer names a TrainJob's pods <trainjob>-node-0-<index> and uses that as the
# pod's hostname, a DNS label of at most 63 characters.
_HOSTNAME_MAX = 63


@dataclass(frozen=True)
class PlannedJob:
    """A job placed on one cluster, with what it inherits resolved."""

    job: Job
    definition: Definition
    cluster: Cluster
    namespace: str
    queue: str | None
    """Volcano queue, or None on clusters without Volcano."""
    runtime: PlannedRuntime | None = None
    """The runtime a TrainJob names, on this cluster; None for other kinds."""
    network: NetworkProfile | None = None
    """The network profile a PyTorchJob names (a TrainJob's is its runtime's)."""

    @property
    def kind(self) -> str:
        return type(self.job).__name__

    @property
    def object_name(self) -> str:
        """The Kubernetes name (a TrainJob's carries its run number)."""
        return self.job.object_name if isinstance(self.job, TrainJob) else self.job.name

    @property
    def nodes(self) -> int:
        job = self.job
        if isinstance(job, TrainJob):
            return job.nodes or (self.runtime.runtime.nodes if self.runtime else 1)
        return job.nodes

    @property
    def resources(self) -> Resources | None:
        """Resources of each node, after the runtime's defaults."""
        job = self.job
        if isinstance(job, TrainJob) and job.resources is None and self.runtime:
            return self.runtime.runtime.resources
        return job.resources

    @property
    def procs_per_node(self) -> int:
        """Processes per node as the operator computes them."""
        job = self.job
        if isinstance(job, PyTorchJob):
            return job.nprocs
        if job.procs_per_node is not None:
            return job.procs_per_node
        res = self.resources
        if res is None:
            return 1
        if res.gpu:
            return res.gpu
        # Trainer's "auto" without GPUs: one process per (rounded-up) CPU.
        cpu = res.cpu
        cores = int(cpu[:-1]) / 1000 if cpu.endswith("m") else float(cpu)
        return max(1, math.ceil(cores))


def place(
    job: Job,
    d: Definition,
    teams: dict[str, tuple[Team, Definition]],
    queues: dict[str, tuple[Queue, Definition]],
    clusters: dict[str, tuple[Cluster, Definition]],
    runtimes: Runtimes,
    problems: list[Problem],
) -> list[PlannedJob]:
    """The job on each of its clusters; every reference problem is collected."""
    if d.team not in teams:
        problems.append(
            problem(
                d,
                f"team {d.team!r} (directory jobs/{d.team}/) is not declared; "
                f"add Team(name={d.team!r}, queues=[...]) to jobs/{PLATFORM_DIR}/; "
                f"declared teams: {known(teams)}",
            )
        )
        return []
    team, tdef = teams[d.team]
    allowed = team.clusters if team.clusters is not None else sorted(clusters)
    wanted = job.clusters if job.clusters is not None else allowed
    if not wanted:
        problems.append(problem(d, "the job runs on no cluster; set clusters=[...]", "clusters"))
    out = []
    for i, cname in enumerate(wanted):
        field = f"clusters[{i}]" if job.clusters is not None else "clusters"
        if cname not in clusters:
            problems.append(
                problem(d, f"unknown cluster {cname!r}; defined clusters: {known(clusters)}", field)
            )
            continue
        if cname not in allowed:
            problems.append(
                problem(
                    d,
                    f"team {team.name!r} may not run on cluster {cname!r} "
                    f"(Team.clusters in {tdef.file} allows {known(allowed)})",
                    field,
                )
            )
            continue
        cluster = clusters[cname][0]
        queue = _queue_for(d, job, team, tdef, cluster, queues, problems)
        runtime = None
        if isinstance(job, TrainJob):
            found = runtimes.resolve(job.runtime, team.name, cname)
            if isinstance(found, str):
                problems.append(problem(d, found, "runtime"))
                continue
            runtime = found
        pj = PlannedJob(job, d, cluster, team.target_namespace, queue, runtime)
        _check_size(pj, problems)
        out.append(pj)
    return out


def _check_size(pj: PlannedJob, problems: list[Problem]) -> None:
    d, job, cluster = pj.definition, pj.job, pj.cluster
    gpu = pj.resources.gpu if pj.resources else 0
    inherited = isinstance(job, TrainJob) and job.resources is None
    field = "runtime" if inherited else "resources.gpu"
    if gpu > cluster.gpus_per_node:
        problems.append(
            problem(
                d,
                f"{gpu} exceeds the {cluster.gpus_per_node} GPUs per node of cluster "
                f"{cluster.name!r}" + (" (from the runtime's resources)" if inherited else ""),
                field,
            )
        )
    if job.procs_per_node is not None and gpu and job.procs_per_node > gpu:
        problems.append(
            problem(
                d,
                f"{job.procs_per_node} processes per node but only {gpu} GPUs: each process "
                "drives one GPU; lower procs_per_node or raise resources.gpu",
                "procs_per_node",
            )
        )
    if isinstance(job, TrainJob):
        hostname = f"{pj.object_name}-node-0-{pj.nodes - 1}"
        if len(hostname) > _HOSTNAME_MAX:
            over = len(hostname) - _HOSTNAME_MAX
            problems.append(
                problem(
                    d,
                    f"name {job.name!r} is too long for run {job.run} on {pj.nodes} nodes: the "
                    f"pod hostname {hostname!r} would exceed 63 characters; shorten the name "
                    f"by {over} characters",
                    "name",
                )
            )


def _queue_for(
    d: Definition,
    job: Job,
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
            problem(
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
            problem(
                d,
                f"team {team.name!r} may not use queue {name!r}; its queues: "
                f"{known(team.queues)} (Team in {tdef.file})",
                "queue",
            )
        )
        return None
    if name in queues and not on_cluster(queues[name][0], cluster.name):
        problems.append(
            problem(
                d,
                f"queue {name!r} does not exist on cluster {cluster.name!r}; "
                "add the cluster to the Queue's clusters or choose other "
                "clusters",
                "queue",
            )
        )
    return name


def check_unique(placed: list[PlannedJob], problems: list[Problem]) -> None:
    """Two jobs of one kind may not share a name in a namespace of a cluster."""
    seen: dict[tuple[str, str, str, str], PlannedJob] = {}
    for p in placed:
        key = (p.cluster.name, p.namespace, p.kind, p.object_name)
        first = seen.get(key)
        if first is not None and first.definition is not p.definition:
            problems.append(
                problem(
                    p.definition,
                    f"another {p.kind} named {p.object_name!r} "
                    f"runs in namespace {p.namespace!r} on cluster "
                    f"{p.cluster.name!r} ({first.definition.file}:"
                    f"{first.definition.line}); rename one",
                    "name",
                )
            )
        seen.setdefault(key, p)
