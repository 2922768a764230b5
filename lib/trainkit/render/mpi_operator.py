"""MPIJob (``kubeflow.org/v2beta1``, kubeflow/mpi-operator v0.8).

What the operator does with it (pkg/controller/mpi_job_controller.go): the Launcher becomes a
batch Job ``<job>-launcher`` whose first container gets the hostfile at /etc/mpi and the
OMPI_*/I_MPI_*/HYDRA_* variables; each Worker becomes a pod ``<job>-worker-<i>`` that runs
``/usr/sbin/sshd -De`` when its container has neither command nor args; both get the ssh
keys at ``sshAuthMountPath``. Ranks started over ssh do not inherit the worker pod's env,
so the launcher forwards the job's variables (``-x NAME``) for Open MPI.
"""

from __future__ import annotations

import copy
import shlex
from typing import Any

from ..injected_env.mpi_operator_env import MPI_HOSTFILE
from ..model import WORKSPACE
from ..model.mpijob import HOST_NETWORK_SSH_PORT, MPIJob
from ..resolve import PlannedJob
from .mpi_wait import wait_for_hosts
from .operator_pod import restart_policy, role_template, run_policy
from .pod import env_only, forwarded, one_per_node, rsh_port_args, sshd_port
from .script import job_metadata, script_configmap_name

__all__ = ["API_VERSION", "CONTAINER", "launcher_command", "render_mpijob", "ssh_port"]

API_VERSION = "kubeflow.org/v2beta1"
CONTAINER = "mpi"  # the operator uses the first container, whatever its name


def ssh_port(pj: PlannedJob) -> int | None:
    """The port of the workers' sshd when it is not the image's: on a host-network profile,
    where port 22 is the node's own sshd (the plan refuses what cannot reach another port)."""
    return HOST_NETWORK_SSH_PORT if pj.network is not None and pj.network.host_network else None


def launcher_command(pj: PlannedJob, job: MPIJob) -> list[str] | None:
    """The launcher's command for ``script``; None when the job gives its own command or
    runs the image's ENTRYPOINT."""
    if job.script is None:
        return list(job.command) if job.command is not None else None
    program = ["python3", job.script.mount_path]
    names = forwarded([*job.env, *job.env_refs, *pj.env_from_keys], pj.network)
    forward = [a for name in names for a in ("-x", name)]
    port = ssh_port(pj)
    rsh = rsh_port_args(port)
    if job.launch == "deepspeed":
        # DeepSpeed's openmpi launcher builds `mpirun -n <slots> -hostfile <file>` itself
        # (deepspeed/launcher/multinode_runner.py OpenMPIRunner) and forwards only a few
        # prefixes of the env; the rest goes through --launcher_args. --force_multi: with one
        # host in the hostfile the runner would start every slot on the launcher itself
        # (deepspeed/launcher/runner.py main, multi_node_exec). No ssh check of its own: the
        # launcher's wait-for-hosts made it (render/mpi_wait.py).
        extra = ["--allow-run-as-root", *rsh, *forward, *job.launcher_args]
        return [
            "deepspeed", "--hostfile", MPI_HOSTFILE, "--launcher", "openmpi",
            "--launcher_args", shlex.join(extra), "--no_ssh_check", "--force_multi",
            "--master_addr", _first_host(pj, job), job.script.mount_path,
        ]  # fmt: skip
    if job.launch == "horovodrun":
        # horovodrun forwards the launcher's whole env to mpirun by itself, and its
        # --ssh-port to its own ssh checks and to mpirun's plm_rsh_args
        # (horovod/runner/launch.py, mpi_run.py).
        port_args = [] if port is None else ["--ssh-port", str(port)]
        return [
            "horovodrun", "-np", str(job.ranks), *port_args, "--hostfile", MPI_HOSTFILE,
            *job.launcher_args, *program,
        ]  # fmt: skip
    if job.mpi == "OpenMPI":
        # Open MPI refuses root without the flag, and forwards env only when asked (-x);
        # Intel MPI's and MPICH's Hydra pass the whole env on their own. The hostfile on the
        # command line: Open MPI 5 ignores the operator's OMPI_MCA_orte_default_hostfile and
        # would start every rank on the launcher (tests/test_host_network_mpi.py runs it).
        return [
            "mpirun", "--allow-run-as-root", "-np", str(job.ranks), "--hostfile", MPI_HOSTFILE,
            *rsh, *forward,
            *job.launcher_args, *program,
        ]  # fmt: skip
    return ["mpirun", "-np", str(job.ranks), *job.launcher_args, *program]


def _launcher_image(template: dict[str, Any]) -> str:
    """The launcher container's image (the launcher's own when it gives one): its
    wait-for-hosts step runs ssh from the same image as mpirun will."""
    return str(template["spec"]["containers"][0]["image"] or "")


