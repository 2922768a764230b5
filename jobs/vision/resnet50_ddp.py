"""ResNet DDP on two nodes of eight GPUs each (seed 000), on the NVIDIA and the AMD cluster."""

from trainkit import PyTorchJob, Resources, Script

job = PyTorchJob(
    name="resnet50-ddp",
    image={  # one build per accelerator stack the clusters declare
        "cuda": "registry.example.com/ml/pytorch:2.5.1-cuda12.4",
        "rocm": "registry.example.com/ml/pytorch:2.5.1-rocm6.2",
    },
    script=Script.file("scripts/train_resnet.py"),  # shipped in a ConfigMap at /workspace
    args=["--epochs", "10"],
    nodes=2,
    procs_per_node=8,  # Master + 1 Worker, 16 ranks
    resources=Resources(cpu=32, memory="256Gi", gpu=8),
    shm_size="16Gi",
    queue="vision",
    clusters=["gpu-east", "rocm-west"],
)
