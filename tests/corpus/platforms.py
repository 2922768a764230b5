"""Manifests from platform teams' public repositories: NVIDIA's KAI Scheduler examples and
AWS's distributed-training samples (SageMaker HyperPod on EKS with Kueue), at the commits
fetched for this corpus."""

from __future__ import annotations

from trainkit import (
    Elastic,
    PodAffinity,
    Policy,
    PyTorchJob,
    RayJob,
    ResourceMetric,
    Resources,
    WorkerGroup,
    WorkloadPriorityClass,
)

from . import Case, Expected, Source, pod

__all__ = ["CASES"]


def kai(path: str) -> Source:
    return Source("NVIDIA/KAI-Scheduler", "main", "72de64fc8eca10fa8cca26a20156178f3edbe092", path)


def aws(path: str) -> Source:
    return Source(
        "aws-samples/awsome-distributed-training",
        "main",
        "7217859f67bc693c52ff175ccc6082c41dbd7a1b",
        path,
    )


KAI = "the KAI scheduler (schedulerName kai-scheduler, queue label kai.scheduler/queue)"
IMAGENET = "kubeflow/pytorch-elastic-example-imagenet:latest"
IMAGENET_CMD = [
    "python",
    "-m",
    "torch.distributed.run",
    "/workspace/examples/imagenet.py",
    "--arch=resnet18",
    "--epochs=1",
    "--batch-size=32",
    "--workers=0",
    "/workspace/data/tiny-imagenet-200",
]
HPA_CPU = [
    {
        "type": "Resource",
        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
    }
]
CPU_80 = ResourceMetric(resource="cpu", utilization=80)
RAY = "rayproject/ray:2.46.0"
TEAM_A = "hyperpod-ns-team-a-localqueue"
AWS_CMD = (
    "wget https://raw.githubusercontent.com/pytorch/elastic/master/examples/imagenet/main.py "
    "-O /workspace/examples/imagenet.py; /usr/local/bin/torchrun --nproc_per_node=1 --nnodes=3 "
    "/workspace/examples/imagenet.py --arch=resnet18 --epochs=50 --batch-size=32 --workers=0 "
    "--checkpoint-file=/workspace/checkpoint.pth.tar /workspace/data/tiny-imagenet-200"
)