def _first_host(pj: PlannedJob, job: MPIJob) -> str:
    """The hostfile's first host: the launcher when it is a worker, else worker 0
    (mpi_job_controller.go newConfigMap)."""
    first = "launcher" if job.launcher_as_worker else "worker-0"
    name = pj.object_name
    return f"{name}-{first}.{name}.{pj.namespace}.svc"


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
    port = ssh_port(pj)
    own = job.worker
    if own is not None and (own.command is not None or own.args is not None):
        # With a command or args of its own the operator starts no sshd: the role's program
        # runs instead (mpi_job_controller.go newWorker). The plan keeps it off a
        # host-network profile, whose port only trainkit's sshd line sets.
        if own.command is not None:
            worker["command"] = list(own.command)
        if own.args is not None:
            worker["args"] = list(own.args)
    elif port is not None:
        # On the host network port 22 is the node's own sshd: the workers' listens on
        # another (-p overrides the Port of the image's sshd_config). With a command of its
        # own the operator keeps it (mpi_job_controller.go newWorker).
        worker["command"] = ["/usr/sbin/sshd", "-De", "-p", str(port)]
        sshd_port(worker, port)
    if job.script is not None:
        worker["workingDir"] = WORKSPACE
    launcher_template = role_template(
        pj, job, launcher, configmap=cm, resources=job.launcher_resources, role=job.launcher,
        # A launcher that runs no ranks only starts them over ssh.
        network=pj.network if job.launcher_as_worker else env_only(pj.network),
        runs_training=job.launcher_as_worker,
        # mpi-operator blanks the NVIDIA variables of a launcher that is no worker itself.
        gpu_env=job.launcher_as_worker,
    )  # fmt: skip
    # Created at once (AtStartup), the launcher waits for the workers' names, which the
    # operator publishes once they are Ready (mpi_job_controller.go newJobService), before
    # mpirun runs: the operator's volumes hold the hostfile and the ssh key.
    launcher_template["spec"]["initContainers"] = [
        # After the job's own (a launcher that is a worker has them): its sidecars start first.
        *launcher_template["spec"].get("initContainers", []),
        wait_for_hosts(
            _launcher_image(launcher_template), hostfile_volume="mpi-job-config",
            ssh_volume="ssh-auth", ssh_dir=job.ssh_dir,
            resources=launcher_template["spec"]["containers"][0]["resources"],
            pull_policy=job.image_pull_policy, port=port,
        )
    ]  # fmt: skip
    main = launcher_template["spec"]["containers"][0]
    if "securityContext" in main:
        # ssh as mpirun will: as the launcher container's user, or the key is not its own.
        wait = launcher_template["spec"]["initContainers"][-1]
        wait["securityContext"] = copy.deepcopy(main["securityContext"])
    worker_template = role_template(
        pj, job, worker, configmap=cm, resources=job.resources, role=job.worker
    )
    if port is not None:
        # One worker per node: two would share the node's network namespace and its port
        # (the plan keeps the launcher off the host network). mpi-operator labels its worker
        # pods with the job's name and role (mpi_job_controller.go newWorker, defaultLabels).
        one_per_node(
            worker_template["spec"],
            {"training.kubeflow.org/job-name": pj.object_name,
             "training.kubeflow.org/job-role": "worker"},
        )  # fmt: skip
    replicas = {
        "Launcher": {
            "replicas": 1,
            "restartPolicy": restart_policy(job.launcher, job.restart_policy),
            "template": launcher_template,
        },
        "Worker": {
            "replicas": job.nodes,
            "restartPolicy": restart_policy(job.worker, job.restart_policy),
            "template": worker_template,
        },
    }  # fmt: skip
    # pkg/controller/podgroup.go: minMember is minAvailable, else workers + 1.
    policy, annotations = run_policy(pj, job, job.nodes + 1)
    if job.ttl_seconds is not None:
        # On the launcher's batch Job only, never the MPIJob (model/mpijob.py MIN_TTL_SECONDS).
        policy["ttlSecondsAfterFinished"] = job.ttl_seconds
    spec: dict[str, Any] = {
        "slotsPerWorker": job.slots,
        "runLauncherAsWorker": job.launcher_as_worker,
        "sshAuthMountPath": job.ssh_dir,
        # Never WaitForWorkersReady (the model refuses it): a failed worker would hold the
        # others' GPUs forever, no launcher Job existing to fail.
        "launcherCreationPolicy": "AtStartup",
        "mpiImplementation": job.mpi,
        "runPolicy": policy,
        "mpiReplicaSpecs": replicas,
    }
    return {
        "apiVersion": API_VERSION,
        "kind": "MPIJob",
        "metadata": job_metadata(pj, "MPIJob", annotations),
        "spec": spec,
    }
