"""The platform's policy applied to placed jobs and runtimes.

Registries, per-job and per-team GPU caps, and network profiles. Every
message names the rule (``Policy.registries``, ``Team.max_gpus``, …) and the
file that declares it, so the person who hits it knows whom to ask.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace

from ..errors import Problem
from ..load import PLATFORM_DIR, Definition
from ..model import Cluster, NetworkProfile, Policy, PyTorchJob, Team, Toleration, TrainJob
from ..model.policy import image_allowed
from .jobs import PlannedJob
from .platform import check_clusters, on_cluster
from .problems import known, problem
from .runtimes import PlannedRuntime, Runtimes

__all__ = ["check_policy", "job_gpus"]

Profiles = dict[str, tuple[NetworkProfile, Definition]]


def job_gpus(pj: PlannedJob) -> int:
    """GPUs of a placed job: nodes times GPUs per node, after its runtime's defaults."""
    return pj.nodes * (pj.resources.gpu if pj.resources else 0)


def check_policy(
    placed: Sequence[PlannedJob],
    runtimes: Runtimes,
    teams: dict[str, tuple[Team, Definition]],
    profiles: Profiles,
    policies: Sequence[Definition],
    clusters: dict[str, tuple[Cluster, Definition]],
    problems: list[Problem],
) -> tuple[list[PlannedJob], Runtimes]:
    """Collect every policy problem; return jobs and runtimes with their network profiles."""
    for extra in policies[1:]:
        problems.append(
            problem(
                extra, f"only one Policy is allowed; first at {policies[0].file}:{policies[0].line}"
            )
        )
    pdef = policies[0] if policies else None
    policy = pdef.obj if pdef is not None and isinstance(pdef.obj, Policy) else Policy()
    where = pdef.file if pdef is not None else ""
    _check_profiles(profiles, clusters, problems)

    resolved: dict[int, PlannedRuntime] = {}
    checked: set[int] = set()
    for pr in runtimes.placed:
        if id(pr.definition) not in checked:
            checked.add(id(pr.definition))
            _check_image(pr.definition, pr.runtime.image, policy, where, problems)
        network = _network(pr.definition, pr.runtime.network, pr.cluster, profiles, problems)
        resolved[id(pr)] = replace(pr, network=network)
        _check_tolerations(pr.definition, pr.runtime.tolerations, pr.cluster, clusters, problems)

    out: list[PlannedJob] = []
    per_team: dict[tuple[str, str], list[tuple[PlannedJob, int]]] = defaultdict(list)
    for pj in placed:
        job, d = pj.job, pj.definition
        if id(d) not in checked and job.image is not None:
            checked.add(id(d))
            _check_image(d, job.image, policy, where, problems)
        if isinstance(job, PyTorchJob):
            pj = replace(pj, network=_network(d, job.network, pj.cluster, profiles, problems))
            _check_tolerations(d, job.tolerations, pj.cluster, clusters, problems)
        elif pj.runtime is not None:
            runtime = resolved.get(id(pj.runtime), pj.runtime)
            pj = replace(pj, runtime=runtime, network=runtime.network)
        gpus = job_gpus(pj)
        if policy.max_gpus_per_job is not None and gpus > policy.max_gpus_per_job:
            problems.append(_over_job_cap(pj, gpus, policy.max_gpus_per_job, where))
        per_team[(d.team, pj.cluster.name)].append((pj, gpus))
        out.append(pj)

    for (team_name, cluster), jobs in sorted(per_team.items()):
        team, tdef = teams[team_name]
        total = sum(g for _, g in jobs)
        if team.max_gpus is not None and total > team.max_gpus:
            listed = ", ".join(
                f"{pj.definition.obj.describe()} {g} ({pj.definition.file}:{pj.definition.line})"
                for pj, g in jobs
                if g
            )
            problems.append(
                problem(
                    tdef,
                    f"the team's jobs on cluster {cluster!r} use {total} GPUs together but "
                    f"Team.max_gpus in {tdef.file} allows {team.max_gpus}: {listed}; lower the "
                    "jobs' nodes or GPUs, or raise max_gpus",
                    "max_gpus",
                )
            )
    return out, Runtimes(tuple(resolved[id(pr)] for pr in runtimes.placed))


