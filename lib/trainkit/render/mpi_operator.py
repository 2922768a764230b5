"""MPIJob (``kubeflow.org/v2beta1``, kubeflow/mpi-operator v0.8).

What the operator does with it (pkg/controller/mpi_job_controller.go): the Launcher becomes a
batch Job ``<job>-launcher`` whose first container gets the hostfile at /etc/mpi and the
OMPI_*/I_MPI_*/HYDRA_* variables; each Worker becomes a pod ``<job>-worker-<i>`` that runs
``/usr/sbin/sshd -De`` when its container has neither command nor args; both get the ssh
keys at ``sshAuthMountPath``. Ranks started over ssh do not inherit the worker pod's env,
so the launcher forwards the job's variables (``-x NAME``) for Open MPI.
"""

from __future__ import annotations

import shlex
from typing import Any

from ..injected_env import MPI_HOSTFILE
from ..model import WORKSPACE, NetworkProfile
from ..model.mpijob import MPIJob
from ..plan import PlannedJob
from .meta import VOLCANO_QUEUE_ANNOTATION
from .operator_pod import role_template
from .script import job_metadata, script_configmap_name

__all__ = ["API_VERSION", "CONTAINER", "launcher_command", "render_mpijob"]

API_VERSION = "kubeflow.org/v2beta1"
CONTAINER = "mpi"  # the operator uses the first container, whatever its name


def _forwarded(pj: PlannedJob, job: MPIJob) -> list[str]:
    """Variables of the launcher's container that ranks on the workers need: the job's and
    its network profile's (sshd gives a session none of the pod's env)."""
    names = [*job.env, *job.env_refs]
    if pj.network is not None:
        names += sorted(pj.network.env)
    return names


def launcher_command(pj: PlannedJob, job: MPIJob) -> list[str] | None:
    """The launcher's command for ``script``; None when the job gives its own command or
    runs the image's ENTRYPOINT."""
    if job.script is None:
        return list(job.command) if job.command is not None else None
    program = ["python3", job.script.mount_path]
    forward = [a for name in _forwarded(pj, job) for a in ("-x", name)]
    if job.launch == "deepspeed":
        # DeepSpeed's openmpi launcher builds `mpirun -n <slots> -hostfile <file>` itself
        # (deepspeed/launcher/multinode_runner.py OpenMPIRunner) and forwards only a few
        # prefixes of the env; the rest goes through --launcher_args. No ssh check: mpirun
        # retries the connection (OMPI_MCA_plm_rsh_args) while workers start.
        extra = ["--allow-run-as-root", *forward, *job.launcher_args]
        return [
            "deepspeed", "--hostfile", MPI_HOSTFILE, "--launcher", "openmpi",
            "--launcher_args", shlex.join(extra), "--no_ssh_check",
            "--master_addr", _first_host(pj, job), job.script.mount_path,
        ]  # fmt: skip
    if job.launch == "horovodrun":
        # horovodrun forwards the launcher's whole env to mpirun by itself.
        return [
            "horovodrun", "-np", str(job.ranks), "--hostfile", MPI_HOSTFILE,
            *job.launcher_args, *program,
        ]  # fmt: skip
    if job.mpi == "OpenMPI":
        # Open MPI refuses root without the flag, and forwards env only when asked (-x);
        # Intel MPI's and MPICH's Hydra pass the whole env on their own.
        return [
            "mpirun", "--allow-run-as-root", "-np", str(job.ranks), *forward,
            *job.launcher_args, *program,
        ]  # fmt: skip
    return ["mpirun", "-np", str(job.ranks), *job.launcher_args, *program]


def _first_host(pj: PlannedJob, job: MPIJob) -> str:
    """The hostfile's first host: the launcher when it is a worker, else worker 0
    (mpi_job_controller.go newConfigMap)."""
    first = "launcher" if job.launcher_as_worker else "worker-0"
    name = pj.object_name
    return f"{name}-{first}.{name}.{pj.namespace}.svc"


def _launcher_network(pj: PlannedJob, job: MPIJob) -> NetworkProfile | None:
    """A launcher that runs no ranks only starts them over ssh: it gets the profile's env (to
    forward it) but none of its devices, capabilities or host network."""
    if pj.network is None or job.launcher_as_worker:
        return pj.network
    return pj.network.model_copy(
        update={"resources": {}, "capabilities": [], "host_network": False}
    )


def render_mpijob(pj: PlannedJob) -> dict[str, Any]:
    job = pj.job
    if not isinstance(job, MPIJob):
        raise TypeError(f"not an MPIJob: {pj.kind}")
    cm = script_configmap_name(job.name, dict(pj.definition.files)) if job.script else None
    launcher: dict[str, Any] = {"name": CONTAINER, "image": pj.image}
    command = launcher_command(pj, job)
    if command is not None:
        launcher["command"] = command
    if job.script is not None:
        launcher["workingDir"] = WORKSPACE
    launcher["args"] = list(job.args)
    # Workers keep no command: the operator starts sshd in them, and mpirun the ranks.
    worker: dict[str, Any] = {"name": CONTAINER, "image": pj.image}
    if job.script is not None:
        worker["workingDir"] = WORKSPACE
    replicas = {
        "Launcher": {
            "replicas": 1,
            "restartPolicy": job.restart_policy,
            "template": role_template(
                pj, job, launcher, configmap=cm, resources=job.launcher_resources,
                node_selector=job.launcher.node_selector, network=_launcher_network(pj, job),
                runs_training=job.launcher_as_worker,
            ),
        },
        "Worker": {
            "replicas": job.nodes,
            "restartPolicy": job.restart_policy,
            "template": role_template(pj, job, worker, configmap=cm, resources=job.resources),
        },
    }  # fmt: skip
    # No ttlSecondsAfterFinished (Argo CD self-heal would re-create the deleted job); a
    # backoffLimit always: the operator copies it to the launcher's batch Job.
    run_policy: dict[str, Any] = {
        "backoffLimit": job.backoff_limit,
        "cleanPodPolicy": job.clean_pods,
    }
    if job.deadline_seconds is not None:
        run_policy["activeDeadlineSeconds"] = job.deadline_seconds
    annotations = {}
    if pj.queue is not None:
        # pkg/controller/podgroup.go: minMember is minAvailable, else workers + 1. A launcher
        # created only once the workers are ready cannot be part of the gang that starts them.
        gang = job.nodes + (0 if job.wait_for_workers else 1)
        run_policy["schedulingPolicy"] = {"minAvailable": gang, "queue": pj.queue}
        if job.priority_class is not None:
            run_policy["schedulingPolicy"]["priorityClass"] = job.priority_class
        annotations[VOLCANO_QUEUE_ANNOTATION] = pj.queue
    spec: dict[str, Any] = {
        "slotsPerWorker": job.slots,
        "runLauncherAsWorker": job.launcher_as_worker,
        "sshAuthMountPath": job.ssh_dir,
        "launcherCreationPolicy": "WaitForWorkersReady" if job.wait_for_workers else "AtStartup",
        "mpiImplementation": job.mpi,
        "runPolicy": run_policy,
        "mpiReplicaSpecs": replicas,
    }
    return {
        "apiVersion": API_VERSION,
        "kind": "MPIJob",
        "metadata": job_metadata(pj, "MPIJob", annotations),
        "spec": spec,
    }
