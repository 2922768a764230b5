"""Kubeflow Trainer v2.3.0 (github.com/kubeflow/trainer, tag v2.3.0, 658725bd): the pods a
TrainJob becomes with its runtime, from the runtime framework's own tests
(pkg/runtime/core/, pkg/runtime/framework/plugins/{torch,mpi,jobset,volcano}/).

The plugin tests start from a ``runtime.Info`` built by hand; here each one is the runtime
and TrainJob objects that build it (pkg/runtime/core/trainingruntime.go newRuntimeInfo):
a replicated job labelled ``trainer.kubeflow.org/trainjob-ancestor-step: trainer`` is the
trainer's pod set, counting ``mlPolicy.numNodes``; any other counts its Job's parallelism.
``resourcesPerNode`` in the upstream wrapper (``Container(image, command, args, res)``) is
requests only. Where an upstream case builds a coscheduling PodGroup, the case asks
Volcano's instead: both plugins add up the same pod sets (count and requests), which is
the fact carried over.
"""

from __future__ import annotations

from typing import Any

from trainkit import ClusterTrainingRuntime, Resources, TrainJob

from . import (
    ABSENT,
    Case,
    Command,
    Definition,
    Env,
    FieldRef,
    Gang,
    Health,
    Manifest,
    NoGang,
    Pods,
    Port,
    Refused,
    Source,
    Volume,
    World,
)
from . import Resources as ContainerResources

REPO, REF = "kubeflow/trainer", "v2.3.0"
TORCH = "pkg/runtime/framework/plugins/torch/torch_test.go"
MPI = "pkg/runtime/framework/plugins/mpi/mpi_test.go"
JOBSET = "pkg/runtime/framework/plugins/jobset/jobset_test.go"
BUILDER = "pkg/runtime/framework/plugins/jobset/builder_test.go"
VOLCANO = "pkg/runtime/framework/plugins/volcano/volcano_test.go"
CORE = "pkg/runtime/core/trainingruntime_test.go"
CONTROLLER = "test/integration/controller/trainjob_controller_test.go"
HEALTH = "resource.customizations.health.trainer.kubeflow.org_TrainJob"
CLUSTER_CORE = "pkg/runtime/core/clustertrainingruntime_test.go"
KIND = "TrainJob"

ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
QUEUE = "scheduling.volcano.sh/queue-name"
INDEX = FieldRef("metadata.annotations['batch.kubernetes.io/job-completion-index']")
CPU1 = {"cpu": "1"}


def src(file: str, case: str) -> Source:
    return Source(REPO, REF, file, case)


def container(
    name: str = "node",
    image: str = "test:runtime",
    command: list[str] | None = None,
    requests: dict[str, str] | None = None,
    limits: dict[str, str] | None = None,
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "image": image}
    if command is not None:
        c["command"] = command
        c["args"] = command
    resources = {k: v for k, v in (("requests", requests), ("limits", limits)) if v}
    if resources:
        c["resources"] = resources
    if env:
        c["env"] = [{"name": k, "value": v} for k, v in env.items()]
    return c


