"""A JAX language model trained data-parallel on two nodes of eight GPUs."""

from trainkit import JAXJob, Resources, Script

job = JAXJob(
    name="bigram-jax",
    image="registry.example.com/ml/jax:0.10.2-cuda12",
    script=Script.file("scripts/train_jax_lm.py"),  # jax.distributed.initialize()
    args=["--steps", "2000", "--batch-per-process", "4096"],
    nodes=2,  # one JAX process per pod, each driving its pod's 8 GPUs
    resources=Resources(cpu=32, memory="256Gi", gpu=8),
    shm_size="16Gi",
    queue="llm",
    clusters=["gpu-east"],
)
