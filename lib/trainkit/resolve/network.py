"""Network profiles: which one a job or runtime names, on each of its clusters."""

from __future__ import annotations

import enum
import functools
from collections.abc import Iterator, Mapping, Sequence
from itertools import pairwise
from pathlib import PurePath
from typing import Annotated, Literal, get_args, get_origin

from pydantic import BaseModel

from ..errors import Problem
from ..load import PLATFORM_DIR, Definition
from ..model import (
    Cluster,
    ClusterTrainingRuntime,
    MPIJob,
    NetworkProfile,
    Resources,
    Team,
    TrainingRuntime,
    TrainJob,
)
from ..model.base import TrainkitModel
from ..model.mpijob import HOST_NETWORK_SSH_PORT
from ..model.paddlejob import PADDLE_OPERATOR, PaddleJob
from ..model.pod_metadata import MULTUS_NETWORKS
from ..model.rules import DEVICE_VOLUME
from ..model.volumes import volume_fields, volume_name
from .index import Declared, Index
from .problems import known, problem
from .references import check_clusters, on_cluster

__all__ = [
    "check_extended_grant",
    "check_network_grant",
    "check_profiles",
    "claims_unsupported",
    "env_conflicts",
    "extended_gpus",
    "fabric_conflicts",
    "host_network_mpijob",
    "host_network_runtime",
    "host_network_trainjob",
    "resolve_network",
]


def resolve_network(
    d: Definition, name: str | None, cluster: Cluster, index: Index, problems: list[Problem]
) -> NetworkProfile | None:
    """The profile ``name`` on ``cluster``; a problem when it is unknown or not there."""
    if name is None:
        return None
    if name not in index.profiles:
        problems.append(
            problem(
                d,
                f"unknown network profile {name!r}; defined network profiles: "
                f"{known(index.profiles)} (declare NetworkProfile(name=...) in "
                f"jobs/{PLATFORM_DIR}/)",
                "network",
            )
        )
        return None
    declared = index.profiles[name]
    profile = declared.obj
    if not on_cluster(profile, cluster.name):
        problems.append(
            problem(
                d,
                f"network profile {name!r} does not exist on cluster {cluster.name!r} "
                f"(NetworkProfile.clusters in {declared.file} allows "
                f"{known(profile.clusters or [])}); choose other clusters or add the cluster to "
                "the profile",
                "network",
            )
        )
        return None
    names = {**getattr(d.obj, "env", {}), **getattr(d.obj, "env_refs", {})}
    problems.extend(env_conflicts(d, names, profile, index))
    runtime_env = getattr(d.obj, "runtime_env", None)
    if runtime_env is not None:
        # A RayJob's runtime_env reaches every task of the job, over the pods' own env.
        problems.extend(
            env_conflicts(
                d, runtime_env.env_vars, profile, index, ("runtime_env.env_vars", "runtime_env")
            )
        )
    return profile


def check_network_grant(
    d: Definition,
    name: str | None,
    team: Declared[Team],
    index: Index,
    field: str = "network",
    through: str = "",
) -> list[Problem]:
    """A problem when ``d`` (of ``team``) uses the declared profile ``name`` that the team is
    not granted (``Team.network_profiles``). ``through`` names the runtime a TrainJob gets the
    profile from; an unknown profile is ``resolve_network``'s problem, not this one."""
    if name is None or name not in index.profiles or name in team.obj.network_profiles:
        return []
    declared = index.profiles[name]
    how = "choose a runtime without it" if through else "drop network= or name a granted one"
    return [
        problem(
            d,
            f"team {team.obj.name!r} may not use network profile {name!r}{through}, which grants "
            f"{describe_grants(declared.obj)} ({declared.file}); Team.network_profiles in "
            f"{team.file} allows {known(team.obj.network_profiles)}: ask the platform team to "
            f"add it there, or {how}",
            field,
        )
    ]


