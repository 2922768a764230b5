"""The DeepSpeed pre-training as a TrainJob on an MPI runtime (seed 001 on Trainer v2.3)."""

from trainkit import Script, TrainJob

job = TrainJob(
    name="llama-pretrain-ds",
    run=6,  # its mpirun changed (--hostfile): a TrainJob cannot change once created
    runtime="deepspeed-0-19",  # mpirun on the launcher, 2 nodes × 8 slots
    script=Script.file("scripts/pretrain_deepspeed.py"),
    args=["--steps", "1000", "--zero-stage", "2"],
    env={"NCCL_DEBUG": "WARN"},
    clusters=["gpu-east"],
)
