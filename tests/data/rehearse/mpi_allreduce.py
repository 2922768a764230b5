"""An MPI rank: rank and size from Open MPI, the first host of the hostfile as the address
(what a script under mpirun finds on the cluster too), an all_reduce over gloo."""

import os

import torch
import torch.distributed as dist

rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
world = int(os.environ["OMPI_COMM_WORLD_SIZE"])
with open(os.environ["OMPI_MCA_orte_default_hostfile"], encoding="utf-8") as f:  # noqa: SIM112
    first_host = f.read().split()[0]
dist.init_process_group(
    "gloo",
    init_method=f"tcp://{first_host}:{os.environ['RENDEZVOUS_PORT']}",
    rank=rank,
    world_size=world,
)
total = torch.tensor([float(rank + 1)])
dist.all_reduce(total)
print(
    f"rank {rank}/{world} sum {total.item():g} forwarded {os.environ.get('FORWARDED')}", flush=True
)
dist.destroy_process_group()
