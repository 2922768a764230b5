"""ResNet, elastic: starts on 2 nodes, an autoscaler grows it to 4 while the Workers' CPUs (the
data loaders) are busy, and it trains on while at least 1 runs (gpu-east, Volcano)."""

from trainkit import Elastic, PyTorchJob, ResourceMetric, Resources, Script

job = PyTorchJob(
    name="resnet50-elastic",
    image="registry.example.com/ml/pytorch:2.5.1-cuda12.4",
    script=Script.file("scripts/train_resnet.py"),
    args=["--epochs", "10"],
    nodes=2,  # Workers at start; quota and caps count max_nodes
    elastic=Elastic(
        min_nodes=1,
        max_nodes=4,
        max_restarts=20,  # each scaling step restarts the worker group once
        metrics=[ResourceMetric(resource="cpu", utilization=80)],
    ),
    resources=Resources(cpu=8, memory="64Gi", gpu=2),
    shm_size="8Gi",
    queue="vision",
    clusters=["gpu-east"],
    # On the PyTorchJob itself (what lists and bills jobs), not on its pods.
    labels={"example.com/cost-center": "vision"},
    annotations={"example.com/owner": "vision-ml@example.com"},
)
