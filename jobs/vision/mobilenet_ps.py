"""MobileNet with parameter servers as a TFJob (seed 001's PS-Worker mode)."""

from trainkit import Resources, Role, Script, TFJob

job = TFJob(
    name="mobilenet-ps",
    run=1,  # the GPU-less roles hide the node's GPUs: a deployed TFJob is never edited in place
    image="registry.example.com/ml/tensorflow:2.18.0-gpu",
    script=Script.file("scripts/train_mobilenet_ps.py"),  # reads TF_CONFIG
    args=["--epochs", "5"],
    nodes=2,  # workers
    resources=Resources(cpu=16, memory="64Gi", gpu=2),
    ps=Role(replicas=2, resources=Resources(cpu=8, memory="32Gi")),  # no GPU
    chief=Role(resources=Resources(cpu=4, memory="16Gi")),  # coordinates; its exit ends the job
    queue="vision",
    clusters=["gpu-east"],
)
