"""The ResNet DDP script as a Kubeflow Trainer TrainJob (seed 003), on the NVIDIA and AMD clusters."""

from trainkit import Script, TrainJob

job = TrainJob(
    name="resnet50",
    run=1,  # the object is resnet50-r1; raise run to start an edited job
    runtime="torch-2-5",
    script=Script.file("scripts/train_resnet.py"),
    args=["--epochs", "10"],
    nodes=2,  # 2 nodes of 8 GPUs (the runtime's resources) = 16 ranks
    queue="vision",
    clusters=["gpu-east", "rocm-west"],
)
