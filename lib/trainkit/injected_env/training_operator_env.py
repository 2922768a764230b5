"""What Training Operator v1.9 injects into a PyTorchJob's containers (render/training_operator.py)."""

from __future__ import annotations

from .reserved_env import ReservedEnv

__all__ = [
    "PYTORCHJOB",
    "PYTORCHJOB_MASTER_PORT",
    "RESERVED_ENV",
    "RESERVED_ENV_PREFIXES",
    "pytorchjob_elastic_env",
    "pytorchjob_env",
]

# training-operator v1.9 default port (name "pytorchjob-port") on container "pytorch".
PYTORCHJOB_MASTER_PORT = 23456

RESERVED_ENV: dict[str, str] = {
    "MASTER_ADDR": "the Training Operator sets it to the Master pod's service",
    "MASTER_PORT": "the Training Operator sets it to the Master's pytorchjob-port",
    "WORLD_SIZE": "the Training Operator sets it to nodes × procs_per_node",
    "RANK": "the Training Operator sets it to the node rank",
    "PYTHONUNBUFFERED": "the Training Operator always appends PYTHONUNBUFFERED=1",
    "LOCAL_RANK": "torchrun sets it for every process it starts",
    "LOCAL_WORLD_SIZE": "torchrun sets it for every process it starts",
    "GROUP_RANK": "torchrun sets it for every process it starts",
}

RESERVED_ENV_PREFIXES: dict[str, str] = {
    "PET_": "PET_* variables are torchrun's settings, injected by the operator from "
    "nodes and procs_per_node",
}

PYTORCHJOB = ReservedEnv(kinds=("PyTorchJob",), names=RESERVED_ENV, prefixes=RESERVED_ENV_PREFIXES)


def pytorchjob_env(
    *,
    job_name: str,
    nodes: int,
    procs_per_node: int,
    node_rank: int,
    master_addr: str | None = None,
    master_port: int = PYTORCHJOB_MASTER_PORT,
) -> dict[str, str]:
    """The env Training Operator v1.9 gives the container ``pytorch`` of one node.

    Node 0 is the Master, nodes 1..n-1 are Worker i-1 (``RANK`` = node rank).
    ``master_addr`` defaults to the Master's service name ``<job>-master-0``.
    """
    addr = master_addr if master_addr is not None else f"{job_name}-master-0"
    return {
        "PYTHONUNBUFFERED": "1",
        "MASTER_ADDR": addr,
        "PET_MASTER_ADDR": addr,
        "MASTER_PORT": str(master_port),
        "PET_MASTER_PORT": str(master_port),
        "WORLD_SIZE": str(nodes * procs_per_node),
        "RANK": str(node_rank),
        "PET_NODE_RANK": str(node_rank),
        "PET_NPROC_PER_NODE": str(procs_per_node),
        "PET_NNODES": str(nodes),
    }


def pytorchjob_elastic_env(
    *,
    job_name: str,
    min_nodes: int,
    max_nodes: int,
    max_restarts: int | None,
    procs_per_node: str | None,
    port: int = PYTORCHJOB_MASTER_PORT,
    host: str | None = None,
    rdzv_id: str | None = None,
    rdzv_conf: list[tuple[str, str]] | None = None,
    standalone: bool = False,
    backend: str = "c10d",
) -> dict[str, str]:
    """The env Training Operator v1.9 gives every Worker of an elastic PyTorchJob.

    With no Master there is no MASTER_ADDR, RANK or WORLD_SIZE: torchrun takes its settings
    from PET_* and the rendezvous assigns ranks (pkg/controller.v1/pytorch/envvar.go setPodEnv;
    pkg/controller.v1/pytorch/elastic.go: the endpoint is ``rdzvHost`` else the first Worker's
    Service, at ``rdzvPort`` else its pytorchjob-port; PET_NNODES is ``min:max``).
    """
    env = {"PYTHONUNBUFFERED": "1"}
    if procs_per_node is not None:
        env["PET_NPROC_PER_NODE"] = procs_per_node
    env.update(
        {
            "PET_RDZV_ENDPOINT": f"{host or f'{job_name}-worker-0'}:{port}",
            "PET_RDZV_BACKEND": backend,
            "PET_NNODES": f"{min_nodes}:{max_nodes}",
        }
    )
    if max_restarts is not None:
        env["PET_MAX_RESTARTS"] = str(max_restarts)
    if rdzv_id is not None:
        env["PET_RDZV_ID"] = rdzv_id
    if rdzv_conf:
        env["PET_RDZV_CONF"] = ",".join(f"{k}={v}" for k, v in rdzv_conf)
    if standalone:
        env["PET_STANDALONE"] = ""
    return env
