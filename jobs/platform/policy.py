"""Policy: where images come from, how many GPUs a job may take, what the network grants."""

from trainkit import NetworkProfile, Policy

policy = Policy(
    registries=["registry.example.com/ml/"],
    max_gpus_per_job=64,
    # Where a RayJob's runtime_env pip installs from: pip's --index-url in every such RayJob.
    package_indexes=["https://pypi.example.com/simple/"],
)

# RDMA over the A800 nodes' HCAs (seed 002): the device plugin's rdma/hca and
# IPC_LOCK to pin memory for the NICs, nothing more; NCCL told to use InfiniBand.
rdma = NetworkProfile(
    name="rdma",
    capabilities=["IPC_LOCK"],
    resources={"rdma/hca": 1},
    env={"NCCL_IB_DISABLE": "0"},
    clusters=["a800-north"],
)
