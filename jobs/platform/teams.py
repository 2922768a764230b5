"""Teams, their queues, and where they may run."""

from trainkit import Capacity, Queue, Team

vision_queue = Queue(
    name="vision",
    weight=2,
    capability=Capacity(cpu=256, memory="2Ti", gpu=32),
    clusters=["gpu-east", "rocm-west"],
)

llm_queue = Queue(
    name="llm",
    weight=4,
    capability=Capacity(cpu=768, memory="6Ti", gpu=96),
    clusters=["gpu-east", "a800-north"],
)

vision = Team(name="vision", queues=["vision"], clusters=["gpu-east", "rocm-west"])

llm = Team(
    name="llm",
    namespace="llm-training",
    queues=["llm"],
    clusters=["gpu-east", "a800-north", "h100-south"],
    max_gpus=96,  # all the team's jobs on one cluster together
    # rdma: IPC_LOCK and rdma/hca for NCCL over InfiniBand; ib-multus: IB as a Multus interface;
    # rdma-dra: the HCAs as Dynamic Resource Allocation claims
    network_profiles=["rdma", "ib-multus", "rdma-dra"],
    workload_priority_classes=["deadline"],  # on h100-south (Kueue): jobs may jump the queue
    # A Ray head's dashboard on an internal load balancer only (it runs any job sent to it)
    ray_head_service_types=["LoadBalancer"],
    ray_head_service_annotations={
        "service.beta.kubernetes.io/aws-load-balancer-scheme": ["internal"],
    },
)
