"""The pod template of an operator-run job's role: what every kind's pods share.

A role (PyTorchJob Master or Worker, MPIJob Launcher or Worker) differs in its container's
command, ports and resources and in its node selector; the script and claim volumes, the
network profile, scheduler, tolerations, placement and access are the job's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from ..model import WORKSPACE, NetworkProfile, Resources
from ..model.operator_job import OperatorJob, PodJob, Role, RoleJob
from ..model.volumes import AnyVolume
from ..resolve import PlannedJob
from .cluster_scoped import resource_requirements
from .init_specs import init_container_specs
from .meta import VOLCANO_QUEUE_ANNOTATION, pod_labels, pod_metadata
from .pod import (
    container_security,
    env_list,
    env_sources,
    fabric_annotations,
    fabric_volumes,
    hide_gpus,
    job_ports,
    lifecycle,
    network_container,
    network_pod,
    placement,
    pod_access,
    pod_affinity,
    pod_security,
    pod_settings,
    pod_volumes,
    probes,
    tolerations,
)
from .script import script_configmap_name

__all__ = [
    "init_containers",
    "restart_policy",
    "role_replicas",
    "role_template",
    "run_policy",
    "scheduling_policy",
]


def init_containers(
    pj: PlannedJob, job: PodJob, mounts: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The job's init containers and native sidecars (``init_container_specs``): the job's
    image, pull policy and container security unless they give their own."""
    return init_container_specs(
        job.init_containers, image=pj.image, cluster=pj.cluster,
        pull_policy=job.image_pull_policy, mounts=mounts,
        security=job.container_security_context,
    )  # fmt: skip


def role_template(
    pj: PlannedJob,
    job: PodJob,
    container: dict[str, Any],
    *,
    configmap: str | None,
    resources: Resources,
    node_selector: Mapping[str, str] | None = None,
    role: Role | None = None,
    network: NetworkProfile | Literal["job"] | None = "job",
    runs_training: bool = True,
    gpu_env: bool = True,
    own_volumes: Sequence[AnyVolume] = (),
) -> dict[str, Any]:
    """The pod template of one role. ``container`` holds the role's ``name``, ``image`` and,
    when it has them, ``command``, ``workingDir``, ``args`` and ``ports``; the job's env, the
    resources and the mounts are added in the order the API server would show them. ``role``
    gives the role's image, env, node selector and tolerations where it has its own
    (``node_selector`` alone replaces the job's node selector, for RayJob's groups).
    ``network`` replaces the job's network profile for this role; a role that does not run
    training (an MPI launcher that only starts the ranks) gets no /dev/shm and none of the
    job's volumes.
    Without GPUs the container's NVIDIA variables are blanked (``pod.hide_gpus``) unless not
    ``gpu_env`` (the operator does it itself). ``own_volumes`` (a Ray group's) and the
    ``role``'s ``volumes`` are the role's own, mounted after the job's."""
    profile = pj.network if network == "job" else network
    # A role's own volumes after the job's; a role that runs no training gets its own only.
    own = [*own_volumes, *(role.volumes if role is not None else ())]
    volumes, mounts = pod_volumes(
        configmap=configmap, scripts=list(pj.definition.files),
        shm_size=job.shm_size if runs_training else None,
        claims=[*job.volumes, *own] if runs_training else own,
    )  # fmt: skip
    image = pj.role_image(role) if role is not None and role.image is not None else None
    c: dict[str, Any] = {"name": container["name"], "image": image or container["image"]}
    if job.image_pull_policy is not None:
        c["imagePullPolicy"] = job.image_pull_policy
    for key in ("command", "workingDir", "args"):
        value = job.working_dir if key == "workingDir" and job.working_dir else container.get(key)
        if value:
            c[key] = value
    # A role's variables over the job's (training-operator v1.9.4 common/pod.go
    # createNewPod: each replica type's template is its own).
    env = {**job.env, **role.env} if role is not None else job.env
    if env or job.env_refs:
        c["env"] = env_list(env, job.env_refs)
    if job.env_from:
        c["envFrom"] = env_sources(job.env_from)
    ports = [*(container.get("ports") or []), *(job_ports(job, profile) if runs_training else [])]
    if ports:
        c["ports"] = ports
    c["resources"] = resource_requirements(resources, pj.cluster)
    # A role's security contexts instead of the job's, each level on its own.
    own_context = role if role is not None and role.container_security_context else job
    container_security(c, own_context)
    network_container(c, profile)
    if gpu_env:
        hide_gpus(c, pj.cluster)
    devices, device_mounts = fabric_volumes(profile)
    volumes += devices
    mounts += device_mounts
    if mounts:
        c["volumeMounts"] = mounts
    if runs_training:
        probes(c, job)
        lifecycle(c, job)
    spec: dict[str, Any] = {}
    if runs_training and job.init_containers:
        spec["initContainers"] = init_containers(pj, job, mounts)
    spec["containers"] = [c]
    network_pod(spec, profile)
    pod_security(spec, role if role is not None and role.security_context else job)
    if pj.queue is not None:
        spec["schedulerName"] = "volcano"
    if volumes:
        spec["volumes"] = volumes
    selector = job.node_selector if node_selector is None else node_selector
    tolerated = job.tolerations
    if role is not None and role.node_selector is not None:
        selector = role.node_selector
    if role is not None and role.tolerations is not None:
        tolerated = role.tolerations
    if selector:
        spec["nodeSelector"] = dict(selector)
    if tolerated:
        spec["tolerations"] = tolerations(tolerated)
    labels = pod_labels(pj.definition.team, job.name)
    placement(spec, job.node_affinity, job.topology, labels)
    pod_affinity(spec, job.pod_affinity)
    pod_access(
        spec,
        service_account=job.service_account,
        pull_secrets=job.image_pull_secrets,
        priority_class=job.priority_class,
    )
    pod_settings(spec, job)
    meta = pod_metadata(pj.definition.team, job.name, job)
    if networks := fabric_annotations(profile):
        # The plan refuses a job whose pod_annotations set the same key.
        meta["annotations"] = {**meta.get("annotations", {}), **networks}
    return {"metadata": meta, "spec": spec}


