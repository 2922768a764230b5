"""An evaluation run on the team's long-lived Ray cluster eval-pool (a RayJob with
``ray_cluster``: KubeRay's clusterSelector). The code is in the cluster's image; the job adds
no pods but its submitter, and on Kueue it is not queued: the RayCluster holds the quota."""

from trainkit import RayJob, RuntimeEnv

job = RayJob(
    name="eval-bleu",
    ray_cluster="eval-pool",
    image="registry.example.com/ml/ray:2.60.0-py311-cu124",  # the submitter's (ray job submit)
    command=["python", "-m", "evals.bleu", "--split", "test"],
    entrypoint_resources={"eval_slot": 1},  # the driver takes a slot on a GPU worker
    runtime_env=RuntimeEnv(env_vars={"TOKENIZERS_PARALLELISM": "false"}),
    # Not gpu-east: KubeRay with Volcano refuses a RayJob on an existing cluster.
    clusters=["h100-south"],
)
