"""Fabrics the platform built, as network profiles teams are granted (Team.network_profiles)."""

from trainkit import HostDevice, NetworkProfile

# InfiniBand as a second pod interface: Multus attaches net1 from the NetworkAttachmentDefinition
# "ib-sriov" the platform creates in each team's namespace; the HCAs' verbs devices are mounted
# from the node (the a800 nodes' container runtime allows them). NCCL uses the new interface.
ib_multus = NetworkProfile(
    name="ib-multus",
    capabilities=["IPC_LOCK"],  # to pin memory for the HCAs
    networks=["ib-sriov@net1"],
    devices=[HostDevice(path="/dev/infiniband", directory=True)],
    env={"NCCL_IB_DISABLE": "0", "NCCL_SOCKET_IFNAME": "net1"},
    clusters=["a800-north"],
)

# The same HCAs allocated through Dynamic Resource Allocation instead: each pod gets its own
# ResourceClaim from the "rdma-nics" ResourceClaimTemplate the platform creates in the team's
# namespace (its DRA driver picks NICs next to the pod's GPUs and attaches them).
rdma_dra = NetworkProfile(
    name="rdma-dra",
    capabilities=["IPC_LOCK"],  # to pin memory for the NICs
    claims={"nics": "rdma-nics"},
    env={"NCCL_IB_DISABLE": "0"},
    clusters=["a800-north"],
)