def restart_policy(role: Role | None, job_policy: str) -> str:
    """A replica type's ``restartPolicy``: the role's, else the job's (``job_policy``).

    Each operator keeps one per replica type and applies it to that type's pods alone
    (training-operator v1.9.4 pkg/core/pod.go SetRestartPolicy, pkg/controller.v1/common/pod.go
    ReconcilePods; mpi-operator v0.8 pkg/controller/mpi_job_controller.go setRestartPolicy,
    for the launcher Job's template and each worker pod)."""
    if role is not None and role.restart_policy is not None:
        return role.restart_policy
    return job_policy


def run_policy(
    pj: PlannedJob, job: OperatorJob, gang: int
) -> tuple[dict[str, Any], dict[str, str]]:
    """``(runPolicy, annotations)`` of a kubeflow.org job whose Volcano gang is ``gang`` pods.

    No ttlSecondsAfterFinished: under Argo CD self-heal a job deleted by its TTL is re-created
    and runs again (an MPIJob adds its own, which deletes only its launcher's batch Job). backoffLimit always: the operators enforce a limit only when one is set
    (training-operator v1.9 pkg/controller.v1/common/job.go; mpi-operator copies it to the
    launcher's batch Job), and a crashing job would otherwise restart forever holding its GPUs.
    """
    policy: dict[str, Any] = {"backoffLimit": job.backoff_limit, "cleanPodPolicy": job.clean_pods}
    if job.deadline_seconds is not None:
        policy["activeDeadlineSeconds"] = job.deadline_seconds
    scheduling, annotations = scheduling_policy(pj, job, gang)
    if scheduling is not None:
        policy["schedulingPolicy"] = scheduling
    return policy, annotations


def scheduling_policy(
    pj: PlannedJob, job: PodJob, gang: int
) -> tuple[dict[str, Any] | None, dict[str, str]]:
    """``(schedulingPolicy, annotations)`` of a job whose Volcano gang is ``gang`` pods; no
    policy on a cluster without Volcano. The kubeflow.org operators and paddle-operator read
    the same three fields."""
    if pj.queue is None:
        return None, {}
    # The operators copy minAvailable to the PodGroup's minMember (common/job.go;
    # mpi-operator pkg/controller/podgroup.go; paddle-operator constructPodGroup).
    scheduling: dict[str, Any] = {"minAvailable": gang, "queue": pj.queue}
    if job.priority_class is not None:
        # The PodGroup's priority, by which Volcano orders and preempts gangs, comes from
        # here, not from the pods (training-operator v1.9 pkg/controller.v1/common/job.go).
        scheduling["priorityClass"] = job.priority_class
    # The operators read the queue from schedulingPolicy; the annotation is copied to
    # the PodGroup and is what Volcano's tools display.
    return scheduling, {VOLCANO_QUEUE_ANNOTATION: pj.queue}


def role_replicas(
    pj: PlannedJob,
    job: RoleJob,
    container: str,
    port: dict[str, Any] | None,
    program: list[str],
) -> dict[str, Any]:
    """The replica specs of a job of roles (TFJob, PaddleJob): per replica type, container
    ``container`` with ``port``, running ``program`` + the script (or the role's or the job's
    command), and the role's image, command, args, env, resources, restart policy, node
    selector and tolerations where it gives them."""
    cm = script_configmap_name(job.name, dict(pj.definition.files)) if job.script else None
    replicas: dict[str, Any] = {}
    for rtype, count in job.replica_counts().items():
        role = job.role(rtype)
        c: dict[str, Any] = {"name": container, "image": pj.image}
        if role is not None and role.command is not None:
            c["command"] = list(role.command)
        elif job.script is not None:
            c["command"] = [*program, job.script.mount_path]
        elif job.command is not None:
            c["command"] = list(job.command)
        if job.script is not None:
            c["workingDir"] = WORKSPACE
        c["args"] = list(role.args if role is not None and role.args is not None else job.args)
        if port is not None:
            c["ports"] = [port]
        resources = role.resources if role is not None and role.resources else job.resources
        replicas[rtype] = {
            "replicas": count,
            "restartPolicy": restart_policy(role, job.restart_policy),
            "template": role_template(pj, job, c, configmap=cm, resources=resources, role=role),
        }
    return replicas
