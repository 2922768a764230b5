"""mpi-operator (github.com/kubeflow/mpi-operator, caa3c47, "Prepare v0.8.2"): MPIJob
``kubeflow.org/v2beta1``, from pkg/controller/mpi_job_controller_test.go and
pkg/controller/podgroup_test.go."""

from __future__ import annotations

from typing import Any

from trainkit import MPIJob, Resources, Script

from . import (
    ABSENT,
    Case,
    Command,
    Definition,
    Env,
    Gang,
    Manifest,
    PodNames,
    Pods,
    Restart,
    Source,
)

REPO, REF = "kubeflow/mpi-operator", "caa3c47"
CONTROLLER = "pkg/controller/mpi_job_controller_test.go"
PODGROUP = "pkg/controller/podgroup_test.go"
KIND = "MPIJob"


def src(file: str, case: str) -> Source:
    return Source(REPO, REF, file, case)


def mpijob(
    name: str,
    namespace: str,
    workers: int = 1,
    *,
    launcher: dict[str, Any] | None = None,
    worker: dict[str, Any] | None = None,
    launcher_pod: dict[str, Any] | None = None,
    worker_pod: dict[str, Any] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """An MPIJob as the API server defaults it (v2beta1 defaults: slotsPerWorker 1, OpenMPI,
    sshAuthMountPath /root/.ssh, launcher restart OnFailure, worker restart Never)."""
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "slotsPerWorker": 1,
            "mpiImplementation": "OpenMPI",
            "sshAuthMountPath": "/root/.ssh",
            **spec,
            "mpiReplicaSpecs": {
                "Launcher": {
                    "replicas": 1,
                    "restartPolicy": "OnFailure",
                    "template": {
                        "spec": {
                            "containers": [launcher or {"name": "mpi"}],
                            **(launcher_pod or {}),
                        }
                    },
                },
                "Worker": {
                    "replicas": workers,
                    "restartPolicy": "Never",
                    "template": {
                        "spec": {"containers": [worker or {"name": "mpi"}], **(worker_pod or {})}
                    },
                },
            },
        },
    }


def requests(cpu: str, memory: str) -> dict[str, Any]:
    return {"name": "mpi", "resources": {"requests": {"cpu": cpu, "memory": memory}}}


OMPI = {
    "K_MPI_JOB_ROLE": "launcher",
    "OMPI_MCA_orte_keep_fqdn_hostnames": "true",
    "OMPI_MCA_orte_default_hostfile": "/etc/mpi/hostfile",
    "OMPI_MCA_plm_rsh_args": "-o ConnectionAttempts=10",
    "OMPI_MCA_orte_set_default_slots": "1",
}

