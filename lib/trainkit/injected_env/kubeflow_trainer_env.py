"""What Kubeflow Trainer v2.3 injects into a TrainJob's containers (render/kubeflow_trainer.py)."""

from __future__ import annotations

from .reserved_env import ReservedEnv

__all__ = [
    "TRAINER_FRAMEWORK_ENV",
    "TRAINER_MASTER_PORT",
    "TRAINJOB",
    "TRAINJOB_RESERVED_ENV",
    "trainer_framework_env",
    "trainjob_env",
]

# Kubeflow Trainer v2.3 torch plugin: port 29500 on container "node" of the
# replicated job "node"; the webhook rejects these names in spec.trainer.env.
TRAINER_MASTER_PORT = 29500

TRAINJOB_RESERVED_ENV: dict[str, str] = {
    "PET_NNODES": "Kubeflow Trainer's torch plugin sets it from nodes",
    "PET_NPROC_PER_NODE": "Kubeflow Trainer's torch plugin sets it from procs_per_node",
    "PET_NODE_RANK": "Kubeflow Trainer's torch plugin sets it to the pod's completion index",
    "PET_MASTER_ADDR": "Kubeflow Trainer's torch plugin sets it to the first node's address",
    "PET_MASTER_PORT": "Kubeflow Trainer's torch plugin sets it to 29500",
    "MASTER_ADDR": "torchrun sets it for every process it starts",
    "MASTER_PORT": "torchrun sets it for every process it starts",
    "WORLD_SIZE": "torchrun sets it to nodes × procs_per_node",
    "RANK": "torchrun sets it for every process it starts",
    "LOCAL_RANK": "torchrun sets it for every process it starts",
    "LOCAL_WORLD_SIZE": "torchrun sets it for every process it starts",
    "GROUP_RANK": "torchrun sets it for every process it starts",
}


# Kubeflow Trainer v2.3.0 plugins/jax/jax.go and plugins/xgboost/xgboost.go EnforceMLPolicy:
# on container "node" of the trainer job, when spec.trainer is set; the XGBoost names are
# refused by its webhook (pkg/constants/constants.go XGBoostReservedEnvNames), the JAX ones
# would be overwritten (apply.UpsertEnvVars).
_TRAINER_JAX = "Kubeflow Trainer's JAX plugin sets it on a jax runtime's nodes"
_TRAINER_XGB = "Kubeflow Trainer's XGBoost plugin sets it on an xgboost runtime's nodes"
_TRAINER_FLUX = "Kubeflow Trainer's Flux plugin reads it on a flux runtime"
TRAINER_FRAMEWORK_ENV: dict[str, str] = {
    "JAX_NUM_PROCESSES": f"{_TRAINER_JAX} to the number of nodes",
    "JAX_PROCESS_ID": f"{_TRAINER_JAX} to the pod's completion index",
    "JAX_COORDINATOR_ADDRESS": f"{_TRAINER_JAX} to the first node's address",
    "DMLC_TRACKER_URI": f"{_TRAINER_XGB} to the first node's address",
    "DMLC_TRACKER_PORT": f"{_TRAINER_XGB} to 29500",
    "DMLC_TASK_ID": f"{_TRAINER_XGB} to the pod's completion index",
    "DMLC_NUM_WORKER": f"{_TRAINER_XGB} to nodes × GPUs per node (or nodes)",
    # plugins/flux/flux.go brokerSettingsFromEnvironment: read from the runtime's container
    # "node", then the TrainJob's env (an env_ref would read as the empty string there).
    "FLUX_VIEW_IMAGE": f"{_TRAINER_FLUX} as the flux-installer image; set "
    "flux_view_image= on the TrainJob, or RuntimeFlux(view_image=...) on the runtime",
    "FLUX_NETWORK_DEVICE": f"{_TRAINER_FLUX} as the brokers' network device; set "
    "RuntimeFlux(network_device=...) on the runtime",
    "FLUX_QUEUE_POLICY": f"{_TRAINER_FLUX} as the Flux scheduler's queue policy (fcfs)",
}


TRAINJOB = ReservedEnv(
    kinds=("TrainJob",),
    names=TRAINJOB_RESERVED_ENV | TRAINER_FRAMEWORK_ENV,
    prefixes={
        "PET_": "PET_* variables are torchrun's settings; set nodes and procs_per_node instead",
        # Trainer v2.3.0 plugins/mpi/mpi.go sets the hostfile and slots through them.
        "OMPI_": (
            "Open MPI reads OMPI_* as mpirun settings, and Trainer's MPI plugin sets the "
            "hostfile, slots and ssh options through them"
        ),
    },
)


def trainer_framework_env(
    *, framework: str, trainjob: str, nodes: int, gpus: int
) -> dict[str, str]:
    """What Trainer's jax or xgboost plugin gives container ``node`` of the first pod (the
    completion index is 0 there); empty for torch. ``gpus`` is each node's GPU count."""
    first = f"{trainjob}-node-0-0.{trainjob}"
    if framework == "jax":
        return {
            "JAX_NUM_PROCESSES": str(nodes),
            "JAX_PROCESS_ID": "0",
            "JAX_COORDINATOR_ADDRESS": f"{first}:{TRAINER_MASTER_PORT}",
        }
    if framework == "xgboost":
        return {
            "DMLC_TRACKER_URI": first,
            "DMLC_TRACKER_PORT": str(TRAINER_MASTER_PORT),
            "DMLC_TASK_ID": "0",
            "DMLC_NUM_WORKER": str(nodes * max(1, gpus)),
        }
    return {}


def trainjob_env(
    *,
    trainjob: str,
    nodes: int,
    procs_per_node: int,
    node_rank: int,
    master_addr: str | None = None,
    master_port: int = TRAINER_MASTER_PORT,
) -> dict[str, str]:
    """The env Kubeflow Trainer v2.3 gives container ``node`` of one pod of a TrainJob.

    ``trainjob`` is the object's name; the first pod's address is
    ``<trainjob>-node-0-0.<trainjob>`` (JobSet's headless service).
    """
    addr = master_addr if master_addr is not None else f"{trainjob}-node-0-0.{trainjob}"
    return {
        "PET_NNODES": str(nodes),
        "PET_NPROC_PER_NODE": str(procs_per_node),
        "PET_NODE_RANK": str(node_rank),
        "PET_MASTER_ADDR": addr,
        "PET_MASTER_PORT": str(master_port),
    }