CASES = [
    Case(
        id="kai-pytorch-elastic",
        source=kai("docs/elastic/pytorch-elastic.yaml"),
        definition=lambda: PyTorchJob(
            name="elastic-example-imagenet",
            image=IMAGENET,
            image_pull_policy="IfNotPresent",
            command=IMAGENET_CMD,
            env={"LOGLEVEL": "DEBUG"},
            nodes=2,
            resources=Resources(cpu=4, memory="16Gi"),
            elastic=Elastic(min_nodes=1, max_nodes=3, max_restarts=100, metrics=[CPU_80]),
        ),
        expected=Expected(
            "PyTorchJob",
            "elastic-example-imagenet",
            {
                "Worker": pod(
                    2,
                    IMAGENET,
                    IMAGENET_CMD,
                    requests={"cpu": 4},
                    env={"LOGLEVEL": "DEBUG"},
                    pull="IfNotPresent",
                    restart="OnFailure",
                )
            },
            spec={
                "elasticPolicy": {
                    "rdzvBackend": "c10d",
                    "minReplicas": 1,
                    "maxReplicas": 3,
                    "maxRestarts": 100,
                    "metrics": HPA_CPU,
                }
            },
            queue=("kai", "default-queue"),
        ),
        needs=KAI,
    ),
    Case(
        id="kai-ray-job",
        source=kai("examples/ray/ray-job.yaml"),
        definition=lambda: RayJob(
            name="rayjob-sample",
            image=RAY,
            command=["python", "/home/ray/samples/sample_code.py"],
            shutdown_after_finish=False,
            head=Resources(cpu=1, cpu_request="200m", memory="4Gi", gpu=1),
            workers=[
                WorkerGroup(
                    name="gpu-workers",
                    nodes=2,
                    resources=Resources(cpu=1, cpu_request="200m", memory="4Gi", gpu=1),
                )
            ],
        ),
        expected=Expected(
            "RayJob",
            "rayjob-sample",
            {
                "head": pod(
                    1, RAY, requests={"cpu": "200m"}, limits={"cpu": "1", "nvidia.com/gpu": "1"}
                ),
                "gpu-workers": pod(
                    2, RAY, requests={"cpu": "200m"}, limits={"cpu": "1", "nvidia.com/gpu": "1"}
                ),
            },
            spec={
                "entrypoint": ["python", "/home/ray/samples/sample_code.py"],
                "rayClusterSpec": {
                    "headGroupSpec": {"rayStartParams": {}},
                    "workerGroupSpecs": [{"rayStartParams": {}}],
                },
            },
            queue=("kai", "default-queue"),
        ),
        cluster={"operators": ["kuberay"]},
        objects=(lambda: Policy(burstable=True),),
        needs=KAI,
    ),
    Case(
        id="aws-hyperpod-imagenet-team-a",
        source=aws(
            "1.architectures/7.sagemaker-hyperpod-eks/task-governance/1-imagenet-gpu-team-a.yaml"
        ),
        definition=lambda: PyTorchJob(
            name="imagenet-gpu-team-a-1",
            image=IMAGENET,
            image_pull_policy="IfNotPresent",
            command=["bash", "-c", AWS_CMD],
            env={"LOGLEVEL": "DEBUG"},
            nodes=3,
            resources=Resources(cpu=8, memory="32Gi", gpu=1),
            elastic=Elastic(
                min_nodes=1,
                max_nodes=36,
                max_restarts=200,
                metrics=[CPU_80],
                rdzv_backend="etcd",
                rdzv_host="etcd-gpu",
                rdzv_port=2379,
            ),
            queue=TEAM_A,
            workload_priority="training-priority",
            pod_labels={
                "app": "imagenet",
                "kueue.x-k8s.io/queue-name": TEAM_A,
                "kueue.x-k8s.io/priority-class": "training-priority",
            },
            node_selector={"node.kubernetes.io/instance-type": "ml.g5.8xlarge"},
            pod_affinity=[
                PodAffinity(labels={"app": "imagenet"}, topology_key="topology.kubernetes.io/zone")
            ],
            annotations={
                "sagemaker.amazonaws.com/enable-job-auto-resume": "true",
                "sagemaker.amazonaws.com/job-max-retry-count": "2",
            },
        ),
        expected=Expected(
            "PyTorchJob",
            "imagenet-gpu-team-a-1",
            {
                "Worker": pod(
                    3,
                    IMAGENET,
                    ["bash", "-c", AWS_CMD],
                    limits={"nvidia.com/gpu": 1},
                    env={"LOGLEVEL": "DEBUG"},
                    pull="IfNotPresent",
                    restart="OnFailure",
                    pod={
                        "metadata.labels": {
                            "app": "imagenet",
                            "kueue.x-k8s.io/queue-name": TEAM_A,
                            "kueue.x-k8s.io/priority-class": "training-priority",
                        },
                        "nodeSelector": {"node.kubernetes.io/instance-type": "ml.g5.8xlarge"},
                        "affinity": {
                            "podAffinity": {
                                "requiredDuringSchedulingIgnoredDuringExecution": [
                                    {
                                        "labelSelector": {
                                            "matchExpressions": [
                                                {
                                                    "key": "app",
                                                    "operator": "In",
                                                    "values": ["imagenet"],
                                                }
                                            ]
                                        },
                                        "topologyKey": "topology.kubernetes.io/zone",
                                    }
                                ]
                            }
                        },
                    },
                )
            },
            spec={
                "elasticPolicy": {
                    "rdzvBackend": "etcd",
                    "rdzvHost": "etcd-gpu",
                    "rdzvPort": 2379,
                    "minReplicas": 1,
                    "maxReplicas": 36,
                    "maxRestarts": 200,
                    "metrics": HPA_CPU,
                }
            },
            queue=("kueue", TEAM_A),
            labels={"kueue.x-k8s.io/priority-class": "training-priority"},
            annotations={
                "sagemaker.amazonaws.com/enable-job-auto-resume": "true",
                "sagemaker.amazonaws.com/job-max-retry-count": "2",
            },
        ),
        cluster={"kueue_frameworks": ["kubeflow.org/pytorchjob"]},
        team={
            "workload_priority_classes": ["training-priority"],
            "pod_metadata_keys": ["kueue.x-k8s.io/"],
        },
        objects=(lambda: WorkloadPriorityClass(name="training-priority", value=100),),
        refused="HPA metrics on a Kueue cluster: Kueue v0.19.2 stops a running PyTorchJob whose "
        "Worker count no longer matches its Workload and queues it again, so every step of the "
        "autoscaler would end the training (jobframework/reconciler.go ensureOneWorkload)",
    ),
]
