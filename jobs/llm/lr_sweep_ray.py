"""A learning-rate sweep on a Ray cluster (seed 001's Ray mode: a head and a GPU worker group),
as a KubeRay RayJob. The script is the entrypoint; each trial is a Ray task on one GPU."""

from trainkit import RayJob, Resources, RuntimeEnv, Script, WorkerGroup

job = RayJob(
    name="lr-sweep-ray",
    run=3,  # r3: the driver leaves torch to the trials; a deployed RayJob is never edited in place
    image="registry.example.com/ml/ray:2.60.0-py311-cu124",
    script=Script.file("scripts/lr_sweep.py"),
    args=["--trials", "16", "--steps", "300"],
    head=Resources(cpu=8, memory="32Gi"),  # runs the entrypoint and Ray's GCS, no GPUs
    workers=[
        WorkerGroup(name="gpu", nodes=2, resources=Resources(cpu=32, memory="256Gi", gpu=8)),
    ],
    runtime_env=RuntimeEnv(env_vars={"TOKENIZERS_PARALLELISM": "false"}),
    queue="llm",  # a Volcano Queue on gpu-east, a Kueue ClusterQueue on h100-south
    clusters=["gpu-east", "h100-south"],
)
