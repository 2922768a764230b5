"""FSDP fine-tune on the A800 cluster through Volcano (seed 002)."""

from trainkit import PyTorchJob, Resources, Script, Toleration, Volume

job = PyTorchJob(
    name="llama-finetune-fsdp",
    run=1,  # run 0's env moved into the rdma profile: a PyTorchJob is never edited in place
    image="registry.example.com/ml/pytorch-training:2.5.1-cuda12.4",
    script=Script.file("scripts/finetune_fsdp.py"),
    args=["--epochs", "3"],
    env={
        "TRAIN_DATA_PATH": "/mnt/data",
        "OUTPUT_PATH": "/mnt/output",
        "NCCL_DEBUG": "INFO",
        "CUDA_DEVICE_MAX_CONNECTIONS": "1",
    },
    nodes=4,
    resources=Resources(cpu=64, memory="512Gi", gpu=8),  # 8 processes per node by default
    shm_size="20Gi",
    volumes=[
        Volume(claim="llm-datasets", path="/mnt/data", read_only=True),
        Volume(claim="llm-checkpoints", path="/mnt/output"),
    ],
    tolerations=[Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule")],
    restart_policy="ExitCode",
    backoff_limit=3,
    deadline_seconds=7 * 24 * 3600,
    queue="llm",
    clusters=["a800-north"],
    network="rdma",  # IPC_LOCK, rdma/hca, NCCL over IB (NetworkProfile in jobs/platform/policy.py)
)