def _resources(obj: object, path: str = "") -> Iterator[tuple[str, Resources]]:
    """Every ``Resources`` in a definition (the job's, its roles', worker groups', init
    containers'), with its field path. Only the fields that can hold one are walked
    (``_resource_fields``): the rest of a job (env, volumes, scripts...) is not."""
    if isinstance(obj, Resources):
        yield path, obj
    elif isinstance(obj, TrainkitModel):
        for name in _resource_fields(type(obj)):
            yield from _resources(getattr(obj, name), f"{path}.{name}" if path else name)
    elif isinstance(obj, Mapping):
        for key, value in obj.items():
            yield from _resources(value, f"{path}.{key}")
    elif isinstance(obj, list | tuple):
        for i, value in enumerate(obj):
            yield from _resources(value, f"{path}[{i}]")


@functools.cache
def _resource_fields(cls: type[TrainkitModel]) -> tuple[str, ...]:
    """The fields of ``cls`` (in their order) whose annotation lets them hold a ``Resources``,
    at any depth, once per class. A value is validated into its annotation, so a field of
    only strings, numbers, literals or models that hold none never holds one; an annotation
    this cannot read (``Any``, a bare container) counts as one that may."""
    return tuple(name for name, f in cls.model_fields.items() if _may_hold(f.annotation))


_LEAVES = (str, bytes, int, float, bool, enum.Enum, PurePath)


def _may_hold(annotation: object) -> bool:
    """Whether a value of ``annotation`` can be or contain a ``Resources`` that ``_resources``
    reaches (through models, mappings, lists and tuples): every model the annotation names,
    and every model those name, in turn."""
    todo, models = [annotation], set()
    while todo:
        tp = todo.pop()
        origin = get_origin(tp)
        if origin is Literal or tp is None or tp is type(None):
            continue
        if origin is Annotated:
            todo.append(get_args(tp)[0])
        elif origin is not None:  # a union, a list, a dict, a tuple...
            args = [a for a in get_args(tp) if a is not Ellipsis]
            if not args:
                return True
            todo.extend(args)
        elif not isinstance(tp, type):
            return True  # Any, a type variable, a forward reference: may be anything
        elif issubclass(tp, Resources):
            return True
        elif issubclass(tp, TrainkitModel):
            if tp not in models:
                models.add(tp)
                todo.extend(f.annotation for f in tp.model_fields.values())
        elif not issubclass(tp, _LEAVES) and not issubclass(tp, BaseModel):
            return True  # a bare dict, list or tuple, or object: may hold anything
    return False


def check_extended_grant(
    d: Definition, team: Declared[Team], index: Index, cluster: str | None = None
) -> list[Problem]:
    """A problem for each extended resource ``d`` asks for (``Resources.extended``) that no
    network profile granted to ``team`` (and on ``cluster``, when given) lists, or beyond the
    most one of them lists per pod: a device plugin's resources are the platform's to hand
    out, as the profiles are."""
    granted: dict[str, tuple[int, str]] = {}
    for name in team.obj.network_profiles:
        if name not in index.profiles:
            continue
        if cluster is not None and not on_cluster(index.profiles[name].obj, cluster):
            continue
        for resource, count in index.profiles[name].obj.resources.items():
            if count > granted.get(resource, (0, ""))[0]:
                granted[resource] = (count, name)
    on = f" on cluster {cluster!r}" if cluster is not None else ""
    # The cluster's GPU resource is extended_gpus's problem.
    gpu = index.clusters[cluster].obj.gpu_resource if cluster in index.clusters else None
    out = []
    for path, res in _resources(d.obj):
        for resource, count in sorted(res.extended.items()):
            if resource == gpu:
                continue
            field = f"{path}.extended.{resource}"
            if resource not in granted:
                out.append(
                    problem(
                        d,
                        f"extended resource {resource!r} is not listed by any network profile "
                        f"team {team.obj.name!r} is granted{on} (Team.network_profiles in "
                        f"{team.file}: {known(team.obj.network_profiles)}); ask the platform "
                        "team for a profile listing it in NetworkProfile.resources, or drop it",
                        field,
                    )
                )
            elif count > granted[resource][0]:
                most, profile = granted[resource]
                out.append(
                    problem(
                        d,
                        f"{count} of {resource!r} per pod is more than the {most} network "
                        f"profile {profile!r} ({index.profiles[profile].file}) grants team "
                        f"{team.obj.name!r}; ask for at most {most}",
                        field,
                    )
                )
    return out