def _check_tolerations(
    d: Definition,
    tolerations: Sequence[Toleration],
    cluster: Cluster,
    clusters: dict[str, tuple[Cluster, Definition]],
    problems: list[Problem],
) -> None:
    """A toleration lets pods onto tainted nodes; only the platform decides which."""
    allowed = cluster.tolerations
    for i, t in enumerate(tolerations):
        if any(a.covers(t) for a in allowed):
            continue
        where = clusters[cluster.name][1].file
        problems.append(
            problem(
                d,
                f"toleration {t.describe()!r} is not allowed on cluster {cluster.name!r}; "
                f"Cluster.tolerations in {where} allows "
                f"{known(a.describe() for a in allowed)}; remove it or ask the platform team "
                "to allow it",
                f"tolerations[{i}]",
            )
        )


def _check_image(
    d: Definition, image: str, policy: Policy, where: str, problems: list[Problem]
) -> None:
    if not image_allowed(image, policy.registries):
        problems.append(
            problem(
                d,
                f"image {image!r} is not from an allowed registry; Policy.registries in "
                f"{where} allows {known(policy.registries)}; push the image there or ask "
                "the platform team to allow its registry",
                "image",
            )
        )


def _network(
    d: Definition,
    name: str | None,
    cluster: Cluster,
    profiles: Profiles,
    problems: list[Problem],
) -> NetworkProfile | None:
    """The profile ``name`` on ``cluster``; a problem when it is unknown or not there."""
    if name is None:
        return None
    if name not in profiles:
        problems.append(
            problem(
                d,
                f"unknown network profile {name!r}; defined network profiles: {known(profiles)} "
                f"(declare NetworkProfile(name=...) in jobs/{PLATFORM_DIR}/)",
                "network",
            )
        )
        return None
    profile, ndef = profiles[name]
    if not on_cluster(profile, cluster.name):
        problems.append(
            problem(
                d,
                f"network profile {name!r} does not exist on cluster {cluster.name!r} "
                f"(NetworkProfile.clusters in {ndef.file} allows {known(profile.clusters or [])}); "
                "choose other clusters or add the cluster to the profile",
                "network",
            )
        )
        return None
    return profile


def _check_profiles(
    profiles: Profiles, clusters: dict[str, tuple[Cluster, Definition]], problems: list[Problem]
) -> None:
    for profile, d in profiles.values():
        problems.extend(check_clusters(d, profile.clusters, set(clusters)))
        for cname, (cluster, _) in sorted(clusters.items()):
            if on_cluster(profile, cname) and cluster.gpu_resource in profile.resources:
                problems.append(
                    problem(
                        d,
                        f"{cluster.gpu_resource!r} is the GPU resource of cluster {cname!r}; "
                        "GPUs come from each job's resources.gpu, remove it here",
                        f"resources.{cluster.gpu_resource}",
                    )
                )


def _over_job_cap(pj: PlannedJob, gpus: int, cap: int, where: str) -> Problem:
    job = pj.job
    inherited = isinstance(job, TrainJob) and job.nodes is None and job.resources is None
    if inherited:
        field = "runtime"
    elif isinstance(job, TrainJob) and job.nodes is None:
        field = "resources.gpu"
    else:
        field = "nodes"
    per_node = pj.resources.gpu if pj.resources else 0
    return problem(
        pj.definition,
        f"{gpus} GPUs ({pj.nodes} nodes × {per_node}"
        + (", from the runtime" if inherited else "")
        + f") exceed the per-job cap of {cap}; Policy.max_gpus_per_job in {where}; "
        "use fewer nodes or GPUs per node",
        field,
    )
