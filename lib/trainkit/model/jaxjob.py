"""The JAXJob (``kubeflow.org/v1``, Training Operator v1.9) definition.

Rules cite kubeflow/trainer at v1.9.4: pkg/webhooks/jax/jaxjob_webhook.go (Workers only,
container ``jax``), pkg/controller.v1/jax/envvar.go (the coordinator is Worker 0) and
jaxjob_controller.go (the job succeeds when every Worker has exited 0).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from ..injected_env.jax_env import JAXJOB_PORT
from .operator_job import RoleJob, refuse_always
from .pod_settings import PortNumber, check_operator_port

__all__ = ["JAX_ROLES", "JAXJob"]

JAX_ROLES = ("Worker",)
"""The one replica type the webhook allows."""


class JAXJob(RoleJob):
    """A multi-process JAX job: ``nodes`` Workers, one JAX process each, that meet at the first
    Worker (``jax.distributed.initialize()`` reads ``COORDINATOR_ADDRESS``,
    ``NUM_PROCESSES`` and ``PROCESS_ID``); each process drives its pod's GPUs."""

    nodes: int = Field(default=1, ge=1, le=10000)
    """Worker pods, one JAX process each; Worker 0 is also the coordinator."""
    port: PortNumber = JAXJOB_PORT
    """The coordinator's port: the container port named ``jaxjob-port`` on every pod, which
    the operator reads back into ``COORDINATOR_PORT`` (default 6666, the operator's). Set it
    where the program expects another one; it must differ from the job's ``ports``."""
    restart_policy: Literal["OnFailure", "Never", "ExitCode"] = "Never"
    """What the operator does when a pod fails. ``Never`` (the operator's default): a failed
    pod fails the job. A restarted pod starts over and must meet every other process at the
    coordinator again, which the running ones do not do."""

    @field_validator("restart_policy", mode="before")
    @classmethod
    def _not_always(cls, value: Any) -> Any:
        return refuse_always(value, "a Worker")

    @model_validator(mode="after")
    def _coherent(self) -> JAXJob:
        # pkg/controller.v1/jax/envvar.go getPortFromJAXJob: the coordinator's port is the
        # container port named jaxjob-port; a port of the job's own with that number would
        # fight over it.
        check_operator_port("port", self.port, self.ports, "coordinator")
        self._check_role_names()
        return self

    def replica_counts(self) -> dict[str, int]:
        return {"Worker": self.nodes}
