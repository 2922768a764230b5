"""ResNet, elastic: starts on 2 nodes, an autoscaler grows it to 4 while the Workers' CPUs (the
data loaders) are busy or shards wait in the queue that feeds it, and it trains on while at
least 1 runs (gpu-east, Volcano)."""

from trainkit import Elastic, ExternalMetric, PyTorchJob, ResourceMetric, Resources, Script

job = PyTorchJob(
    name="resnet50-elastic",
    run=1,  # a new run: the autoscaler's metrics and the rendezvous settings changed
    image="registry.example.com/ml/pytorch:2.5.1-cuda12.4",
    script=Script.file("scripts/train_resnet.py"),
    args=["--epochs", "10"],
    nodes=2,  # Workers at start; quota and caps count max_nodes
    elastic=Elastic(
        min_nodes=1,
        max_nodes=4,
        max_restarts=20,  # each scaling step restarts the worker group once
        metrics=[
            ResourceMetric(resource="cpu", utilization=80),
            # served by the cluster's external metrics adapter: 50 waiting shards per Worker
            ExternalMetric(
                metric="pubsub_undelivered_messages",
                selector={"subscription": "vision-shards"},
                average="50",
            ),
        ],
        rdzv_conf={"join_timeout": "900"},  # a new Worker may pull its image for 15 minutes
    ),
    resources=Resources(cpu=8, memory="64Gi", gpu=2),
    shm_size="8Gi",
    queue="vision",
    clusters=["gpu-east"],
    # On the PyTorchJob itself (what lists and bills jobs), not on its pods.
    labels={"example.com/cost-center": "vision"},
    annotations={"example.com/owner": "vision-ml@example.com"},
)