def rjob(
    name: str,
    *containers: dict[str, Any],
    ancestor: str | None = None,
    parallelism: int | None = None,
    priority: str | None = None,
    depends: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    pod: dict[str, Any] = {"containers": list(containers) or [container(name)]}
    if priority is not None:
        pod["priorityClassName"] = priority
    job: dict[str, Any] = {"template": {"spec": pod}}
    if parallelism is not None:
        job["parallelism"] = parallelism
        job["completions"] = parallelism
    out: dict[str, Any] = {"name": name, "replicas": 1, "template": {"spec": job}}
    if ancestor is not None:
        out["template"]["metadata"] = {"labels": {ANCESTOR: ancestor}}
    if depends:
        out["dependsOn"] = depends
    return out


def initializers() -> list[dict[str, Any]]:
    """The upstream wrapper's runtime: a dataset and a model initializer before the node."""
    return [
        rjob("dataset-initializer", ancestor="dataset-initializer"),
        rjob("model-initializer", ancestor="model-initializer"),
    ]


def runtime(
    ml: dict[str, Any],
    jobs: list[dict[str, Any]],
    *,
    volcano: bool = False,
    annotations: dict[str, str] | None = None,
    name: str = "test-runtime",
) -> dict[str, Any]:
    spec: dict[str, Any] = {"mlPolicy": ml, "template": {"spec": {"replicatedJobs": jobs}}}
    if annotations:
        spec["template"]["metadata"] = {"annotations": annotations}
    if volcano:
        spec["podGroupPolicy"] = {"volcano": {}}
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainingRuntime",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def trainjob(
    name: str,
    trainer: dict[str, Any] | None = None,
    patches: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "runtimeRef": {"apiGroup": "trainer.kubeflow.org", "kind": "TrainingRuntime"}
    }
    spec["runtimeRef"]["name"] = "test-runtime"
    if trainer is not None:
        spec["trainer"] = trainer
    if patches:
        spec["runtimePatches"] = patches
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def node(**ml: Any) -> list[dict[str, Any]]:
    """Only the trainer's replicated job, its container ``node`` as given."""
    return [rjob("node", container(**ml), ancestor="trainer")]


TORCH_ML = {"numNodes": 1, "torch": {}}


def pet(name: str, nodes: int, procs: str) -> dict[str, Any]:
    """The PET_* variables the torch plugin sets on container ``node`` (torch.go)."""
    return {
        "PET_NNODES": str(nodes),
        "PET_NPROC_PER_NODE": procs,
        "PET_NODE_RANK": INDEX,
        "PET_MASTER_ADDR": f"{name}-node-0-0.{name}",
        "PET_MASTER_PORT": "29500",
    }


NO_PET = dict.fromkeys(("PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK"), ABSENT)


def auto_case(label: str, case: str, requests: dict[str, str], procs: str) -> Case:
    """torch.go EnforceMLPolicy: numProcPerNode ``auto`` on a node without a GPU is its CPU
    count (requests, else limits; rounded up; at least 1); with a GPU it stays ``auto``."""
    return Case(
        f"trainer-torch-auto-{label}",
        src(TORCH, f"TestTorch / {case}"),
        Manifest(
            trainjob(
                "test-job", {"image": "test:image", "resourcesPerNode": {"requests": requests}}
            ),
            runtime(TORCH_ML, node()),
        ),
        (
            Pods({"node": 1}),
            Env("node", 0, pet("test-job", 1, procs)),
            Port("node", 29500),
        ),
    )


OMPI = {
    "OMPI_MCA_orte_default_hostfile": "/etc/mpi/hostfile",
    "OMPI_MCA_orte_keep_fqdn_hostnames": "true",
    "OMPI_MCA_plm_rsh_args": "-o ConnectionAttempts=10",
}


def mpi_runtime(
    procs: int = 1, as_node: bool = False, num_nodes: int = 1, **node_container: Any
) -> dict[str, Any]:
    """An OpenMPI runtime: ``launcher`` (container ``node``) and ``node`` (the trainer)."""
    ml = {
        "numNodes": num_nodes,
        "mpi": {
            "numProcPerNode": procs,
            "mpiImplementation": "OpenMPI",
            "sshAuthMountPath": "/root/.ssh",
            "runLauncherAsNode": as_node,
        },
    }
    return runtime(
        ml,
        [
            rjob("launcher", container("node"), ancestor="trainer"),
            rjob("node", container("node", **node_container)),
        ],
    )


SSH_SECRET_ITEMS = [
    {"key": "ssh-privatekey", "path": "id_rsa", "mode": 0o640},
    {"key": "ssh-publickey", "path": "id_rsa.pub", "mode": 0o644},
    {"key": "ssh-publickey", "path": "authorized_keys", "mode": 0o644},
]


