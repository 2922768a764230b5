"""mpi-operator (github.com/kubeflow/mpi-operator, caa3c47, "Prepare v0.8.2"): MPIJob
``kubeflow.org/v2beta1``, from pkg/controller/mpi_job_controller_test.go and
pkg/controller/podgroup_test.go."""

from __future__ import annotations

from typing import Any

from trainkit import MPIJob, NetworkProfile, Resources, Role, Script

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
    Succeeds,
    Volume,
)
from .mpi_checks import Hostfile, Labels, PodDNS, Service

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
    Case(
        "mpi-definition-role-restart-policies",
        src(CONTROLLER, "TestNewLauncherAndWorker / defaults (launcher OnFailure, worker Never)"),
        Definition(
            MPIJob(
                name="mpi",
                image="registry.example.com/img:1",
                script=Script.file("train.py"),
                nodes=2,
                resources=Resources(cpu=8, memory="32Gi", gpu=2),
                worker=Role(restart_policy="Never"),
                queue="q",
            ),
            operators=("mpi-operator", "trainer"),
        ),
        (Restart("Launcher", "OnFailure"), Restart("Worker", "Never")),
    ),
    Case(
        "mpi-definition-overrides",
        src(CONTROLLER, "TestNewLauncherAndWorker / overrides"),
        Definition(
            MPIJob(
                name="bar",
                image="registry.example.com/img:1",
                command=["mpirun", "/opt/app"],
                env={"FOO": "bar"},
                nodes=13,
                procs_per_node=5,
                mpi="Intel",
                ssh_dir="/home/mpiuser/.ssh",
                resources=Resources(cpu=8, memory="32Gi"),
                worker=Role(command=["/entrypoint.sh"]),
                queue="q",
            ),
            operators=("mpi-operator", "trainer"),
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
                    "I_MPI_PERHOST": "5",
                    "OMPI_MCA_orte_default_hostfile": ABSENT,
                },
            ),
            Env("Worker", 12, {"FOO": "bar", "K_MPI_JOB_ROLE": "worker"}),
            # A worker with its own command keeps it (no sshd).
            Command("Worker", ("/entrypoint.sh",)),
        ),
    ),
]


# --- the hostfile (TestNewConfigMap), the Service, labels, DNS and volumes --------------------

CONFIG_MAP = "TestNewConfigMap"
OPERATOR = "training.kubeflow.org/operator-name"
JOB_NAME = "training.kubeflow.org/job-name"
JOB_ROLE = "training.kubeflow.org/job-role"
REPLICA_INDEX = "training.kubeflow.org/replica-index"


def ssh_volume(name: str, root: bool = True) -> dict[str, Any]:
    """setupSSHOnPod: the key Secret's three items; mode 0600 only at /root/.ssh."""
    items = [
        {"key": "ssh-privatekey", "path": "id_rsa"},
        {"key": "ssh-publickey", "path": "id_rsa.pub"},
        {"key": "ssh-publickey", "path": "authorized_keys"},
    ]
    secret: dict[str, Any] = {"secretName": f"{name}-ssh", "items": items}
    if root:
        secret["defaultMode"] = 0o600
    return {"secret": secret}


def config_volume(name: str) -> dict[str, Any]:
    """newLauncherPodTemplate: the hostfile (0444) and discover_hosts.sh (0555)."""
    items = [
        {"key": "hostfile", "path": "hostfile", "mode": 0o444},
        {"key": "discover_hosts.sh", "path": "discover_hosts.sh", "mode": 0o555},
    ]
    return {"configMap": {"name": f"{name}-config", "items": items}}


def hostfile_case(case_id: str, case: str, job: dict[str, Any], text: str) -> Case:
    return Case(
        case_id,
        src(CONTROLLER, f"{CONFIG_MAP} / {case}"),
        Manifest(job, namespace=job["metadata"]["namespace"]),
        (Hostfile(text),),
    )


def service(name: str, publish: bool = False) -> Service:
    # newJobService: headless, no ports, every pod of the job (launcher too) by the
    # operator's labels; not-ready pods published only with the launcher as a worker.
    return Service(name, {OPERATOR: "mpi-operator", JOB_NAME: name}, publish_not_ready=publish)


