"""A Ray cluster that stays up for the team's evaluation jobs (KubeRay RayCluster): a head and a
GPU worker group. RayJobs naming it (``ray_cluster="eval-pool"``) submit their entrypoints to it;
on h100-south Kueue queues the cluster itself, against the llm ClusterQueue."""

from trainkit import RayCluster, RayStart, Resources, WorkerGroup

cluster = RayCluster(
    name="eval-pool",
    image="registry.example.com/ml/ray:2.60.0-py311-cu124",
    head=Resources(cpu=8, memory="32Gi"),  # Ray's GCS and the submitted entrypoints, no GPUs
    head_ray_start=RayStart(cpus=0),  # no Ray task or actor beside the GCS
    workers=[
        WorkerGroup(
            name="gpu",
            nodes=2,
            resources=Resources(cpu=16, memory="128Gi", gpu=4),
            ray_start=RayStart(resources={"eval_slot": 2}),  # two evaluations per worker
        ),
    ],
    queue="llm",  # a Volcano Queue on gpu-east, a Kueue ClusterQueue on h100-south
    clusters=["gpu-east", "h100-south"],
)
