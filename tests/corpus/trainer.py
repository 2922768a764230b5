"""Kubeflow Trainer's runtimes and examples (kubeflow/trainer at v2.3.0): the
ClusterTrainingRuntimes it installs (``manifests/base/runtimes/``) and the TrainJobs of
``examples/yaml/``."""

from __future__ import annotations

from typing import Literal

from trainkit import (
    ClusterTrainingRuntime,
    Initializer,
    Policy,
    Resources,
    RuntimeFlux,
    RuntimeInitializers,
    RuntimeMPI,
    Toleration,
    TrainJob,
)

from . import Case, Expected, Pod, Source, pod

__all__ = ["CASES"]


def src(path: str) -> Source:
    return Source("kubeflow/trainer", "v2.3.0", "658725bdae5c7e3a0854d93ac6ff492e109a22ab", path)


TORCH = "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime"
TRAINER = {"cluster": {"operators": ["trainer"]}}
PROGRAM = "import os\nprint(os.environ['RANK'])\n"  # the examples' inline programs, shortened

STEP = {"metadata.labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}}
REF = {"apiGroup": "trainer.kubeflow.org", "kind": "ClusterTrainingRuntime"}


def mpi_runtime(
    name: str, image: str, framework: Literal["deepspeed", "mlx"]
) -> ClusterTrainingRuntime:
    """Trainer's MPI runtimes: the launcher is a node, the image's user mpiuser (1000) runs
    sshd on 2222 from its own config."""
    return ClusterTrainingRuntime(
        name=name,
        image=image,
        framework=framework,
        mpi=RuntimeMPI(
            procs_per_node=1,
            ssh_dir="/home/mpiuser/.ssh",
            launcher_as_node=True,
            sshd=["/usr/sbin/sshd", "-De", "-f", "/home/mpiuser/.sshd_config"],
            ssh_port=2222,
            probe_delay=5,
        ),
        run_as_user=1000,
        fs_group=1000,
    )


def mpi_expected(name: str, image: str, framework: str) -> Expected:
    user = {"securityContext": {"runAsUser": 1000}}
    group = {"securityContext": {"fsGroup": 1000}}
    probe = {"readinessProbe": {"tcpSocket": {"port": 2222}, "initialDelaySeconds": 5}}
    return Expected(
        "ClusterTrainingRuntime",
        name,
        {
            "node": pod(
                1,
                image,
                ["/usr/sbin/sshd"],
                ["-De", "-f", "/home/mpiuser/.sshd_config"],
                container=user | probe,
                pod=group,
            ),
            "launcher": pod(1, image, container=user, pod=group),
        },
        spec={
            "mlPolicy": {
                "numNodes": 1,
                "mpi": {
                    "numProcPerNode": 1,
                    "mpiImplementation": "OpenMPI",
                    "sshAuthMountPath": "/home/mpiuser/.ssh",
                    "runLauncherAsNode": True,
                },
            },
            "template": {
                "network": {"publishNotReadyAddresses": True},
                "successPolicy": {"operator": "All", "targetReplicatedJobs": ["launcher"]},
                "replicatedJobs": [
                    {},
                    {"dependsOn": [{"name": "node", "status": "Ready"}], **STEP},
                ],
            },
        },
        labels={"trainer.kubeflow.org/framework": framework},
    )


def simple_runtime(name: str, image: str, framework: str, **more: object) -> Case:
    """The one-replicated-Job runtimes of ``manifests/base/runtimes/``."""
    return Case(
        id=f"trainer-runtime-{name}",
        source=src(f"manifests/base/runtimes/{name.replace('-', '_')}.yaml"),
        definition=lambda: ClusterTrainingRuntime(name=name, image=image, framework=framework),
        expected=Expected(
            "ClusterTrainingRuntime",
            name,
            {"node": pod(1, image)},
            spec={
                "mlPolicy": {"numNodes": 1, framework: {}},
                "template": {"replicatedJobs": [STEP]},
            },
            labels={"trainer.kubeflow.org/framework": framework},
        ),
        **TRAINER,
        **more,
    )


def torch_volcano() -> ClusterTrainingRuntime:
    return ClusterTrainingRuntime(name="torch-distributed-volcano", image=TORCH, queue="default")


def torch_distributed() -> ClusterTrainingRuntime:
    return ClusterTrainingRuntime(name="torch-distributed", image=TORCH)


def node(replicas: int, argv: tuple[str, ...], **more: object) -> Pod:
    return Pod(replicas=replicas, image="", argv=argv, **more)


CASES = [
    Case(
        id="trainer-runtime-torch-distributed",
        source=src("manifests/base/runtimes/torch_distributed.yaml"),
        definition=torch_distributed,
        expected=Expected(
            "ClusterTrainingRuntime",
            "torch-distributed",
            {"node": pod(1, TORCH)},
            spec={"mlPolicy": {"numNodes": 1, "torch": {}}, "template": {"replicatedJobs": [STEP]}},
            labels={"trainer.kubeflow.org/framework": "torch"},
        ),
        **TRAINER,
    ),
    Case(
        id="trainer-multi-node",
        source=src("examples/yaml/01-multi-node.yaml"),
        definition=lambda: TrainJob(
            name="multi-node-example",
            runtime="torch-distributed",
            nodes=3,
            command=["torchrun", "--no-python", "python3", "-c", PROGRAM],
        ),
        expected=Expected(
            "TrainJob",
            "multi-node-example",
            {"node": node(3, ("torchrun", "--no-python", "python3", "-c", PROGRAM))},
            spec={
                "runtimeRef": {
                    "apiGroup": "trainer.kubeflow.org",
                    "kind": "ClusterTrainingRuntime",
                    "name": "torch-distributed",
                }
            },
        ),
        objects=(torch_distributed,),
        **TRAINER,
    ),
    Case(
        id="trainer-kueue",
        source=src("examples/yaml/03-kueue-integration.yaml"),
        definition=lambda: TrainJob(
            name="kueue-example",
            runtime="torch-distributed",
            nodes=3,
            image="python:3.11-slim",
            command=["python3", "-c", PROGRAM],
            queue="training-queue",
            resources=Resources(cpu=4, memory="8Gi", cpu_request=2, memory_request="4Gi"),
        ),
        expected=Expected(
            "TrainJob",
            "kueue-example",
            {
                "node": Pod(
                    replicas=3,
                    image="python:3.11-slim",
                    argv=("python3", "-c", PROGRAM),
                    requests={"cpu": "2", "memory": "4Gi"},
                    limits={"cpu": "4", "memory": "8Gi"},
                )
            },
            spec={
                "runtimeRef": {
                    "apiGroup": "trainer.kubeflow.org",
                    "kind": "ClusterTrainingRuntime",
                    "name": "torch-distributed",
                }
            },
            queue=("kueue", "training-queue"),
        ),
        objects=(torch_distributed, lambda: Policy(burstable=True)),
        **TRAINER,
    ),
    Case(
        id="trainer-runtime-deepspeed-distributed",
        source=src("manifests/base/runtimes/deepspeed_distributed.yaml"),
        definition=lambda: mpi_runtime(
            "deepspeed-distributed", "ghcr.io/kubeflow/trainer/deepspeed-runtime", "deepspeed"
        ),
        expected=mpi_expected(
            "deepspeed-distributed", "ghcr.io/kubeflow/trainer/deepspeed-runtime", "deepspeed"
        ),
        **TRAINER,
    ),
    Case(
        id="trainer-runtime-mlx-distributed",
        source=src("manifests/base/runtimes/mlx_distributed.yaml"),
        definition=lambda: mpi_runtime(
            "mlx-distributed", "ghcr.io/kubeflow/trainer/mlx-runtime", "mlx"
        ),
        expected=mpi_expected("mlx-distributed", "ghcr.io/kubeflow/trainer/mlx-runtime", "mlx"),
        **TRAINER,
    ),
    simple_runtime("jax-distributed", "nvcr.io/nvidia/jax:25.10-py3", "jax"),
    simple_runtime("xgboost-distributed", "ghcr.io/kubeflow/trainer/xgboost-runtime", "xgboost"),
    Case(
        id="trainer-volcano-runtime",
        source=src("examples/yaml/04-volcano-integration.yaml"),
        definition=torch_volcano,
        expected=Expected(
            "ClusterTrainingRuntime",
            "torch-distributed-volcano",
            {"node": pod(1, TORCH)},
            spec={
                "mlPolicy": {"numNodes": 1, "torch": {}},
                "podGroupPolicy": {"volcano": {}},
                "template": {"replicatedJobs": [STEP]},
            },
            labels={"trainer.kubeflow.org/framework": "torch"},
            queue=("volcano", "default"),
        ),
        **TRAINER,
    ),
    Case(
        id="trainer-volcano-trainjob",
        source=src("examples/yaml/04-volcano-integration.yaml"),
        definition=lambda: TrainJob(
            name="volcano-example",
            runtime="torch-distributed-volcano",
            nodes=4,
            command=["python3", "-c", PROGRAM],
            resources=Resources(cpu=2, memory="4Gi", cpu_request=1, memory_request="2Gi"),
        ),
        expected=Expected(
            "TrainJob",
            "volcano-example",
            {
                "node": node(
                    4,
                    ("python3", "-c", PROGRAM),
                    requests={"cpu": "1", "memory": "2Gi"},
                    limits={"cpu": "2", "memory": "4Gi"},
                )
            },
            spec={"runtimeRef": REF | {"name": "torch-distributed-volcano"}},
            queue=("volcano", "default"),
        ),
        objects=(torch_volcano, lambda: Policy(burstable=True)),
        **TRAINER,
    ),
    Case(
        id="trainer-runtime-patches",
        source=src("examples/yaml/02-runtime-patches.yaml"),
        definition=lambda: TrainJob(
            name="runtime-patches-example",
            runtime="torch-distributed",
            nodes=2,
            command=["torchrun", "--no-python", "python3", "-c", PROGRAM],
            env={"CUSTOM_VAR": "custom-value", "PYTHONUNBUFFERED": "1"},
            resources=Resources(cpu=4, memory="8Gi", cpu_request=2, memory_request="4Gi"),
            jobset_labels={"team": "ml-platform", "cost-center": "research"},
            jobset_annotations={"prometheus.io/scrape": "true", "prometheus.io/port": "8080"},
            service_account="training-sa",
            node_selector={"node-type": "training"},
            tolerations=[
                Toleration(
                    key="training-workload", operator="Equal", value="true", effect="NoSchedule"
                )
            ],
        ),
        expected=Expected(
            "TrainJob",
            "runtime-patches-example",
            {
                "node": node(
                    2,
                    ("torchrun", "--no-python", "python3", "-c", PROGRAM),
                    requests={"cpu": "2", "memory": "4Gi"},
                    limits={"cpu": "4", "memory": "8Gi"},
                    env={"CUSTOM_VAR": "custom-value", "PYTHONUNBUFFERED": "1"},
                )
            },
            spec={
                "runtimeRef": REF | {"name": "torch-distributed"},
                "runtimePatches": [
                    {
                        "manager": "example.io/platform-team",
                        "trainingRuntimeSpec": {
                            "template": {
                                "metadata": {
                                    "labels": {"team": "ml-platform", "cost-center": "research"},
                                    "annotations": {
                                        "prometheus.io/scrape": "true",
                                        "prometheus.io/port": "8080",
                                    },
                                },
                                "spec": {
                                    "replicatedJobs": [
                                        {
                                            "name": "node",
                                            "template": {
                                                "spec": {
                                                    "template": {
                                                        "spec": {
                                                            "serviceAccountName": "training-sa",
                                                            "nodeSelector": {
                                                                "node-type": "training"
                                                            },
                                                            "tolerations": [
                                                                {
                                                                    "key": "training-workload",
                                                                    "operator": "Equal",
                                                                    "value": "true",
                                                                    "effect": "NoSchedule",
                                                                }
                                                            ],
                                                        }
                                                    }
                                                }
                                            },
                                        }
                                    ]
                                },
                            }
                        },
                    }
                ],
            },
        ),
        objects=(torch_distributed, lambda: Policy(burstable=True)),
        team={"service_accounts": ["training-sa"]},
        cluster={
            "operators": ["trainer"],
            "tolerations": [
                Toleration(
                    key="training-workload", operator="Equal", value="true", effect="NoSchedule"
                )
            ],
        },
    ),
    Case(
        id="trainer-flux-runtime",
        source=src("examples/flux/flux-runtime.yaml"),
        definition=lambda: ClusterTrainingRuntime(
            name="flux-distributed",
            image="ubuntu:jammy",
            flux=RuntimeFlux(),  # the view image: each TrainJob's, else Trainer's default
            webhook_validation=False,
        ),
        expected=Expected(
            "ClusterTrainingRuntime",
            "flux-distributed",
            {"node": pod(1, "ubuntu:jammy")},
            spec={
                "mlPolicy": {"numNodes": 1, "flux": {}},
                "template": {"replicatedJobs": [STEP]},
            },
            labels={
                "trainer.kubeflow.org/framework": "flux",
                "trainer.kubeflow.org/webhook-validation": "disabled",
            },
        ),
        **TRAINER,
    ),
    Case(
        id="trainer-runtime-torchtune-llama3-2-1b",
        source=src("manifests/base/runtimes/torchtune/llama3_2/llama3_2_1B.yaml"),
        definition=lambda: ClusterTrainingRuntime(
            name="torchtune-llama3.2-1b",
            image="ghcr.io/kubeflow/trainer/torchtune-trainer",
            framework="torchtune",
            resources=Resources(cpu=8, memory="64Gi", gpu=2),
            command=[
                "tune",
                "run",
                "--rdzv_endpoint=localhost:29500",
                "full_finetune_distributed",
                "--config",
                "llama3_2/1B_full",
                "dataset=torchtune.datasets.instruct_dataset",
                "dataset.source=parquet",
                "dataset.data_dir=/workspace/dataset/data",
                "output_dir=/workspace/output",
                "tokenizer.path=/workspace/model/original/tokenizer.model",
                "checkpointer.checkpoint_dir=/workspace/model",
            ],
            initializers=RuntimeInitializers(
                dataset=Initializer(
                    image="ghcr.io/kubeflow/trainer/dataset-initializer",
                    storage_uri="hf://tatsu-lab/alpaca",
                ),
                model=Initializer(
                    image="ghcr.io/kubeflow/trainer/model-initializer",
                    storage_uri="hf://meta-llama/Llama-3.2-1B-Instruct",
                ),
                size="20Gi",
                access_mode="ReadWriteOnce",
                mount_workspace=True,  # output_dir=/workspace/output is on the volume
            ),
        ),
        expected=Expected(
            "ClusterTrainingRuntime",
            "torchtune-llama3.2-1b",
            {
                "dataset-initializer": pod(
                    1,
                    "ghcr.io/kubeflow/trainer/dataset-initializer",
                    env={"STORAGE_URI": "hf://tatsu-lab/alpaca"},
                    mounts={"/workspace": "initializer"},
                ),
                "model-initializer": pod(
                    1,
                    "ghcr.io/kubeflow/trainer/model-initializer",
                    env={"STORAGE_URI": "hf://meta-llama/Llama-3.2-1B-Instruct"},
                    mounts={"/workspace": "initializer"},
                ),
                "node": pod(
                    1,
                    "ghcr.io/kubeflow/trainer/torchtune-trainer",
                    [
                        "tune",
                        "run",
                        "--rdzv_endpoint=localhost:29500",
                        "full_finetune_distributed",
                        "--config",
                        "llama3_2/1B_full",
                        "dataset=torchtune.datasets.instruct_dataset",
                        "dataset.source=parquet",
                        "dataset.data_dir=/workspace/dataset/data",
                        "output_dir=/workspace/output",
                        "tokenizer.path=/workspace/model/original/tokenizer.model",
                        "checkpointer.checkpoint_dir=/workspace/model",
                    ],
                    limits={"nvidia.com/gpu": 2},
                    mounts={"/workspace": "initializer"},
                ),
            },
            spec={
                "mlPolicy": {"numNodes": 1, "torch": {}},
                "template": {
                    "volumeClaimPolicies": [
                        {
                            "templates": [
                                {
                                    "metadata": {"name": "initializer"},
                                    "spec": {
                                        "accessModes": ["ReadWriteOnce"],
                                        "resources": {"requests": {"storage": "20Gi"}},
                                    },
                                }
                            ]
                        }
                    ],
                    "replicatedJobs": [
                        {"metadata.labels": {"trainer.kubeflow.org/trainjob-ancestor-step": s}}
                        for s in ("dataset-initializer", "model-initializer")
                    ]
                    + [
                        {
                            "dependsOn": [
                                {"name": "dataset-initializer", "status": "Complete"},
                                {"name": "model-initializer", "status": "Complete"},
                            ],
                            **STEP,
                        }
                    ],
                },
            },
            labels={"trainer.kubeflow.org/framework": "torchtune"},
        ),
        **TRAINER,
    ),
]
