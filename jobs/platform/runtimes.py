"""Kubeflow Trainer runtimes (seed 003): what TrainJobs start from."""

from trainkit import (
    ClusterTrainingRuntime,
    InitContainer,
    Probe,
    Resources,
    RuntimeMPI,
    TrainingRuntime,
)

# One name, two builds: a TrainJob naming "torch-2-5" gets the CUDA
# image on NVIDIA clusters and the ROCm image on the AMD cluster.
torch_cuda = ClusterTrainingRuntime(
    name="torch-2-5",
    image="registry.example.com/ml/pytorch:2.5.1-cuda12.4",
    resources=Resources(cpu=16, memory="128Gi", gpu=8),
    shm_size="16Gi",
    env={"NCCL_DEBUG": "WARN"},
    clusters=["gpu-east", "a800-north"],
)

torch_rocm = ClusterTrainingRuntime(
    name="torch-2-5",
    image="registry.example.com/ml/pytorch:2.5.1-rocm6.2",
    resources=Resources(cpu=16, memory="128Gi", gpu=8),
    shm_size="16Gi",
    env={"NCCL_DEBUG": "WARN"},  # RCCL reads the NCCL_* variables
    clusters=["rocm-west"],
)

# The LLM team's own runtime: four A800 nodes, InfiniBand for NCCL.
llm_fsdp = TrainingRuntime(
    name="fsdp-a800",
    team="llm",
    image="registry.example.com/ml/pytorch-training:2.5.1-cuda12.4",
    nodes=4,
    resources=Resources(cpu=64, memory="512Gi", gpu=8),
    shm_size="20Gi",
    env={"CUDA_DEVICE_MAX_CONNECTIONS": "1"},
    clusters=["a800-north"],
    network="rdma",  # NCCL over InfiniBand (the profile's env)
    # The training program serves its metrics on port "metrics"; a native sidecar pushes them
    # to the platform's gateway and stops with it (no GPU; counted in every job's gang).
    ports={"metrics": 9090},
    # A trainer whose metrics stop answering for five minutes is hung (a stuck collective):
    # the kubelet restarts its container in place (JobSet v0.12.0 defaults the pods'
    # restartPolicy to OnFailure, pkg/webhooks/jobset_webhook.go Default).
    liveness_probe=Probe(
        http_get="/metrics", port="metrics", initial_delay=600, period=60, failure_threshold=5
    ),
    init_containers=[
        InitContainer(
            name="metrics-push",
            image="registry.example.com/ml/prom-push:1.2",
            command=["prom-push", "--scrape", "http://localhost:9090/metrics", "--every", "30s"],
            sidecar=True,
            resources=Resources(cpu=1, memory="256Mi"),
        )
    ],
)

# DeepSpeed on the Trainer path: a launcher runs mpirun against two sshd nodes (seed 001).
# The image is built on Kubeflow's deepspeed-runtime (mpi-operator's base): user mpiuser
# (uid 1000), sshd and ssh on port 2222.
deepspeed = ClusterTrainingRuntime(
    name="deepspeed-0-19",
    image="registry.example.com/ml/deepspeed:0.19.8-cuda12.4",
    nodes=2,  # each TrainJob's default numNodes; one launcher besides
    resources=Resources(cpu=32, memory="256Gi", gpu=8),  # each node; 8 slots (one per GPU)
    shm_size="16Gi",
    mpi=RuntimeMPI(  # the launcher: 1 CPU, 2Gi, no GPU
        ssh_dir="/home/mpiuser/.ssh",
        sshd=["/usr/sbin/sshd", "-De", "-f", "/home/mpiuser/.sshd_config"],
        ssh_port=2222,
        probe_delay=5,  # sshd is checked from 5 s after a node starts, as Kubeflow's runtime
    ),
    run_as_user=1000,  # the ssh key is mounted 0640: not root, and readable through fs_group
    fs_group=1000,
    clusters=["gpu-east"],
)

# JAX on the Trainer path: one process per node, Trainer's JAX plugin sets the coordinator.
jax_runtime = ClusterTrainingRuntime(
    name="jax-0-10",
    image="registry.example.com/ml/jax:0.10.2-cuda12",
    framework="jax",
    nodes=2,
    resources=Resources(cpu=32, memory="256Gi", gpu=8),  # one process drives all 8 GPUs
    shm_size="16Gi",
    clusters=["gpu-east"],
)
