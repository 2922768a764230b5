"""Kueue's quota on h100-south: what kind of nodes there are, and how much of them each queue
may use. Teams list a ClusterQueue in Team.queues and get a LocalQueue of that name."""

from trainkit import Capacity, ClusterQueue, FlavorQuota, ResourceFlavor, WorkloadPriorityClass

h100 = ResourceFlavor(name="h100", node_labels={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"})

llm = ClusterQueue(
    name="llm",  # the llm team's queue, here a ClusterQueue instead of a Volcano Queue
    flavors=[FlavorQuota(flavor="h100", quota=Capacity(cpu=512, memory="4Ti", gpu=64))],
)

# What Kueue admits first and may preempt for (the queue's preemption settings permitting);
# teams list the classes their jobs may name in Team.workload_priority_classes.
deadline = WorkloadPriorityClass(
    name="deadline", value=1000, description="a paper or release deadline: admitted first"
)