CASES += [
    hostfile_case(
        "mpi-hostfile-launcher-as-worker",
        "OpenMPI without slots, enable launcher as worker",
        mpijob("openmpi-without-slots", "tenant-a", 2, runLauncherAsWorker=True),
        "openmpi-without-slots-launcher.openmpi-without-slots.tenant-a.svc slots=1\n"
        "openmpi-without-slots-worker-0.openmpi-without-slots.tenant-a.svc slots=1\n"
        "openmpi-without-slots-worker-1.openmpi-without-slots.tenant-a.svc slots=1\n",
    ),
    hostfile_case(
        "mpi-hostfile-launcher-only",
        "OpenMPI without slots, zero explicit workers",
        mpijob("openmpi-without-slots", "tenant-a", 0, runLauncherAsWorker=True),
        "openmpi-without-slots-launcher.openmpi-without-slots.tenant-a.svc slots=1\n",
    ),
    hostfile_case(
        "mpi-hostfile-workers",
        "OpenMPI without slots, disable launcher as worker",
        mpijob("openmpi-without-slots", "tenant-a", 2),
        "openmpi-without-slots-worker-0.openmpi-without-slots.tenant-a.svc slots=1\n"
        "openmpi-without-slots-worker-1.openmpi-without-slots.tenant-a.svc slots=1\n",
    ),
    hostfile_case(
        "mpi-hostfile-slots",
        "OpenMPI with slots",
        mpijob("openmpi-with-slots", "tenant-a", 1, slotsPerWorker=10),
        "openmpi-with-slots-worker-0.openmpi-with-slots.tenant-a.svc slots=10\n",
    ),
    hostfile_case(
        "mpi-hostfile-intel",
        "IntelMPI with slots",
        mpijob("intelmpi-with-slots", "project-x", 1, slotsPerWorker=10, mpiImplementation="Intel"),
        "intelmpi-with-slots-worker-0.intelmpi-with-slots.project-x.svc:10\n",
    ),
    hostfile_case(
        "mpi-hostfile-mpich",
        "MPICH with slots",
        mpijob("mpich-with-slots", "project-x", 1, slotsPerWorker=10, mpiImplementation="MPICH"),
        "mpich-with-slots-worker-0.mpich-with-slots.project-x.svc:10\n",
    ),
    Case(
        "mpi-service",
        src(CONTROLLER, "TestAllResourcesCreated (newJobService)"),
        Manifest(mpijob("foo", "bar", 5), namespace="bar"),
        (
            service("foo"),
            Hostfile("".join(f"foo-worker-{i}.foo.bar.svc slots=1\n" for i in range(5))),
        ),
    ),
    Case(
        "mpi-service-launcher-as-worker",
        src(CONTROLLER, "TestAllResourcesCreated (newJobService, runLauncherAsWorker)"),
        Manifest(mpijob("foo", "bar", 1, runLauncherAsWorker=True), namespace="bar"),
        (service("foo", publish=True),),
    ),
    Case(
        "mpi-defaults-pods-metadata",
        src(CONTROLLER, "TestNewLauncherAndWorker / defaults"),
        Manifest(mpijob("foo", "bar"), namespace="bar"),
        (
            Labels(
                "Launcher",
                {
                    OPERATOR: "mpi-operator",
                    JOB_NAME: "foo",
                    JOB_ROLE: "launcher",
                    REPLICA_INDEX: None,
                },
            ),
            Labels("Worker", {OPERATOR: "mpi-operator", JOB_NAME: "foo", JOB_ROLE: "worker"}),
            PodDNS("Launcher", "foo"),
            PodDNS("Worker", "foo", searches=("foo.bar.svc.cluster.local",)),
            Volume("Launcher", "/root/.ssh", ssh_volume("foo")),
            Volume("Worker", "/root/.ssh", ssh_volume("foo")),
            Volume("Launcher", "/etc/mpi", config_volume("foo")),
        ),
    ),
    Case(
        "mpi-launcher-as-worker-pods-metadata",
        src(CONTROLLER, "TestNewLauncherAndWorker / launcher-as-worker"),
        Manifest(mpijob("foo", "bar", runLauncherAsWorker=True), namespace="bar"),
        (
            # The launcher is host 0 of the gang's index; workers count from 1.
            Labels("Launcher", {JOB_ROLE: "launcher", REPLICA_INDEX: "0"}),
            PodDNS("Worker", "foo", searches=("foo.bar.svc.cluster.local",)),
        ),
    ),
    Case(
        "mpi-overrides-pods-metadata",
        src(CONTROLLER, "TestNewLauncherAndWorker / overrides"),
        Manifest(
            mpijob(
                "bar",
                "foo",
                13,
                launcher_pod={"hostNetwork": True},
                worker_pod={"hostNetwork": True},
                launcher={"name": "mpi", "env": [{"name": "FOO", "value": "bar"}]},
                worker={"name": "mpi", "command": ["/entrypoint.sh"]},
                sshAuthMountPath="/home/mpiuser/.ssh",
                runPolicy={"backoffLimit": 3, "activeDeadlineSeconds": 2},
            ),
            namespace="foo",
        ),
        (
            PodDNS("Launcher", "bar", dns_policy="ClusterFirstWithHostNet"),
            PodDNS(
                "Worker",
                "bar",
                dns_policy="ClusterFirstWithHostNet",
                searches=("bar.foo.svc.cluster.local",),
            ),
            # Not /root/.ssh: the Secret's files keep the kubelet's default mode.
            Volume("Launcher", "/home/mpiuser/.ssh", ssh_volume("bar", root=False)),
            Volume("Worker", "/home/mpiuser/.ssh", ssh_volume("bar", root=False)),
            # The launcher's Job carries the run policy's backoffLimit; it decides the job.
            Succeeds(("Launcher",), "all", 3),
        ),
    ),
    Case(
        "mpi-launcher-decides",
        src(CONTROLLER, "TestLauncherSucceeded, TestLauncherFailed"),
        Manifest(mpijob("foo", "bar", 2), namespace="bar"),
        # The MPIJob succeeds or fails with its launcher Job, whose backoffLimit is the
        # run policy's, else batch/v1's default of 6.
        (Succeeds(("Launcher",), "all", 6),),
    ),
    Case(
        "mpi-definition-hostfile-and-service",
        src(CONTROLLER, "TestNewConfigMap / OpenMPI with slots; TestAllResourcesCreated"),
        Definition(
            MPIJob(
                name="mpi",
                image="registry.example.com/img:1",
                script=Script.file("train.py"),
                nodes=2,
                resources=Resources(cpu=8, memory="32Gi", gpu=4),
                backoff_limit=4,
                queue="q",
            ),
            operators=("mpi-operator", "trainer"),
        ),
        (
            Hostfile("mpi-worker-0.mpi.t.svc slots=4\nmpi-worker-1.mpi.t.svc slots=4\n"),
            service("mpi"),
            Labels("Worker", {OPERATOR: "mpi-operator", JOB_NAME: "mpi", JOB_ROLE: "worker"}),
            Succeeds(("Launcher",), "all", 4),
        ),
    ),
    Case(
        "mpi-definition-host-network",
        src(CONTROLLER, "TestNewLauncherAndWorker / overrides (hostNetwork)"),
        Definition(
            MPIJob(
                name="mpi",
                image="registry.example.com/img:1",
                script=Script.file("train.py"),
                nodes=2,
                resources=Resources(cpu=8, memory="32Gi", gpu=4),
                queue="q",
                network="host",
            ),
            operators=("mpi-operator", "trainer"),
            platform=(NetworkProfile(name="host", host_network=True),),
            team={"network_profiles": ["host"]},
        ),
        (
            # Workers on the node's network keep cluster DNS; the launcher, which runs no
            # ranks, stays off it (trainkit).
            PodDNS(
                "Worker",
                "mpi",
                dns_policy="ClusterFirstWithHostNet",
                searches=("mpi.t.svc.cluster.local",),
            ),
            PodDNS("Launcher", "mpi"),
            # The labels trainkit's one-worker-per-node rule selects are the operator's.
            Labels("Worker", {JOB_NAME: "mpi", JOB_ROLE: "worker"}),
            Command("Worker", ("/usr/sbin/sshd", "-De", "-p", "2222")),
        ),
        why="trainkit moves the workers' sshd off the node's port 22 (issue 24)",
    ),
]


