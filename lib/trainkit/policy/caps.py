"""GPUs: per node (the cluster's hardware), per job (``Policy``), per team (``Team.max_gpus``)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from ..effective import EffectiveJob
from ..errors import Problem
from ..kube.quantities import parse_quantity
from ..model import PyTorchJob, RayCluster, RayJob, TrainJob
from ..model.operator_job import OperatorJob
from ..resolve import Index, PlannedRuntime, problem

__all__ = [
    "check_caps",
    "check_runtime_gpus",
    "gpu_field",
    "scaled_group",
    "team_gpus",
    "teams_over_cap",
]


def gpu_field(ej: EffectiveJob) -> tuple[str, str]:
    """Which field of the definition decides a job's GPUs, and a note when it is inherited."""
    job = ej.planned.job
    if isinstance(job, TrainJob) and job.resources is None:
        return "runtime", " (from the runtime's resources)"
    if isinstance(job, RayJob | RayCluster):
        # The pod set with the most GPUs: the head, or a worker group (in the job's order);
        # a job without groups runs everything on the head.
        if job.head is None:  # on an existing RayCluster: its GPUs are the cluster's
            return "ray_cluster", ""
        most = max([job.head.gpu, *(g.resources.gpu for g in job.workers)])
        if job.head.gpu == most:
            return "head.gpu", ""
        i = next(i for i, g in enumerate(job.workers) if g.resources.gpu == most)
        return f"workers[{i}].resources.gpu", ""
    if isinstance(job, OperatorJob) and (roles := _own_gpu_roles(ej)):
        # The pod set with the most GPUs, when a role's own resources give them.
        resource = ej.planned.cluster.gpu_resource
        most_set = max(ej.pod_sets, key=lambda ps: ps.gpus(resource))
        field = roles.get(most_set.role)
        if field is not None:
            return f"{field}.resources.gpu", ""
    return "resources.gpu", ""


def _own_gpu_roles(ej: EffectiveJob) -> dict[str, str]:
    """The pod sets (by role, as the effective pods name it) whose role gives its own
    resources, and that role's field: ``{"Launcher": "launcher", "ps": "ps"}``."""
    job = ej.planned.job
    if not isinstance(job, OperatorJob):
        return {}
    out = {}
    for field, role in job.roles().items():
        if role.resources is None:
            continue
        rtype = job.ROLE_FIELDS[field]
        for ps in ej.pod_sets:
            if ps.role in (rtype, field) or ps.role.lower() == rtype.lower():
                out[ps.role] = field
    return out


def check_caps(index: Index, jobs: Sequence[EffectiveJob], problems: list[Problem]) -> None:
    rules = index.rules
    where = index.policy.file if index.policy else ""
    per_team: dict[tuple[str, str], list[tuple[EffectiveJob, int]]] = defaultdict(list)
    for ej in jobs:
        pj, d = ej.planned, ej.planned.definition
        cluster = pj.cluster
        per_node = ej.gpus_per_node()
        field, inherited = gpu_field(ej)
        if per_node > cluster.gpus_per_node:
            problems.append(
                problem(
                    d,
                    f"{per_node} exceeds the {cluster.gpus_per_node} GPUs per node of cluster "
                    f"{cluster.name!r}{inherited}",
                    field,
                )
            )
        if ej.procs_per_node.isdigit() and per_node and int(ej.procs_per_node) > per_node:
            problems.append(
                problem(
                    d,
                    f"{ej.procs_per_node} processes per node but only {per_node} GPUs: each "
                    "process drives one GPU; lower procs_per_node or raise resources.gpu",
                    "procs_per_node",
                )
            )
        gpus = ej.gpus()
        cap = rules.max_gpus_per_job
        if cap is not None and gpus > cap:
            job = pj.job
            from_runtime = isinstance(job, TrainJob) and job.resources is None
            both = from_runtime and isinstance(job, TrainJob) and job.nodes is None
            cap_field = "runtime" if both else "resources.gpu" if inherited else "nodes"
            count = f"{ej.nodes} nodes × {per_node}"
            if isinstance(job, OperatorJob) and _own_gpu_roles(ej):
                # Roles of their own size: each pod set's count × GPUs.
                count = " + ".join(
                    f"{ps.role} {ps.count} × {ps.gpus(cluster.gpu_resource)}"
                    for ps in ej.pod_sets
                    if ps.gpus(cluster.gpu_resource)
                )
            if isinstance(job, PyTorchJob) and job.max_workers > job.workers:
                # Counted at the most Workers its autoscaler may start (effective/operator_pods.py).
                cap_field = "elastic"
                count = f"up to {ej.nodes} Workers (elastic.max_nodes) × {per_node}"
            if isinstance(job, RayJob | RayCluster):
                # An autoscaled group counted at the most its autoscaler may start
                # (effective/ray_pods.py).
                scaled = scaled_group(job)
                cap_field = f"workers[{scaled}].max_nodes" if scaled is not None else "workers"
                count = " + ".join(
                    f"{ps.role} {_ray_count(job, ps.role, ps.count)} × "
                    f"{ps.gpus(cluster.gpu_resource)}"
                    for ps in ej.pod_sets
                    if ps.gpus(cluster.gpu_resource)
                )
            problems.append(
                problem(
                    d,
                    f"{gpus} GPUs ({count}"
                    + (", from the runtime" if from_runtime else "")
                    + f") exceed the per-job cap of {cap}; Policy.max_gpus_per_job in {where}; "
                    "use fewer nodes or GPUs per node",
                    cap_field,
                )
            )
        per_team[(d.team, cluster.name)].append((ej, gpus))
    for team_name, cluster_name, total, limit in teams_over_cap(index, team_gpus(jobs)):
        team = index.teams[team_name]
        listed = ", ".join(
            f"{ej.planned.definition.obj.describe()} {g} "
            f"({ej.planned.definition.file}:{ej.planned.definition.line})"
            for ej, g in per_team[(team_name, cluster_name)]
            if g
        )
        problems.append(
            problem(
                team.definition,
                f"the team's jobs on cluster {cluster_name!r} use {total} GPUs together but "
                f"Team.max_gpus in {team.file} allows {limit}: {listed}; lower the jobs' "
                "nodes or GPUs, or raise max_gpus",
                "max_gpus",
            )
        )