CASES = [
    Case(
        "mpi-defaults-launcher-and-worker",
        src(CONTROLLER, "TestNewLauncherAndWorker / defaults"),
        Manifest(mpijob("foo", "bar"), namespace="bar"),
        (
            Pods({"Launcher": 1, "Worker": 1}),
            PodNames({("Launcher", 0): "foo-launcher", ("Worker", 0): "foo-worker-0"}),
            Env(
                "Launcher",
                0,
                {**OMPI, "NVIDIA_VISIBLE_DEVICES": "", "NVIDIA_DRIVER_CAPABILITIES": ""},
            ),
            Env("Worker", 0, {"K_MPI_JOB_ROLE": "worker"}),
            Command("Worker", ("/usr/sbin/sshd", "-De")),
            Restart("Launcher", "OnFailure"),
            Restart("Worker", "Never"),
        ),
    ),
    Case(
        "mpi-launcher-as-worker",
        src(CONTROLLER, "TestNewLauncherAndWorker / launcher-as-worker"),
        Manifest(mpijob("foo", "bar", runLauncherAsWorker=True), namespace="bar"),
        (
            # The launcher runs ranks: it keeps the node's GPUs visible.
            Env(
                "Launcher",
                0,
                {**OMPI, "NVIDIA_VISIBLE_DEVICES": ABSENT, "NVIDIA_DRIVER_CAPABILITIES": ABSENT},
            ),
            PodNames({("Worker", 0): "foo-worker-0"}),
        ),
    ),
    Case(
        "mpi-overrides",
        src(CONTROLLER, "TestNewLauncherAndWorker / overrides"),
        Manifest(
            mpijob(
                "bar",
                "foo",
                13,
                launcher={"name": "mpi", "env": [{"name": "FOO", "value": "bar"}]},
                worker={
                    "name": "mpi",
                    "command": ["/entrypoint.sh"],
                    "env": [{"name": "FOO", "value": "bar"}],
                },
                slotsPerWorker=5,
                mpiImplementation="Intel",
                sshAuthMountPath="/home/mpiuser/.ssh",
            ),
            namespace="foo",
        ),
        (
            PodNames({("Worker", 12): "bar-worker-12", ("Launcher", 0): "bar-launcher"}),
            Env(
                "Launcher",
                0,
                {
                    "FOO": "bar",
                    "K_MPI_JOB_ROLE": "launcher",
                    "I_MPI_HYDRA_HOST_FILE": "/etc/mpi/hostfile",
                    "I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS": "-o ConnectionAttempts=10",
                    "I_MPI_PERHOST": "5",
                    "NVIDIA_VISIBLE_DEVICES": "",
                    "OMPI_MCA_orte_default_hostfile": ABSENT,
                },
            ),
            Env("Worker", 12, {"FOO": "bar", "K_MPI_JOB_ROLE": "worker"}),
            # A worker with its own command keeps it (no sshd).
            Command("Worker", ("/entrypoint.sh",)),
        ),
    ),
    Case(
        "mpi-podgroup-every-field",
        src(PODGROUP, "TestNewPodGroup / all schedulingPolicy fields are set"),
        Manifest(
            mpijob(
                "test",
                "default",
                1000,
                launcher=requests("1", "2Gi"),
                worker=requests("10", "20Gi"),
                runPolicy={
                    "schedulingPolicy": {
                        "minAvailable": 2,
                        "queue": "project-y",
                        "priorityClass": "high",
                        "minResources": {"cpu": "100", "memory": "512Gi"},
                    }
                },
            )
        ),
        (
            Gang(
                "test",
                2,
                "project-y",
                min_resources={"cpu": "100", "memory": "512Gi"},
                priority_class="high",
            ),
        ),
    ),
    Case(
        "mpi-podgroup-launcher-and-workers",
        src(PODGROUP, "TestCalculatePGMinResources / without priorityClass"),
        Manifest(
            mpijob(
                "test",
                "default",
                2,
                launcher=requests("2", "1Gi"),
                worker=requests("10", "32Gi"),
                runPolicy={"schedulingPolicy": {"queue": "q"}},
            )
        ),
        # minMember is workers + 1; every pod counts.
        (Gang("test", 3, "q", min_resources={"cpu": "22", "memory": "65Gi"}),),
    ),
    Case(
        "mpi-podgroup-fewer-members-than-pods",
        src(PODGROUP, "TestCalculatePGMinResources / with non-existence priorityClass"),
        Manifest(
            mpijob(
                "test",
                "default",
                2,
                launcher=requests("2", "2Gi"),
                worker=requests("5", "16Gi"),
                runPolicy={"schedulingPolicy": {"queue": "q", "minAvailable": 2}},
            )
        ),
        # Equal priorities: the launcher and minMember - 1 workers.
        (Gang("test", 2, "q", min_resources={"cpu": "7", "memory": "18Gi"}),),
    ),
    Case(
        "mpi-definition",
        src(CONTROLLER, "TestNewLauncherAndWorker / defaults"),
        Definition(
            MPIJob(
                name="mpi",
                image="registry.example.com/img:1",
                script=Script.file("train.py"),
                nodes=2,
                resources=Resources(cpu=8, memory="32Gi", gpu=2),
                queue="q",
            ),
            operators=("mpi-operator", "trainer"),
        ),
        (
            Pods({"Launcher": 1, "Worker": 2}),
            PodNames({("Worker", 1): "mpi-worker-1", ("Launcher", 0): "mpi-launcher"}),
            Env("Launcher", 0, {"K_MPI_JOB_ROLE": "launcher", "NVIDIA_VISIBLE_DEVICES": ""}),
            Env("Worker", 1, {"K_MPI_JOB_ROLE": "worker"}),
            Command("Worker", ("/usr/sbin/sshd", "-De")),
            Gang("mpi", 3, "q"),
        ),
    ),
]