def extended_gpus(d: Definition, cluster: Cluster) -> list[Problem]:
    """The cluster's GPU resource asked for as an extended resource: GPUs come from ``gpu``,
    which the plan counts and checks against the nodes."""
    gpu = cluster.gpu_resource
    return [
        problem(
            d,
            f"{gpu!r} is the GPU resource of cluster {cluster.name!r}; ask for GPUs with "
            f"{path}.gpu instead",
            f"{path}.extended.{gpu}",
        )
        for path, res in _resources(d.obj)
        if gpu in res.extended
    ]


def describe_grants(profile: NetworkProfile) -> str:
    """What a profile gives its pods beyond a plain pod, in a few words."""
    parts = []
    if profile.host_network:
        parts.append("the host network")
    if profile.host_ipc:
        parts.append("the host IPC namespace")
    if profile.networks:
        parts.append("Multus networks " + ", ".join(profile.networks))
    if profile.devices:
        parts.append("devices " + ", ".join(d.path for d in profile.devices))
    if profile.claims:
        parts.append("ResourceClaimTemplates " + ", ".join(sorted(set(profile.claims.values()))))
    if profile.capabilities:
        parts.append("capabilities " + ", ".join(profile.capabilities))
    if profile.resources:
        parts.append("resources " + ", ".join(sorted(profile.resources)))
    if profile.env:
        parts.append("variables " + ", ".join(sorted(profile.env)))
    return "; ".join(parts) if parts else "nothing beyond a plain pod"


def fabric_conflicts(d: Definition, profile: NetworkProfile | None, index: Index) -> list[Problem]:
    """What a job may not say beside the fabric its profile gives its pods: the Multus
    annotation (the profile's would be replaced), a volume at a device's path or of a device
    volume's name (the API server refuses two mounts at one path, or two volumes of a name:
    kubernetes pkg/apis/core/validation/validation.go validateVolumeMounts, ValidateVolumes)."""
    if profile is None:
        return []
    where = f"network profile {profile.name!r} ({index.profiles[profile.name].file})"
    out = []
    annotations = getattr(d.obj, "pod_annotations", {}) or {}
    if profile.networks and MULTUS_NETWORKS in annotations:
        out.append(
            problem(
                d,
                f"{MULTUS_NETWORKS} is set by {where} to {','.join(profile.networks)!r}, the "
                "pods' Multus networks; remove it from pod_annotations (the platform adds "
                "networks to the profile)",
                f"pod_annotations.{MULTUS_NETWORKS}",
            )
        )
    names = {DEVICE_VOLUME.format(i=i): dev for i, dev in enumerate(profile.devices)}
    for field, v in volume_fields(d.obj):
        for name, dev in names.items():
            path = dev.path
            if dev.overlaps(v.path) or volume_name(v) == name:
                out.append(
                    problem(
                        d,
                        f"volume {volume_name(v)!r} at {v.path} clashes with device {path} "
                        f"that {where} mounts (volume {name!r}); mount it elsewhere, under "
                        "another name",
                        field,
                    )
                )
                break
    return out


def claims_unsupported(
    d: Definition, profile: NetworkProfile | None, cluster: Cluster
) -> list[Problem]:
    """A PaddleJob of paddle-operator on a profile with DRA claims: its CRD (v0.3.5,
    config/crd/bases/batch.paddlepaddle.org_paddlejobs.yaml) embeds a PodSpec without
    ``resourceClaims`` and containers without ``resources.claims``, so the API server would
    prune them and the pods would start without the claimed devices."""
    if profile is None or not profile.claims or not isinstance(d.obj, PaddleJob):
        return []
    if PADDLE_OPERATOR not in cluster.operators:
        return []
    return [
        problem(
            d,
            f"on cluster {cluster.name!r} (paddle-operator): network profile {profile.name!r} "
            "gives each pod Dynamic Resource Allocation claims, which paddle-operator's "
            "PaddleJob CRD cannot hold (the API server would drop them and the pods would start "
            "without the devices): use a profile without claims, or the Training Operator's "
            "PaddleJob on a cluster without paddle-operator",
            "network",
        )
    ]