# --- the PodGroup without a schedulingPolicy, and its priority (podgroup_test.go) ------------

QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"


def annotated(job: dict[str, Any], queue: str) -> dict[str, Any]:
    job["metadata"]["annotations"] = {QUEUE_ANNOTATION: queue}
    return job


def without_workers(job: dict[str, Any]) -> dict[str, Any]:
    del job["spec"]["mpiReplicaSpecs"]["Worker"]
    return job


CASES += [
    Case(
        "mpi-podgroup-without-scheduling-policy",
        src(PODGROUP, "TestNewPodGroup / schedulingPolicy is nil"),
        Manifest(
            annotated(
                mpijob(
                    "test",
                    "default",
                    2,
                    launcher=requests("1", "2Gi"),
                    worker=requests("10", "20Gi"),
                    launcher_pod={"priorityClassName": "high"},
                ),
                "project-x",
            )
        ),
        # The queue of the MPIJob's annotation, the launcher's priority, every pod's requests.
        (
            Gang(
                "test",
                3,
                "project-x",
                min_resources={"cpu": "21", "memory": "42Gi"},
                priority_class="high",
            ),
        ),
    ),
    Case(
        "mpi-podgroup-launcher-only",
        src(PODGROUP, "TestNewPodGroup / no worker no MinResources"),
        Manifest(
            without_workers(
                annotated(
                    mpijob(
                        "test",
                        "default",
                        launcher=requests("1", "2Gi"),
                        runLauncherAsWorker=True,
                        runPolicy={
                            "schedulingPolicy": {
                                "minAvailable": 1,
                                "queue": "project-y",
                                "priorityClass": "high",
                                "scheduleTimeoutSeconds": 100,
                            }
                        },
                    ),
                    "project-x",
                )
            )
        ),
        (
            Pods({"Launcher": 1}),
            Gang(
                "test",
                1,
                "project-y",
                min_resources={"cpu": "1", "memory": "2Gi"},
                priority_class="high",
            ),
            Hostfile("test-launcher.test.default.svc slots=1\n"),
        ),
    ),
    Case(
        "mpi-podgroup-priority-of-the-launcher",
        src(PODGROUP, "TestCalcPriorityClassName / use launcher"),
        Manifest(
            mpijob(
                "test",
                "default",
                1,
                launcher_pod={"priorityClassName": "high"},
                worker_pod={"priorityClassName": "low"},
                runPolicy={"schedulingPolicy": {"queue": "q"}},
            )
        ),
        (Gang("test", 2, "q", priority_class="high"),),
    ),
    Case(
        "mpi-podgroup-priority-of-the-workers",
        src(PODGROUP, "TestCalcPriorityClassName / use worker"),
        Manifest(
            mpijob(
                "test",
                "default",
                1,
                worker_pod={"priorityClassName": "low"},
                runPolicy={"schedulingPolicy": {"queue": "q"}},
            )
        ),
        (Gang("test", 2, "q", priority_class="low"),),
    ),
    Case(
        "mpi-podgroup-priority-of-the-policy",
        src(PODGROUP, "TestCalcPriorityClassName / use schedulingPolicy"),
        Manifest(
            mpijob(
                "test",
                "default",
                1,
                launcher_pod={"priorityClassName": "low"},
                runPolicy={"schedulingPolicy": {"queue": "q", "priorityClass": "high"}},
            )
        ),
        (Gang("test", 2, "q", priority_class="high"),),
    ),
    Case(
        "mpi-podgroup-given-min-resources",
        src(PODGROUP, "TestCalculatePGMinResources / minResources is not empty"),
        Manifest(
            mpijob(
                "test",
                "default",
                4,
                worker=requests("10", "20Gi"),
                runPolicy={
                    "schedulingPolicy": {
                        "queue": "q",
                        "minResources": {"cpu": "100", "memory": "512Gi", "example.com/gpu": "40"},
                    }
                },
            )
        ),
        (
            Gang(
                "test",
                5,
                "q",
                min_resources={"cpu": "100", "memory": "512Gi", "example.com/gpu": "40"},
            ),
        ),
    ),
]
