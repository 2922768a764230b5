"""The XGBoostJob (``kubeflow.org/v1``, Training Operator v1.9) definition.

Rules cite kubeflow/trainer at v1.9.4: pkg/webhooks/xgboost/xgboostjob_webhook.go (roles Master,
exactly one, and Worker; container ``xgboost``), pkg/controller.v1/xgboost/xgboost.go (the env:
the tracker on the Master, ranks, WORLD_SIZE) and xgboostjob_controller.go (the job succeeds
when the Master exits 0).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from ..injected_env.xgboost_env import XGBOOSTJOB_PORT
from .operator_job import Role, RoleJob, refuse_always
from .pod_settings import PortNumber, check_operator_port

__all__ = ["XGBOOST_ROLES", "XGBoostJob"]

XGBOOST_ROLES = ("Master", "Worker")
"""Replica types the webhook allows, in rank order (the Master is rank 0)."""


class XGBoostJob(RoleJob):
    """A distributed XGBoost (or LightGBM) job: one Master plus ``nodes - 1`` Workers, one
    process each. The Master's Service is the collective's tracker address (``MASTER_ADDR``,
    ``MASTER_PORT``); every pod gets its ``RANK`` and the ``WORLD_SIZE``."""

    nodes: int = Field(default=1, ge=1, le=10000)
    """Pods in all: the Master (rank 0) plus ``nodes - 1`` Workers; each gets ``resources``
    and runs one training process."""
    ROLE_FIELDS: ClassVar[dict[str, str]] = {"master": "Master"}

    master: Role | None = None
    """Settings of the Master pod that differ from the Workers' (``Role(resources=…)``, e.g. a
    larger one that runs the tracker); its ``replicas`` must stay 1."""
    port: PortNumber = XGBOOSTJOB_PORT
    """The tracker's port: the container port named ``xgboostjob-port`` on every pod, which
    the operator reads back into ``MASTER_PORT`` and ``WORKER_PORT`` (default 9999, the
    operator's). Set it where the program expects another one (``port=9991``); it must differ
    from the job's ``ports``."""
    restart_policy: Literal["OnFailure", "Never", "ExitCode"] = "Never"
    """What the operator does when a pod fails. ``Never`` (the operator's default): a failed
    pod fails the job. A restarted pod starts its training over and must meet every other pod
    at the tracker again, which the running ones do not do."""

    @field_validator("restart_policy", mode="before")
    @classmethod
    def _not_always(cls, value: Any) -> Any:
        return refuse_always(value, "the Master")

    @model_validator(mode="after")
    def _coherent(self) -> XGBoostJob:
        if self.master is not None and self.master.replicas != 1:
            # xgboostjob_webhook.go validateXGBReplicaSpecs: Master replicas "must be 1".
            raise ValueError(
                f"master.replicas is {self.master.replicas}; an XGBoostJob has one Master "
                "(the tracker): drop replicas, or raise nodes for more Workers"
            )
        # xgboost.go getPortFromXGBoostJob: the tracker's port is the container port named
        # xgboostjob-port; a port of the job's own with the same number would fight over it.
        check_operator_port("port", self.port, self.ports, "tracker")
        self._check_role_names()
        return self

    def replica_counts(self) -> dict[str, int]:
        """The Master, and ``nodes - 1`` Workers when there are any."""
        return {"Master": 1} | ({"Worker": self.nodes - 1} if self.nodes > 1 else {})
