"""Kubeflow Trainer's runtimes and examples (kubeflow/trainer at v2.3.0): the
ClusterTrainingRuntimes it installs (``manifests/base/runtimes/``) and the TrainJobs of
``examples/yaml/``."""

from __future__ import annotations

from trainkit import ClusterTrainingRuntime, Policy, Resources, TrainJob

from . import Case, Expected, Pod, Source, pod

__all__ = ["CASES"]


def src(path: str) -> Source:
    return Source("kubeflow/trainer", "v2.3.0", "658725bdae5c7e3a0854d93ac6ff492e109a22ab", path)


TORCH = "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime"
TRAINER = {"cluster": {"operators": ["trainer"]}}
PROGRAM = "import os\nprint(os.environ['RANK'])\n"  # the examples' inline programs, shortened


def torch_distributed() -> ClusterTrainingRuntime:
    return ClusterTrainingRuntime(name="torch-distributed", image=TORCH)


def node(replicas: int, argv: tuple[str, ...], **more: object) -> Pod:
    return Pod(replicas=replicas, image="", argv=argv, **more)  # type: ignore[arg-type]


CASES = [
    Case(
        id="trainer-runtime-torch-distributed",
        source=src("manifests/base/runtimes/torch_distributed.yaml"),
        definition=torch_distributed,
        expected=Expected(
            "ClusterTrainingRuntime",
            "torch-distributed",
            {"node": pod(1, TORCH)},
            spec={"mlPolicy": {"numNodes": 1, "torch": {}}, "template": {"replicatedJobs": [{}]}},
            labels={"trainer.kubeflow.org/framework": "torch"},
        ),
        **TRAINER,  # type: ignore[arg-type]
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
        **TRAINER,  # type: ignore[arg-type]
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
        needs="leaving numProcPerNode to Trainer's auto (trainkit writes the count auto gives)",
        **TRAINER,  # type: ignore[arg-type]
    ),
]
