"""The TFJob (``kubeflow.org/v1``, Training Operator v1.9) definition.

Rules cite kubeflow/trainer at v1.9.4: pkg/webhooks/tensorflow/tfjob_webhook.go (roles,
container ``tensorflow``), pkg/controller.v1/tensorflow/tensorflow.go (TF_CONFIG),
pkg/controller.v1/tensorflow/util.go (its port) and tfjob_controller.go (when the job
succeeds).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import model_validator

from ..injected_env.tensorflow_env import TFJOB_PORT
from .operator_job import Role, RoleJob
from .pod_settings import PortNumber, check_operator_port

__all__ = ["TF_ROLES", "TFJob"]

TF_ROLES = ("Chief", "PS", "Worker", "Evaluator")
"""Replica types in the order the pods are listed (the chief first, as TF_CONFIG's task 0)."""


class TFJob(RoleJob):
    """A TensorFlow job: ``nodes`` Workers, and parameter servers, a chief and an evaluator
    when given; the operator tells every pod the cluster in ``TF_CONFIG``."""

    ROLE_FIELDS: ClassVar[dict[str, str]] = {"chief": "Chief", "ps": "PS", "evaluator": "Evaluator"}

    ps: Role | None = None
    """Parameter servers for PS-Worker training (seed 001), e.g. ``Role(replicas=2,
    resources=Resources(cpu=8, memory="32Gi"))``; a setting left out is the job's."""
    chief: Role | None = None
    """A chief (``Role()``, one pod): the job succeeds when it exits 0."""
    evaluator: Role | None = None
    """An evaluator (``Role()``, one pod) that reads the checkpoints beside the training."""
    success: Literal["first_worker", "all_workers"] = "first_worker"
    """Without a chief, when the job succeeds: when Worker 0 exits 0 (the operator's default)
    or when every Worker has (``all_workers``). Parameter servers never exit on their own;
    ``clean_pods`` stops them."""
    port: PortNumber = TFJOB_PORT
    """The port TensorFlow's servers listen on: the container port named ``tfjob-port`` on
    every pod, which the operator writes into each address of ``TF_CONFIG``'s cluster
    (default 2222, the operator's). Set it where the program's servers listen on another
    one (``port=2223``); it must differ from the job's ``ports``."""

    @model_validator(mode="after")
    def _coherent(self) -> TFJob:
        for field, single in (("chief", self.chief), ("evaluator", self.evaluator)):
            if single is not None and single.replicas != 1:
                # tfjob_webhook.go: at most one Chief or Master; TensorFlow runs one evaluator.
                raise ValueError(f"{field}.replicas is {single.replicas}; a TFJob has one {field}")
        if self.chief is not None and self.success != "first_worker":
            # tfjob_controller.go UpdateJobStatus: with a Chief, its success alone decides.
            raise ValueError(
                "success is decided by the chief when there is one; drop success= or the chief"
            )
        # util.go GetPortFromTFJob: each address of TF_CONFIG's cluster is at the container
        # port named tfjob-port (read at v1.9.0: the mirror lacks the v1.9.4 tag); a port of
        # the job's own with that number would fight over it.
        check_operator_port("port", self.port, self.ports, "TensorFlow server")
        self._check_role_names()
        return self

    def replica_counts(self) -> dict[str, int]:
        """Pods per replica type, in ``TF_ROLES`` order, the absent ones left out."""
        counts = {}
        for name in TF_ROLES:
            role = self.role(name)
            if name == "Worker":
                counts[name] = self.nodes
            elif role is not None:
                counts[name] = role.replicas
        return counts
