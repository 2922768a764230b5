"""The JAX language model as a TrainJob on the platform's jax runtime (Kubeflow Trainer)."""

from trainkit import Script, TrainJob

job = TrainJob(
    name="bigram-jax-tj",
    run=1,
    runtime="jax-0-10",  # 2 nodes of 8 GPUs, one JAX process each
    script=Script.file("scripts/train_jax_lm.py"),  # python3, reads JAX_COORDINATOR_ADDRESS
    args=["--steps", "2000", "--batch-per-process", "4096"],
    clusters=["gpu-east"],
)
