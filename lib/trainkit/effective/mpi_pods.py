"""The pods mpi-operator v0.8 creates for an MPIJob (``kubeflow.org/v2beta1``).

Sources (kubeflow/mpi-operator pkg/controller/mpi_job_controller.go): the launcher's batch Job
gets the hostfile ConfigMap at /etc/mpi and the implementation's variables
(newLauncherPodTemplate); each worker runs ``/usr/sbin/sshd -De`` when its container has
neither command nor args (newWorker); both get the ssh key Secret at ``sshAuthMountPath``
(setupSSHOnPod), the operator's labels (defaultLabels) and the subdomain of the job's headless
Service (newJobService), which names every host of the hostfile (newConfigMap). The MPIJob
ends with its launcher Job. The PodGroup (pkg/controller/podgroup.go) is named after the job,
with minMember = schedulingPolicy.minAvailable, else workers + 1.
"""

from __future__ import annotations

import copy
import shlex
from dataclasses import replace
from decimal import Decimal
from typing import Any

from ..injected_env.mpi_operator_env import mpijob_env
from ..render.meta import VOLCANO_QUEUE_ANNOTATION
from ..render.mpi_operator import CONTAINER
from ..resolve import PlannedJob
from .admission import min_resources, replica_workload
from .operator_pods import pod_restart_policy, scheduling_gang
from .podsets import (
    Completion,
    EffectiveJob,
    EnvVar,
    Gang,
    PodSet,
    Service,
    own_env_source,
    waits_for_hosts,
)

__all__ = ["effective_mpijob"]

_OPERATOR = "mpi-operator"
# pkg/apis/kubeflow/v2beta1/constants.go; defaultLabels.
_OPERATOR_LABEL = "training.kubeflow.org/operator-name"
_JOB_NAME_LABEL = "training.kubeflow.org/job-name"
_JOB_ROLE_LABEL = "training.kubeflow.org/job-role"
_REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
# sshVolumeItems, configVolumeItems: the Secret's key and the ConfigMap's files, by path.
_SSH_ITEMS = (
    {"key": "ssh-privatekey", "path": "id_rsa"},
    {"key": "ssh-publickey", "path": "id_rsa.pub"},
    {"key": "ssh-publickey", "path": "authorized_keys"},
)
_CONFIG_ITEMS = (
    {"key": "hostfile", "path": "hostfile", "mode": 0o444},
    {"key": "discover_hosts.sh", "path": "discover_hosts.sh", "mode": 0o555},
)
_ROOT_SSH = "/root/.ssh"
_LAUNCHER_BACKOFF = 6
"""batch/v1's default backoffLimit, the launcher Job's when the run policy sets none."""


