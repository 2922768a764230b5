"""The Kubeflow PyTorchJob (Training Operator v1.9) definition."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from .base import TrainkitModel
from .operator_job import MAX_RUN, OperatorJob, refuse_always, run_name

__all__ = ["MAX_RUN", "Elastic", "PyTorchJob", "run_name"]


class Elastic(TrainkitModel):
    """Elastic training: Worker pods only, which meet through torchrun's c10d rendezvous on the
    first Worker and go on training when some of them fail, down to ``min_nodes``."""

    min_nodes: int = Field(ge=1, le=10000)
    """Fewest nodes the job trains with; with fewer, torchrun waits for nodes to come back."""
    max_restarts: int = Field(default=3, ge=0, le=1000)
    """How often torchrun restarts the worker group (a node left, a process failed) before the
    job fails."""


class PyTorchJob(OperatorJob):
    """A distributed PyTorch job: one Master node plus ``nodes - 1`` Workers, run with torchrun."""

    nodes: int = Field(default=1, ge=1, le=10000)
    """Number of nodes (pods): 1 Master plus ``nodes - 1`` Workers; with ``elastic``, the most
    Workers (there is no Master)."""
    procs_per_node: Annotated[int, Field(ge=1, le=1024)] | Literal["auto"] | None = None
    """Processes per node (torchrun's ``--nproc-per-node``). Default: ``resources.gpu`` (or 1)
    with ``script``; with ``command`` or the image's ENTRYPOINT the operator's ``auto``
    (WORLD_SIZE = nodes, for launchers such as ``accelerate launch`` that start their own
    processes)."""
    restart_policy: Literal["OnFailure", "Never", "ExitCode"] = "OnFailure"
    """What the operator does when a pod fails. ``ExitCode`` retries only exit codes ≥ 128 —
    but torchrun exits 1 when it is stopped (SIGTERM) or a worker is OOM-killed, so those are
    not retried either. ``Always`` is refused: a Master restarted after exit 0 never succeeds."""
    elastic: Elastic | None = None
    """Elastic training (``Elastic(min_nodes=2)``): ``nodes`` Workers and no Master, torchrun's
    c10d rendezvous, and the job goes on while at least ``min_nodes`` run."""

    @field_validator("restart_policy", mode="before")
    @classmethod
    def _not_always(cls, value: Any) -> Any:
        return refuse_always(value, "the Master")

    @model_validator(mode="after")
    def _coherent(self) -> PyTorchJob:
        if self.elastic is not None and self.elastic.min_nodes > self.nodes:
            raise ValueError(
                f"elastic.min_nodes {self.elastic.min_nodes} exceeds nodes {self.nodes}: nodes is "
                "the most Workers the job runs; raise nodes or lower min_nodes"
            )
        # The operator creates one Service per pod named <job>-worker-<i>; Services
        # are DNS-1035 labels, so the longest one must fit in 63 characters.
        if self.workers > 0:
            self._check_longest_name(
                f"{self.object_name}-worker-{self.workers - 1}", f"{self.nodes} nodes"
            )
        return self

    @property
    def workers(self) -> int:
        """Worker pods: ``nodes - 1`` beside the Master, or ``nodes`` when elastic."""
        return self.nodes if self.elastic is not None else self.nodes - 1
