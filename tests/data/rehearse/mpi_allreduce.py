"""An MPI rank: rank and size from Open MPI, the first host of the hostfile as the address
(what a script under mpirun finds on the cluster too), and a sum over every rank at that
address: rank 0 listens on RENDEZVOUS_PORT, the others send it their number and get the sum.
Standard library only: torch would cost each rank 2 CPU-s, and the DeepSpeed example runs
torch's collectives under mpirun already."""

import os
import socket
import time

rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
world = int(os.environ["OMPI_COMM_WORLD_SIZE"])
with open(os.environ["OMPI_MCA_orte_default_hostfile"], encoding="utf-8") as f:  # noqa: SIM112
    first_host = f.read().split()[0]
address = (first_host, int(os.environ["RENDEZVOUS_PORT"]))
if rank == 0:
    with socket.create_server(address) as server:
        peers = [server.accept()[0] for _ in range(world - 1)]
        total = 1 + sum(int(peer.makefile().readline()) for peer in peers)
        for peer in peers:
            with peer:
                peer.sendall(f"{total}\n".encode())
else:
    while True:  # until rank 0 listens; the rehearsal's timeout bounds the wait
        try:
            peer = socket.create_connection(address)
            break
        except ConnectionRefusedError:
            time.sleep(0.05)
    with peer:
        peer.sendall(f"{rank + 1}\n".encode())
        total = int(peer.makefile().readline())
env = os.environ
print(
    f"rank {rank}/{world} sum {total} forwarded {env.get('FORWARDED')} btl {env.get('OMPI_MCA_btl')} "
    f"mtl {env.get('OMPI_MCA_mtl')}",
    flush=True,
)
