"""The clusters Argo CD deploys to, and where Argo CD finds this repository."""

from trainkit import ArgoCD, Cluster, Toleration

argocd = ArgoCD(
    repo_url="https://git.example.com/ml/trainkit-jobs.git",
    revision="main",
    # Step 1 of moving from one Application per cluster to one per team: the old ones stay,
    # without their finalizer, until the new ones track every object (`trainkit plan`).
    retire_cluster_applications=True,
)

gpu_east = Cluster(
    name="gpu-east",
    server="https://gpu-east.k8s.example.com:6443",
    gpu_resource="nvidia.com/gpu",
    gpus_per_node=8,
    accelerator="cuda",
    # KubeRay runs here (with --batch-scheduler=volcano) for Ray jobs (seed 001).
    operators=["training-operator", "kuberay", "trainer"],
    # What jobs' node rules may name here (a label no node has would keep a job pending).
    node_labels={
        "node.example.com/pool": ["cpu", "gpu"],
        "nvidia.com/gpu.product": ["NVIDIA-A100-SXM4-80GB"],
        "topology.kubernetes.io/zone": [],
    },
)

rocm_west = Cluster(
    name="rocm-west",
    destination_name="rocm-west",  # registered in Argo CD under this name
    gpu_resource="amd.com/gpu",
    gpus_per_node=8,
    accelerator="rocm",
    # PaddleJobs here are paddle-operator's (batch.paddlepaddle.org, seed 004).
    operators=["training-operator", "paddle-operator", "trainer"],
)

# H100 nodes admitted by Kueue instead of Volcano: its quota is the ClusterQueues in kueue.py.
h100_south = Cluster(
    name="h100-south",
    server="https://h100-south.k8s.example.com:6443",
    gpu_resource="nvidia.com/gpu",
    gpus_per_node=8,
    accelerator="cuda",
    scheduler="kueue",
    operators=["kuberay", "trainer"],  # Kueue v0.19 manages RayJobs and TrainJobs by default
    # The platform installs this AdmissionCheck (controller kueue.x-k8s.io/provisioning-request,
    # with its ProvisioningRequestConfig): the cluster autoscaler brings up the nodes first.
    kueue_admission_checks=["h100-capacity"],
    # The platform's Topology of the H100 nodes, largest domain first, for topology-aware
    # scheduling (the h100 flavor names it; jobs ask for a level with kueue_topology=).
    kueue_topologies={
        "h100-fabric": [
            "cloud.example.com/topology-block",
            "cloud.example.com/topology-rack",
            "kubernetes.io/hostname",
        ]
    },
)

# NVIDIA A800 nodes whose device plugin exposes a custom resource name (seed 002).
a800_north = Cluster(
    name="a800-north",
    server="https://a800-north.k8s.example.com:6443",
    gpu_resource="baidu.com/a800_80g_cgpu",
    gpus_per_node=8,
    accelerator="cuda",
    # mpi-operator serves MPIJob v2beta1 here; the Training Operator runs without its MPI scheme.
    operators=["training-operator", "mpi-operator", "trainer"],
    # The GPU nodes are tainted so that only jobs asking for them land there.
    tolerations=[Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule")],
)
