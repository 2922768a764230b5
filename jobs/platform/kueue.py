"""Kueue's quota on h100-south: what kind of nodes there are, and how much of them each queue
may use. Teams list a ClusterQueue in Team.queues and get a LocalQueue of that name."""

from trainkit import Capacity, ClusterQueue, FlavorQuota, ResourceFlavor, WorkloadPriorityClass

h100 = ResourceFlavor(
    name="h100",
    node_labels={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
    topology_name="h100-fabric",  # racks and blocks of the nodes (Cluster.kueue_topologies)
)

# The llm team's queue, here a ClusterQueue instead of a Volcano Queue. Its nominal quota is a
# quarter of the nodes; in cohort h100 it borrows what the spare queue is not using, up to
# its borrowing limit (`trainkit plan` shows what it borrows).
llm = ClusterQueue(
    name="llm",
    cohort="h100",
    fair_sharing_weight=2,  # where the platform's Kueue turns fair sharing on
    admission_checks=["h100-capacity"],  # admitted once the autoscaler has the nodes
    flavors=[
        FlavorQuota(
            flavor="h100",
            quota=Capacity(cpu=128, memory="1Ti", gpu=16),
            borrowing_limit=Capacity(cpu=256, memory="2Ti", gpu=32),
        )
    ],
)

# The rest of the nodes, which no team lists: lent to the cohort's queues while idle.
h100_spare = ClusterQueue(
    name="h100-spare",
    cohort="h100",
    flavors=[FlavorQuota(flavor="h100", quota=Capacity(cpu=384, memory="3Ti", gpu=48))],
)

# What Kueue admits first and may preempt for (the queue's preemption settings permitting);
# teams list the classes their jobs may name in Team.workload_priority_classes.
deadline = WorkloadPriorityClass(
    name="deadline", value=1000, description="a paper or release deadline: admitted first"
)