def ssh_volume(name: str) -> Volume:
    return Volume(
        "launcher",
        "/root/.ssh",
        {
            "secret": {
                "secretName": f"{name}-mpi-ssh-auth",
                "defaultMode": 0o400,
                "items": SSH_SECRET_ITEMS,
            }
        },
    )


IMAGE = "registry.example.com/torch:2.5"


def on_volcano(job: Any, *platform: Any, **team: Any) -> Definition:
    return Definition(job, platform=platform, operators=("trainer",), team=team)


TORCH_RT = ClusterTrainingRuntime(
    name="torch",
    image=IMAGE,
    nodes=2,
    resources=Resources(cpu=8, memory="32Gi", gpu=4),
)


CASES = [
    # --- torch plugin: counts and PET_* ----------------------------------------------------
    Case(
        "trainer-torch-trainjob-num-nodes",
        src(TORCH, "TestTorch / trainJob numNodes is respected rather than mlPolicy one"),
        Manifest(trainjob("trainjob", {"numNodes": 2}), runtime(TORCH_ML, node())),
        (
            Pods({"node": 2}),
            # No resources at all: auto resolves to max(1, 0 CPUs) = 1.
            Env("node", 0, pet("trainjob", 2, "1")),
            Env("node", 1, {"PET_NODE_RANK": INDEX}),
            Port("node", 29500),
            World("1", 2),
        ),
    ),
    auto_case("cpu-limit", "nproc_per_node=auto with CPU limit", {"cpu": "4"}, "4"),
    auto_case("no-cpu", "nproc_per_node=auto with no CPU resources", {}, "1"),
    auto_case("low-cpu", "nproc_per_node=auto with low CPU limit", {"cpu": "2"}, "2"),
    auto_case(
        "cpu-request", "nproc_per_node=auto with CPU request but no limit", {"cpu": "3"}, "3"
    ),
    auto_case("millicores", "nproc_per_node=auto with millicore CPU limit", {"cpu": "2.5"}, "3"),
    auto_case("fraction", "nproc_per_node=auto with fractional CPU limit", {"cpu": "0.7"}, "1"),
    auto_case(
        "millicores-m",
        "nproc_per_node=auto with millicore CPU limit in m format",
        {"cpu": "2500m"},
        "3",
    ),
    auto_case("cpu", "nproc_per_node=cpu with CPU limit", {"cpu": "4"}, "4"),
    auto_case("cpu-fraction", "nproc_per_node=cpu with fractional CPU", {"cpu": "3.7"}, "4"),
    auto_case(
        "gpu",
        "nproc_per_node=auto with GPU request should remain auto",
        {"example.com/gpu": "2"},
        "auto",
    ),
    auto_case(
        "gpu-and-cpu",
        "nproc_per_node=auto resolves to GPU count when GPU resources present",
        {"cpu": "6", "example.com/gpu": "2"},
        "auto",
    ),
    Case(
        "trainer-torch-explicit-procs",
        src(TORCH, "TestTorch / explicitly set nproc_per_node should be preserved"),
        Manifest(
            trainjob(
                "test-job",
                {
                    "image": "test:image",
                    "numProcPerNode": 3,
                    "resourcesPerNode": {"requests": {"cpu": "8"}},
                },
            ),
            runtime(TORCH_ML, node()),
        ),
        (Env("node", 0, pet("test-job", 1, "3")), World("3", 3)),
    ),
    Case(
        "trainer-torch-multi-node-multi-gpu",
        src(TORCH, "TestTorch / multi-node multi-GPU training with complete info"),
        Manifest(
            trainjob(
                "gpu-job",
                {
                    "numNodes": 4,
                    "image": "pytorch/pytorch:2.0.0-cuda11.7-cudnn8-runtime",
                    "resourcesPerNode": {
                        "requests": {"cpu": "8", "memory": "16Gi", "example.com/gpu": "4"}
                    },
                },
            ),
            runtime({"numNodes": 2, "torch": {}}, node()),
        ),
        (Pods({"node": 4}), Env("node", 0, pet("gpu-job", 4, "auto"))),
    ),
    Case(
        "trainer-torch-no-trainer",
        src(TORCH, "TestTorch / no action when mlPolicySource torch is null"),
        # Without spec.trainer the plugin injects nothing (trainerContainer stays nil).
        Manifest(trainjob("trainjob"), runtime({"numNodes": 3, "torch": {}}, node())),
        (Pods({"node": 3}), Env("node", 0, {**NO_PET, "PET_MASTER_ADDR": ABSENT})),
    ),
    # --- core: the runtime and the TrainJob built together ---------------------------------
    Case(
        "trainer-core-plainml-num-nodes-from-trainjob",
        src(
            CORE,
            "TestTrainingRuntimeNewObjects / succeeded to build PodGroup and JobSet with "
            "NumNodes from the TrainJob and container from the Runtime.",
        ),
        Manifest(
            trainjob(
                "test-job",
                {"numNodes": 30},
                [
                    {
                        "manager": "test.io/manager",
                        "trainingRuntimeSpec": {
                            "template": {"metadata": {"annotations": {QUEUE: "q1"}}}
                        },
                    }
                ],
            ),
            runtime(
                {"numNodes": 100},
                [
                    rjob(
                        "dataset-initializer",
                        container("dataset-initializer", requests=CPU1),
                        ancestor="dataset-initializer",
                    ),
                    rjob(
                        "model-initializer",
                        container("model-initializer", requests=CPU1),
                        ancestor="model-initializer",
                    ),
                    rjob("node", container(command=["runtime"], requests=CPU1), ancestor="trainer"),
                ],
                volcano=True,
            ),
        ),
        (
            Pods({"dataset-initializer": 1, "model-initializer": 1, "node": 30}),
            # 32 = 30 nodes + 2 initializers; 30 + 2 CPUs.
            Gang("test-job", 32, "q1", {"cpu": "32"}),
            # plainml (no torch policy): no PET_* at all.
            Env("node", 0, NO_PET),
            Command("node", ("runtime",)),
        ),
    ),
    Case(
        "trainer-core-plainml-container-from-trainjob",
        src(
            CORE,
            "TestTrainingRuntimeNewObjects / succeeded to build JobSet with NumNodes from the "
            "Runtime and container from the TrainJob.",
        ),
        Manifest(
            trainjob(
                "test-job",
                {
                    "image": "test:trainjob",
                    "command": ["trainjob"],
                    "args": ["trainjob"],
                    "resourcesPerNode": {"requests": CPU1},
                    "env": [
                        {"name": "TRAIN_JOB", "value": "override"},
                        {"name": "TRAIN_JOB_CUSTOM", "value": "test:trainjob"},
                    ],
                },
            ),
            runtime(
                {"numNodes": 100},
                [
                    *initializers(),
                    rjob(
                        "node",
                        container(
                            command=["runtime"],
                            requests=CPU1,
                            env={"TRAIN_JOB": "original", "RUNTIME": "test:runtime"},
                        ),
                        ancestor="trainer",
                    ),
                ],
            ),
        ),
        (
            Pods({"dataset-initializer": 1, "model-initializer": 1, "node": 100}),
            Command("node", ("trainjob",)),
            Env(
                "node",
                0,
                {
                    "TRAIN_JOB": "override",
                    "TRAIN_JOB_CUSTOM": "test:trainjob",
                    "RUNTIME": "test:runtime",
                    **NO_PET,
                },
            ),
            NoGang(),
        ),
    ),
    Case(
        "trainer-core-torch-from-trainjob",
        src(
            CORE,
            "TestTrainingRuntimeNewObjects / succeeded to build JobSet with Torch values from "
            "the TrainJob",
        ),
        Manifest(
            trainjob("test-job", {"numNodes": 30, "numProcPerNode": 3}),
            runtime(
                {"numNodes": 100, "torch": {}},
                [
                    *initializers(),
                    rjob(
                        "node",
                        container(command=["runtime"], requests=CPU1),
                        ancestor="trainer",
                        depends=[
                            {"name": "dataset-initializer", "status": "Complete"},
                            {"name": "model-initializer", "status": "Complete"},
                        ],
                    ),
                ],
            ),
        ),
        (
            Pods({"dataset-initializer": 1, "model-initializer": 1, "node": 30}),
            Env("node", 0, pet("test-job", 30, "3")),
            Port("node", 29500),
            Command("node", ("runtime",)),
            World("3", 90),
        ),
    ),
    Case(
        "trainer-core-torch-from-runtime-and-envs",
        src(
            CORE,
            "TestTrainingRuntimeNewObjects / succeeded to build JobSet with Torch values from "
            "the Runtime and envs.",
        ),
        Manifest(
            trainjob(
                "test-job",
                {
                    "image": "test:trainjob",
                    "command": ["trainjob"],
                    "args": ["trainjob"],
                    "resourcesPerNode": {"requests": CPU1},
                    "env": [
                        {"name": "TRAIN_JOB", "value": "override"},
                        {"name": "TRAIN_JOB_CUSTOM", "value": "test:trainjob"},
                    ],
                },
            ),
            runtime(
                {"numNodes": 100, "torch": {}},
                [
                    *initializers(),
                    rjob(
                        "node",
                        container(
                            command=["runtime"],
                            requests=CPU1,
                            env={"TRAIN_JOB": "original", "RUNTIME": "test:runtime"},
                        ),
                        ancestor="trainer",
                    ),
                ],
            ),
        ),
        (
            Pods({"dataset-initializer": 1, "model-initializer": 1, "node": 100}),
            Env(
                "node",
                0,
                {
                    "TRAIN_JOB": "override",
                    "TRAIN_JOB_CUSTOM": "test:trainjob",
                    "RUNTIME": "test:runtime",
                    **pet("test-job", 100, "1"),
                },
            ),
            Command("node", ("trainjob",)),
        ),
    ),
    Case(
        "trainer-core-merged-resources-per-node",
        src(
            CORE,
            "TestTrainingRuntimeNewObjects / merged resourcesPerNode keeps runtime resources "
            "when trainjob sets gpu only",
        ),
        Manifest(
            trainjob(
                "test-job", {"numNodes": 1, "resourcesPerNode": {"limits": {"nvidia.com/gpu": "4"}}}
            ),
            runtime(
                {"numNodes": 1},
                [
                    *initializers(),
                    rjob("node", container(command=["runtime"], requests=CPU1), ancestor="trainer"),
                ],
            ),
        ),
        (ContainerResources("node", CPU1, {"nvidia.com/gpu": "4"}),),
    ),
    Case(
        "trainer-core-openmpi-from-trainjob",
        src(
            CORE,
            "TestTrainingRuntimeNewObjects / succeeded to build JobSet with OpenMPI values from "
            "the TrainJob",
        ),
        Manifest(
            trainjob("test-job", {"numNodes": 2, "numProcPerNode": 8}),
            runtime(
                {
                    "numNodes": 1,
                    "mpi": {
                        "numProcPerNode": 1,
                        "mpiImplementation": "OpenMPI",
                        "sshAuthMountPath": "/root/.ssh",
                        "runLauncherAsNode": False,
                    },
                },
                [
                    *initializers(),
                    rjob("launcher", container("node"), ancestor="trainer"),
                    rjob("node", container(command=["runtime"], requests=CPU1)),
                ],
            ),
        ),
        (
            Pods({"dataset-initializer": 1, "model-initializer": 1, "launcher": 1, "node": 2}),
            # The hostfile: test-job-node-0-{0,1}.test-job slots=8.
            World("8", 16),
            Env("launcher", 0, {**OMPI, "OMPI_MCA_orte_set_default_slots": "8"}),
            Env("node", 0, dict.fromkeys(OMPI, ABSENT)),
            Volume(
                "launcher",
                "/etc/mpi",
                {
                    "configMap": {
                        "name": "test-job-mpi-hostfile",
                        "items": [{"key": "hostfile", "path": "hostfile", "mode": 0o444}],
                    }
                },
            ),
            ssh_volume("test-job"),
            Volume("node", "/root/.ssh", ssh_volume("test-job").source),
        ),
    ),
    # --- mpi plugin ------------------------------------------------------------------------
    Case(
        "trainer-mpi-trainjob-num-nodes",
        src(MPI, "TestMPI / trainJob numNodes is respected rather than mlPolicy one"),
        Manifest(trainjob("trainjob", {"numNodes": 2}), mpi_runtime()),
        (
            Pods({"launcher": 1, "node": 2}),
            World("1", 2),
            Env("launcher", 0, {**OMPI, "OMPI_MCA_orte_set_default_slots": "1"}),
        ),
    ),
    Case(
        "trainer-mpi-trainjob-procs",
        src(MPI, "TestMPI / trainJob numProcPerNode is respected rather than mlPolicy one"),
        Manifest(trainjob("trainjob", {"numNodes": 1, "numProcPerNode": 2}), mpi_runtime()),
        (
            Pods({"launcher": 1, "node": 1}),
            World("2", 2),
            Env("launcher", 0, {"OMPI_MCA_orte_set_default_slots": "2"}),
        ),
    ),
    Case(
        "trainer-mpi-gpus-from-trainjob",
        src(MPI, "TestMPI / numProcPerNode is set to number of GPUs in TrainJob"),
        Manifest(
            trainjob(
                "trainjob",
                {
                    "numNodes": 1,
                    "image": "test:trainjob",
                    "command": ["trainjob"],
                    "args": ["trainjob"],
                    "resourcesPerNode": {"requests": {"custom.com/gpu": "5"}},
                },
            ),
            mpi_runtime(),
        ),
        (World("5", 5), Env("launcher", 0, {"OMPI_MCA_orte_set_default_slots": "5"})),
    ),
    Case(
        "trainer-mpi-gpus-from-runtime",
        src(MPI, "TestMPI / numProcPerNode is set to number of GPUs in TrainJob"),
        # The same rule with the GPUs in the runtime's node (ExtractResourcePerNodeFromRuntime).
        Manifest(
            trainjob("trainjob", {"numNodes": 2}),
            mpi_runtime(requests={"nvidia.com/gpu": "4"}, limits={"nvidia.com/gpu": "4"}),
        ),
        (World("4", 8), Env("launcher", 0, {"OMPI_MCA_orte_set_default_slots": "4"})),
    ),
    Case(
        "trainer-mpi-launcher-as-node",
        src(MPI, "TestMPI / runLauncherAsNode is true"),
        Manifest(trainjob("trainjob", {"numNodes": 10}), mpi_runtime(as_node=True)),
        (
            # One of the 10 nodes is the launcher: 9 node pods, 10 hosts in the hostfile.
            Pods({"launcher": 1, "node": 9}),
            World("1", 10),
            Env("launcher", 0, {**OMPI, "OMPI_MCA_orte_set_default_slots": "1"}),
        ),
    ),
    # --- jobset plugin (builder) ---------------------------------------------------------------------
    Case(
        "trainer-builder-env-upserted",
        src(
            BUILDER,
            "TestTrainer / trainer ancestor merges Trainer.Env and upserts duplicate container env keys",
        ),
        Manifest(
            trainjob(
                "trainjob",
                {"env": [{"name": "A", "value": "trainjob"}, {"name": "C", "value": "new"}]},
            ),
            runtime({"numNodes": 1}, node(env={"A": "runtime", "B": "runtime"})),
        ),
        (Env("node", 0, {"A": "trainjob", "B": "runtime", "C": "new"}),),
    ),
    Case(
        "trainer-builder-image-command-args",
        src(BUILDER, "TestTrainer / trainer ancestor with image command and args"),
        Manifest(
            trainjob("trainjob", {"image": "img:trainjob", "command": ["python"], "args": ["x"]}),
            runtime({"numNodes": 1}, node(command=["runtime"])),
        ),
        (Command("node", ("python",)),),
    ),
    Case(
        "trainer-builder-launcher-as-node-env",
        src(BUILDER, "TestTrainer / MPI runLauncherAsNode injects Trainer.Env into node container"),
        Manifest(
            trainjob(
                "trainjob",
                {"image": "img:trainjob", "env": [{"name": "WORLD_SIZE_OVERRIDE", "value": "8"}]},
            ),
            mpi_runtime(as_node=True, env={"MPI_RANK_FILE": "/etc/mpi/rank"}),
        ),
        (
            # The nodes run ranks too: they get spec.trainer's env, not its image or command.
            Env("node", 0, {"MPI_RANK_FILE": "/etc/mpi/rank", "WORLD_SIZE_OVERRIDE": "8"}),
            Env("launcher", 0, {"WORLD_SIZE_OVERRIDE": "8"}),
        ),
    ),
    Case(
        "trainer-builder-node-not-modified",
        src(BUILDER, "TestTrainer / non-trainer ancestor is not modified"),
        Manifest(
            trainjob(
                "trainjob",
                {
                    "image": "should-not-be-applied",
                    "command": ["should-not-be-applied"],
                    "env": [{"name": "ONLY_LAUNCHER", "value": "1"}],
                },
            ),
            mpi_runtime(command=["sshd"]),
        ),
        # Without runLauncherAsNode only the trainer's job (the launcher) takes spec.trainer.
        (
            Command("node", ("sshd",)),
            Env("node", 0, {"ONLY_LAUNCHER": ABSENT}),
            Command("launcher", ("should-not-be-applied",)),
        ),
    ),
    # --- volcano plugin --------------------------------------------------------------------
    Case(
        "trainer-volcano-podgroup",
        src(VOLCANO, "TestVolcano / PodGroup exists but trainjob suspended"),
        Manifest(
            trainjob("job-update"),
            runtime(
                {"numNodes": 1},
                [
                    rjob(
                        "launcher",
                        container("node", requests={"cpu": "300m", "memory": "1Gi"}),
                        priority="high-priority",
                    ),
                    rjob(
                        "worker",
                        container("node", requests={"cpu": "500m", "memory": "0.5Gi"}),
                        parallelism=4,
                    ),
                ],
                volcano=True,
                annotations={QUEUE: "q1"},
            ),
            namespace="test-ns",
        ),
        (
            Pods({"launcher": 1, "worker": 4}),
            Gang("job-update", 5, "q1", {"cpu": "2300m", "memory": "3Gi"}, "high-priority"),
        ),
    ),
    Case(
        "trainer-volcano-queue-from-patch",
        src(
            CORE,
            "TestTrainingRuntimeNewObjects / succeeded to build JobSet with labels and "
            "annotations overrides from the TrainJob's RuntimePatches.",
        ),
        # A patch's template annotation overrides the runtime's: the queue the PodGroup gets.
        Manifest(
            trainjob(
                "test-job",
                {"numNodes": 2},
                [
                    {
                        "manager": "trainkit.dev/synth",
                        "trainingRuntimeSpec": {
                            "template": {"metadata": {"annotations": {QUEUE: "team"}}}
                        },
                    }
                ],
            ),
            runtime(
                TORCH_ML,
                node(requests={"cpu": "2"}),
                volcano=True,
                annotations={QUEUE: "runtime"},
            ),
        ),
        (Gang("test-job", 2, "team", {"cpu": "4"}),),
    ),
    Case(
        "trainer-volcano-none",
        src(VOLCANO, "TestValidate / no action when Volcano policy not enabled"),
        Manifest(trainjob("test", {"numNodes": 2}), runtime(TORCH_ML, node())),
        (NoGang(),),
    ),
    # --- what trainkit writes ----------------------------------------------------------------
    Case(
        "trainer-definition-torch",
        src(TORCH, "TestTorch / multi-node multi-GPU training with complete info"),
        on_volcano(
            TrainJob(name="ft", runtime="torch", nodes=4, command=["torchrun", "train.py"]),
            TORCH_RT,
        ),
        (
            Pods({"node": 4}),
            Env("node", 0, pet("ft-r1", 4, "auto")),
            Env("node", 3, {"PET_NODE_RANK": INDEX}),
            Port("node", 29500),
            World("auto", 16),
            Gang("ft-r1", 4, "q", {"cpu": "32", "memory": "128Gi", "nvidia.com/gpu": "16"}),
        ),
    ),
    Case(
        "trainer-definition-procs",
        src(TORCH, "TestTorch / explicitly set nproc_per_node should be preserved"),
        on_volcano(
            TrainJob(
                name="ft", runtime="torch", nodes=2, procs_per_node=2, command=["torchrun", "t.py"]
            ),
            TORCH_RT,
        ),
        (Env("node", 0, pet("ft-r1", 2, "2")), World("2", 4)),
    ),
    Case(
        "trainer-definition-priority",
        src(VOLCANO, "TestVolcano / PodGroup exists but trainjob suspended"),
        on_volcano(
            TrainJob(name="ft", runtime="torch", command=["torchrun", "t.py"]),
            ClusterTrainingRuntime(
                name="torch",
                image=IMAGE,
                nodes=2,
                priority_class="high",
                resources=Resources(cpu=1, memory="4Gi", gpu=1),
            ),
            priority_classes=["high"],
        ),
        (Gang("ft-r1", 2, "q", priority_class="high"),),
    ),
    Case(
        "trainer-definition-reserved-pet",
        src(TORCH, "TestValidate / reserved environment variable present"),
        on_volcano(
            lambda: TrainJob(
                name="ft",
                runtime="torch",
                command=["torchrun", "t.py"],
                env={"PET_NNODES": "2"},
            ),
            TORCH_RT,
        ),
        (Refused("PET_NNODES may not be set"),),
        kind=KIND,
    ),
    # --- the conditions the TrainJob controller reports, as the health check reads them ------
    *[
        Case(
            f"trainer-conditions-{label}",
            src(CONTROLLER, f"TrainJob controller / {it}"),
            None,
            (Health(HEALTH, {"conditions": conditions}, health, message),),
            kind=KIND,
        )
        for label, it, conditions, health, message in (
            (
                "suspended",
                "Should succeeded to reconcile TrainJob conditions with Complete condition",
                [{"type": "Suspended", "status": "True", "reason": "Suspended"}],
                "Suspended",
                None,
            ),
            (
                "resumed",
                "Should succeeded to reconcile TrainJob conditions with Complete condition",
                # A resumed TrainJob keeps Suspended, False: it runs.
                [{"type": "Suspended", "status": "False", "reason": "Resumed"}],
                "Progressing",
                None,
            ),
            (
                "complete",
                "Should succeeded to reconcile TrainJob conditions with Complete condition",
                [
                    {"type": "Suspended", "status": "False", "reason": "Resumed"},
                    {"type": "Complete", "status": "True", "reason": "AllJobsCompleted"},
                ],
                "Healthy",
                "AllJobsCompleted",
            ),
            (
                "failed",
                "Should succeeded to reconcile TrainJob conditions with Failed condition",
                [
                    {"type": "Suspended", "status": "False", "reason": "Resumed"},
                    {"type": "Failed", "status": "True", "reason": "FailedJobs"},
                ],
                "Degraded",
                "FailedJobs",
            ),
        )
    ],
]