def scaled_group(job: RayJob | RayCluster) -> int | None:
    """The index of the autoscaled worker group whose ``max_nodes`` decides the job's most
    GPUs (the first with GPUs, else the first), None when no group autoscales."""
    scaled = [i for i, g in enumerate(job.workers) if g.scaling[0] != g.scaling[1]]
    with_gpus = [i for i in scaled if job.workers[i].resources.gpu]
    first = with_gpus or scaled
    return first[0] if first else None


def _ray_count(job: RayJob | RayCluster, role: str, count: int) -> str:
    """A Ray pod set's count in a cap's message: ``up to N (workers[i].max_nodes)`` for an
    autoscaled group."""
    for i, g in enumerate(job.workers):
        if g.name == role and g.scaling[0] != g.scaling[1]:
            hosts = " × hosts" if g.hosts > 1 else ""
            return f"up to {count} (workers[{i}].max_nodes{hosts})"
    return str(count)


def team_gpus(jobs: Sequence[EffectiveJob]) -> dict[tuple[str, str], int]:
    """GPUs of the jobs per (team, cluster), as ``Team.max_gpus`` counts them."""
    out: dict[tuple[str, str], int] = defaultdict(int)
    for ej in jobs:
        out[(ej.planned.definition.team, ej.planned.cluster.name)] += ej.gpus()
    return dict(out)


def teams_over_cap(
    index: Index, totals: Mapping[tuple[str, str], int]
) -> list[tuple[str, str, int, int]]:
    """(team, cluster, GPUs, Team.max_gpus) of every team whose jobs on a cluster together
    use more GPUs than its cap allows, sorted."""
    over = []
    for (team_name, cluster_name), total in sorted(totals.items()):
        declared = index.teams.get(team_name)
        limit = declared.obj.max_gpus if declared is not None else None
        if limit is not None and total > limit:
            over.append((team_name, cluster_name, total, limit))
    return over


def check_runtime_gpus(
    runtimes: Sequence[tuple[PlannedRuntime, dict[str, Any]]], problems: list[Problem]
) -> None:
    for pr, body in runtimes:
        for rjob in body["spec"]["template"]["spec"]["replicatedJobs"]:
            pod = rjob["template"]["spec"]["template"]["spec"]
            for c in pod.get("containers") or []:
                limits = (c.get("resources") or {}).get("limits") or {}
                value = parse_quantity(str(limits.get(pr.cluster.gpu_resource, "0")))
                gpus = int(value or Decimal(0))
                if gpus > pr.cluster.gpus_per_node:
                    problems.append(
                        problem(
                            pr.definition,
                            f"{gpus} exceeds the {pr.cluster.gpus_per_node} GPUs per node of "
                            f"cluster {pr.cluster.name!r}",
                            "resources.gpu",
                        )
                    )