def env_conflicts(
    d: Definition,
    env: Mapping[str, object],
    profile: NetworkProfile | None,
    index: Index,
    where_field: tuple[str, str] | None = None,
) -> list[Problem]:
    """A variable both ``d`` and the profile its pods get set: the profile describes the
    fabric the platform built, so the job or runtime may not override it. ``where_field``
    names ``(what to remove it from, the field)`` when it is not ``env``/``env_refs``."""
    if profile is None:
        return []
    where = index.profiles[profile.name].file
    out = []
    for name in sorted(env):
        if name not in profile.env:
            continue
        if where_field is not None:
            remove_from, field = where_field
        else:
            remove_from = "env" if name in getattr(d.obj, "env", {}) else "env_refs"
            field = f"{remove_from}.{name}"
        out.append(
            problem(
                d,
                f"{name} is set by network profile {profile.name!r} ({where}) to "
                f"{profile.env[name]!r} for every pod on that network; remove it from "
                f"{remove_from}",
                field,
            )
        )
    return out


def check_profiles(index: Index, problems: list[Problem]) -> None:
    for declared in index.profiles.values():
        profile, d = declared.obj, declared.definition
        problems.extend(check_clusters(d, profile.clusters, index))
        for cname, cluster in sorted(index.clusters.items()):
            gpu = cluster.obj.gpu_resource
            if on_cluster(profile, cname) and gpu in profile.resources:
                problems.append(
                    problem(
                        d,
                        f"{gpu!r} is the GPU resource of cluster {cname!r}; GPUs come from each "
                        "job's resources.gpu, remove it here",
                        f"resources.{gpu}",
                    )
                )


# MPI on the host network. The pods share their node's network namespace, where the node's own
# sshd listens on port 22: trainkit starts sshd on another port (HOST_NETWORK_SSH_PORT, or a
# runtime's ssh_port) and points every ssh it writes at it. What it cannot point there is
# refused. The operators' own ssh arguments cannot carry the port: mpi-operator appends
# OMPI_MCA_plm_rsh_args (and Intel's and MPICH's) after the job's env, so its value wins
# (kubeflow/mpi-operator pkg/controller/mpi_job_controller.go ompiEnvVars, newLauncherPodTemplate),
# Trainer upserts it over the runtime's (trainer v2.3.0 pkg/runtime/framework/plugins/mpi/mpi.go
# EnforceMLPolicy), and Open MPI 5 reads no OMPI_MCA_plm_rsh_args from the env at all: only
# mpirun's command line reaches ssh.
_NODE_SSHD = "the node's own sshd listens on port 22 of the host network"


def _on_host(profile: NetworkProfile | None) -> bool:
    return profile is not None and profile.host_network


