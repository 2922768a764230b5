"""What Training Operator v1.9 injects into a JAXJob's containers (render/jax.py)."""

from __future__ import annotations

from .reserved_env import ReservedEnv

__all__ = ["JAXJOB", "JAXJOB_PORT", "jaxjob_env"]

# Training Operator v1.9 JAXJob (pkg/controller.v1/jax/envvar.go setPodEnv): on every container
# of every Worker; the coordinator is Worker 0 at the port named "jaxjob-port" on container
# "jax" (pkg/apis/kubeflow.org/v1/jax_types.go), which jax.distributed.initialize() reads.
JAXJOB_PORT = 6666
_JAX_SETS = "the Training Operator sets it"
JAXJOB = ReservedEnv(
    kinds=("JAXJob",),
    names={
        "PYTHONUNBUFFERED": "the Training Operator always appends PYTHONUNBUFFERED=1",
        "COORDINATOR_PORT": f"{_JAX_SETS} to the first Worker's jaxjob-port",
        "COORDINATOR_ADDRESS": f"{_JAX_SETS} to the first Worker's Service",
        "NUM_PROCESSES": f"{_JAX_SETS} to the number of Workers",
        "PROCESS_ID": f"{_JAX_SETS} to the Worker's index",
    },
)


def jaxjob_env(*, job: str, workers: int, index: int, port: int = JAXJOB_PORT) -> dict[str, str]:
    """What the operator appends for Worker ``index`` of ``workers``; ``port`` is the Workers'
    ``jaxjob-port`` (envvar.go getPortFromJAXJob reads it from the job's spec)."""
    return {
        "PYTHONUNBUFFERED": "1",
        "COORDINATOR_PORT": str(port),
        "COORDINATOR_ADDRESS": f"{job}-worker-0",
        "NUM_PROCESSES": str(workers),
        "PROCESS_ID": str(index),
    }
