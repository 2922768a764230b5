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