def host_network_mpijob(
    d: Definition, job: MPIJob, profile: NetworkProfile | None
) -> list[Problem]:
    """What an MPIJob on a host-network profile cannot do: trainkit runs the workers' sshd on
    port HOST_NETWORK_SSH_PORT and passes it to the mpirun, deepspeed or horovodrun it writes."""
    if not _on_host(profile):
        return []
    assert profile is not None
    where = f"network profile {profile.name!r} runs the workers on the host network"
    port = HOST_NETWORK_SSH_PORT
    out = []
    if job.mpi != "OpenMPI":
        out.append(
            problem(
                d,
                f"{where}, where {_NODE_SSHD}; trainkit moves the workers' sshd to port {port} "
                f"and points Open MPI's mpirun at it, not mpi={job.mpi!r}'s Hydra launcher: use "
                "mpi='OpenMPI' or a profile without host_network",
                "mpi",
            )
        )
    if job.script is None:
        out.append(
            problem(
                d,
                f"{where}, where {_NODE_SSHD}; the workers' sshd listens on port {port}, and "
                "trainkit points only the launchers it writes for script= at it, not your "
                "command: use script= (with launch=) or a profile without host_network",
                "command",
            )
        )
    worker = job.worker
    if worker is not None and (worker.command is not None or worker.args is not None):
        field = "worker.command" if worker.command is not None else "worker.args"
        out.append(
            problem(
                d,
                f"{where}, where {_NODE_SSHD}; trainkit starts the workers' sshd on port {port} "
                f"itself, and {field} would replace it: drop {field}, or use a profile without "
                "host_network",
                field,
            )
        )
    if job.launch == "deepspeed" and not _names_tcp_interface(job.launcher_args):
        # DeepSpeed's OpenMPIRunner adds `--mca btl_tcp_if_include eth0` unless the launcher
        # args name the interface (deepspeed/launcher/multinode_runner.py get_cmd): eth0 is a
        # pod's interface, a node's may be called anything.
        out.append(
            problem(
                d,
                f"{where}, whose interface need not be eth0, which DeepSpeed's mpirun picks "
                "unless told otherwise: name the nodes' interface, e.g. launcher_args=['--mca', "
                "'btl_tcp_if_include', 'bond0'], or use a profile without host_network",
                "launcher_args",
            )
        )
    if job.launcher_as_worker:
        out.append(
            problem(
                d,
                f"{where}, where {_NODE_SSHD}; launcher_as_worker=True would put the launcher "
                "in the host network too, where its host name is the node's, not the "
                "hostfile's: drop launcher_as_worker (add a node instead) or use a profile "
                "without host_network",
                "launcher_as_worker",
            )
        )
    return out


def _names_tcp_interface(args: Sequence[str]) -> bool:
    """Whether mpirun arguments set ``btl_tcp_if_include`` as DeepSpeed looks for it."""
    return any(a in ("-mca", "--mca") and b == "btl_tcp_if_include" for a, b in pairwise(args))


def host_network_runtime(
    d: Definition, rt: ClusterTrainingRuntime | TrainingRuntime, profile: NetworkProfile | None
) -> list[Problem]:
    """What an MPI runtime on a host-network profile cannot do: its nodes' sshd listens on
    ``ssh_port``, which port 22 cannot be, and the launcher stays off the host network."""
    if rt.mpi is None or not _on_host(profile):
        return []
    assert profile is not None
    where = f"network profile {profile.name!r} runs the nodes on the host network"
    out = []
    if rt.mpi.ssh_port == 22:
        out.append(
            problem(
                d,
                f"{where}, where {_NODE_SSHD}: the nodes' readiness probe would pass against "
                "it and mpirun would reach it; set mpi=RuntimeMPI(ssh_port=...) to another "
                f"port, e.g. {HOST_NETWORK_SSH_PORT} (trainkit starts sshd on it with -p)",
                "mpi.ssh_port",
            )
        )
    if rt.mpi.launcher_as_node:
        out.append(
            problem(
                d,
                f"{where}, where {_NODE_SSHD}; launcher_as_node=True would put the launcher "
                "in the host network too, where its host name is the node's, not the "
                "hostfile's: drop launcher_as_node (add a node instead) or use a profile "
                "without host_network",
                "mpi.launcher_as_node",
            )
        )
    return out


def host_network_trainjob(
    d: Definition,
    job: TrainJob,
    rt: ClusterTrainingRuntime | TrainingRuntime,
    profile: NetworkProfile | None,
) -> list[Problem]:
    """A TrainJob on an MPI runtime on the host network runs the mpirun trainkit writes for
    its script, which reaches the nodes' ssh_port; a command of its own would not."""
    if rt.mpi is None or not _on_host(profile) or job.script is not None:
        return []
    assert profile is not None
    return [
        problem(
            d,
            f"runtime {rt.name!r} runs its nodes on the host network (network profile "
            f"{profile.name!r}), where {_NODE_SSHD}; their sshd listens on port "
            f"{rt.mpi.ssh_port}, and trainkit points only the mpirun it writes for script= at "
            "it, not your command: use script=",
            "command",
        )
    ]
