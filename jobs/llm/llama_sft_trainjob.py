"""The FSDP fine-tune as a TrainJob on the team's own runtime (seed 002 + seed 003)."""

from trainkit import Script, TrainJob, Volume

job = TrainJob(
    name="llama-sft",
    runtime="fsdp-a800",  # the llm team's TrainingRuntime: 4 nodes of 8 A800 GPUs
    script=Script.file("scripts/finetune_fsdp.py"),
    args=["--epochs", "3"],
    env={"TRAIN_DATA_PATH": "/mnt/data", "OUTPUT_PATH": "/mnt/output"},
    volumes=[
        Volume(claim="llm-datasets", path="/mnt/data", read_only=True),
        Volume(claim="llm-checkpoints", path="/mnt/output"),
    ],
    deadline_seconds=7 * 24 * 3600,
    clusters=["a800-north"],
)