def effective_mpijob(pj: PlannedJob, body: dict[str, Any]) -> EffectiveJob:
    spec = body["spec"]
    replicas = spec["mpiReplicaSpecs"]
    slots = int(spec.get("slotsPerWorker", 1))
    implementation = str(spec.get("mpiImplementation", "OpenMPI"))
    as_worker = bool(spec.get("runLauncherAsWorker", False))
    ssh_dir = str(spec.get("sshAuthMountPath", "/root/.ssh"))
    name = pj.object_name
    pod_sets = []
    # A job whose launcher is its only worker may have no Worker replicas at all
    # (newConfigMap, calPGMinResource: "there may be no worker").
    for role in [r for r in ("Launcher", "Worker") if r in replicas]:
        count = int(replicas[role].get("replicas", 1))
        template = copy.deepcopy(replicas[role]["template"]["spec"])
        own = template["containers"][0]
        env = [EnvVar.of(e, own_env_source(pj, role, e["name"])) for e in own.get("env") or []]
        injected = mpijob_env(
            implementation=implementation,
            slots=slots,
            role=role.lower(),
            launcher_as_worker=as_worker,
        )
        env += [EnvVar(k, v, _OPERATOR) for k, v in injected.items()]
        own["env"] = [e.entry() for e in env]
        mounts = own.setdefault("volumeMounts", [])
        volumes = template.setdefault("volumes", [])
        mounts.append({"mountPath": ssh_dir, "name": "ssh-auth"})
        # setupSSHOnPod: mode 0600 only for root's keys; elsewhere the kubelet's default.
        secret: dict[str, Any] = {"secretName": f"{name}-ssh", "items": list(_SSH_ITEMS)}
        if ssh_dir == _ROOT_SSH:
            secret["defaultMode"] = 0o600
        volumes.append({"name": "ssh-auth", "secret": secret})
        if role == "Launcher":
            mounts.append({"mountPath": "/etc/mpi", "name": "mpi-job-config"})
            volumes.append(
                {
                    "configMap": {"name": f"{name}-config", "items": list(_CONFIG_ITEMS)},
                    "name": "mpi-job-config",
                }
            )
        elif not own.get("command") and not own.get("args"):
            own["command"] = ["/usr/sbin/sshd", "-De"]
        # newLauncherPodTemplate, newWorker: each pod is <hostname>.<job>, a name of the
        # job's Service; on the host network it keeps the cluster's DNS; a worker also
        # searches the Service's domain (for Intel MPI's and MPICH's short launcher name).
        template["subdomain"] = name
        if template.get("hostNetwork"):
            template["dnsPolicy"] = "ClusterFirstWithHostNet"
        if role == "Worker":
            dns = template.setdefault("dnsConfig", {})
            dns["searches"] = [*dns.get("searches", []), f"{name}.{pj.namespace}.svc.cluster.local"]
        labels = {
            **(replicas[role]["template"].get("metadata") or {}).get("labels", {}),
            _OPERATOR_LABEL: _OPERATOR,
            _JOB_NAME_LABEL: name,
            _JOB_ROLE_LABEL: role.lower(),
        }
        if role == "Launcher" and as_worker:
            # Host 0 of the job's replica index; worker i is i + 1 (workerReplicaIndexLabel).
            labels[_REPLICA_INDEX_LABEL] = "0"
        first_rank = 0 if role == "Launcher" else (1 if as_worker else 0)
        ranks = role == "Worker" or as_worker
        # newLauncherJob/newWorker: the launcher Job's pod is <job>-launcher (its hostname),
        # worker i is <job>-worker-i; setRestartPolicy turns ExitCode into Never; the v2beta1
        # defaults are OnFailure for the launcher, Never for workers.
        pod_sets.append(
            PodSet(
                role,
                count,
                first_rank,
                template,
                CONTAINER,
                tuple(env),
                ranks,
                restart_policy=pod_restart_policy(
                    replicas[role], "OnFailure" if role == "Launcher" else "Never"
                ),
                name_format=f"{name}-launcher" if role == "Launcher" else f"{name}-worker-{{i}}",
                labels=labels,
            )
        )
    launcher_set = pod_sets[0]
    worker_set = pod_sets[1] if len(pod_sets) > 1 else None
    workers = worker_set.count if worker_set is not None else 0
    hosts = workers + (1 if as_worker else 0)
    world = slots * hosts
    scheduling = spec.get("runPolicy", {}).get("schedulingPolicy") or {}
    # Workers first when the launcher is not part of the gang (WaitForWorkersReady).
    launcher_in = int(scheduling.get("minAvailable", workers + 1)) > workers
    order = pod_sets if launcher_in else pod_sets[::-1]
    gang = _podgroup(pj, body, scheduling, order, workers)
    command = launcher_set.main.get("command")
    starter = f"the launcher's {command[0]}" if command else "the launcher's ENTRYPOINT"
    notes = [
        f"{hosts} hosts × {slots} slots = {world} ranks, started by {starter}"
        + ("" if as_worker else "; the launcher runs no ranks itself and has no GPU"),
    ]
    if worker_set is not None:
        notes.append(
            f"workers run sshd ({_sshd(worker_set)}); ranks started over ssh get only the "
            "variables the launcher forwards"
        )
    if spec.get("launcherCreationPolicy") == "WaitForWorkersReady":
        notes.append("the launcher is created once every worker is ready")
    ttl = spec.get("runPolicy", {}).get("ttlSecondsAfterFinished")
    if ttl is not None:
        # mpi_job_controller.go newLauncherJob: the TTL is the launcher's batch Job's only.
        notes.append(
            f"the launcher's Job, its pod and logs are deleted {ttl} s after the job ends; "
            "the MPIJob and its status stay until its file is removed"
        )
    wait = waits_for_hosts(launcher_set.spec)
    if wait is not None:
        notes.append(wait)
    # kueue v0.19.2 pkg/controller/jobs/mpijob/mpijob_controller.go: launcher, then worker.
    workload = replica_workload(body, replicas, ("Launcher", "Worker"), scheduling)
    # newLauncherJob: the launcher Job carries the run policy's backoffLimit (else batch/v1's
    # default); the MPIJob succeeds or fails with it (updateMPIJobStatus).
    backoff = spec.get("runPolicy", {}).get("backoffLimit")
    completion = Completion(
        ("Launcher",),
        "all",
        _LAUNCHER_BACKOFF if backoff is None else int(backoff),
        "failures of the launcher's pod (its batch Job's backoffLimit)",
    )
    # newJobService: headless, every pod of the job by the operator's labels, the launcher
    # included; names of pods not ready yet only when the launcher is a worker.
    service = Service(
        name, {_OPERATOR_LABEL: _OPERATOR, _JOB_NAME_LABEL: name}, publish_not_ready=as_worker
    )
    return EffectiveJob(
        pj,
        tuple(pod_sets),
        str(slots),
        world,
        None,
        gang,
        tuple(notes),
        workload=workload,
        completion=completion,
        hostfile=_hostfile(name, pj.namespace, implementation, slots, workers, as_worker),
        services=(service,),
    )


def _podgroup(
    pj: PlannedJob,
    body: dict[str, Any],
    scheduling: dict[str, Any],
    order: list[PodSet],
    workers: int,
) -> Gang | None:
    """The Volcano PodGroup mpi-operator makes (pkg/controller/podgroup.go
    VolcanoCtrl.newPodGroup), with or without a schedulingPolicy, on a cluster whose operator
    gang-schedules with Volcano: named after the job, minMember ``minAvailable`` (else workers
    + 1), the policy's queue, else the MPIJob's ``scheduling.volcano.sh/queue-name``
    annotation, else none, which the PodGroup CRD defaults to ``default`` (volcano v1.12.4
    scheduling.volcano.sh_podgroups.yaml); the priority class of the policy, else the
    launcher's pods', else the workers' (calculatePriorityClassName); minResources as given,
    else calPGMinResource's."""
    if not scheduling and pj.cluster.scheduler != "volcano":
        return None
    gang = scheduling_gang(pj, scheduling, order, workers + 1)
    if gang is None:  # pragma: no cover - scheduling_gang returns None only without a policy
        return None
    annotations = body.get("metadata", {}).get("annotations") or {}
    queue = scheduling.get("queue") or annotations.get(VOLCANO_QUEUE_ANNOTATION) or "default"
    replicas = body["spec"]["mpiReplicaSpecs"]
    priority = scheduling.get("priorityClass") or next(
        (
            str(replicas[role]["template"]["spec"]["priorityClassName"])
            for role in ("Launcher", "Worker")
            if (replicas.get(role) or {})
            .get("template", {})
            .get("spec", {})
            .get("priorityClassName")
        ),
        None,
    )
    gang = replace(gang, queue=queue, priority_class=priority)
    if "minResources" not in scheduling:
        gang = replace(
            gang,
            requests=_min_resources(replicas, gang.min_member),
            # The first members as Volcano places them (init containers and sidecars too).
            placed=gang.placed or gang.requests,
        )
    return gang


def _hostfile(
    name: str, namespace: str, implementation: str, slots: int, workers: int, as_worker: bool
) -> str:
    """newConfigMap: the launcher (when it is a worker), then each worker, by its Service name
    (the operator's default, no --cluster-domain); ``slots=N`` for Open MPI, ``:N`` for Intel
    MPI and MPICH."""
    hosts = ([f"{name}-launcher"] if as_worker else []) + [
        f"{name}-worker-{i}" for i in range(workers)
    ]
    sep = " slots=" if implementation == "OpenMPI" else ":"
    return "".join(f"{h}.{name}.{namespace}.svc{sep}{slots}\n" for h in hosts)


def _sshd(worker: PodSet) -> str:
    """How the workers' sshd runs: mpi-operator's default command, or on a port of the node's
    own network (a host-network profile: render/mpi_operator.py), one worker per node."""
    if not worker.spec.get("hostNetwork"):
        own = [*(worker.main.get("command") or []), *(worker.main.get("args") or [])]
        if own:
            # mpi_job_controller.go newWorker: "/usr/sbin/sshd -De" only when the container
            # has neither command nor args.
            return f"as the worker role says: {shlex.join(own)}"
        return "mpi-operator's default command"
    ports = [p["containerPort"] for p in worker.main.get("ports") or [] if p.get("name") == "ssh"]
    if not ports:
        return "on the host network"
    anti = (worker.spec.get("affinity") or {}).get("podAntiAffinity") or {}
    spread = ", one per node" if anti.get("requiredDuringSchedulingIgnoredDuringExecution") else ""
    return f"on port {ports[0]} of their node's network, where port 22 is the node's own{spread}"


def _min_resources(replicas: dict[str, Any], members: int) -> dict[str, Decimal]:
    """The PodGroup's minResources as mpi-operator computes it (pkg/controller/podgroup.go
    calPGMinResource): the launcher and every worker, but when minMember is fewer pods, the
    launcher and ``minMember - 1`` workers (with equal priorities the workers give way); each
    container's requests, its limits standing in for the names it does not request."""
    launcher = replicas["Launcher"]["template"]["spec"].get("containers") or []
    worker_spec = replicas.get("Worker") or {"replicas": 0, "template": {"spec": {}}}
    worker = worker_spec["template"]["spec"].get("containers") or []
    workers = int(worker_spec.get("replicas", 1))
    if 1 + workers > members:
        workers = members - 1
    pods = [([_merged(c) for c in launcher], 1), ([_merged(c) for c in worker], workers)]
    return min_resources(pods)


def _merged(container: dict[str, Any]) -> dict[str, Any]:
    """podgroup.go addResources: requests, and limits for the names without a request."""
    res = container.get("resources") or {}
    amounts = {**(res.get("limits") or {}), **(res.get("requests") or {})}
    return {"resources": {"requests": amounts}}
