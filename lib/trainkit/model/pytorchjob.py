"""The Kubeflow PyTorchJob (Training Operator v1.9) definition."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from .base import TrainkitModel
from .operator_job import MAX_RUN, OperatorJob, Role, refuse_always, run_name
from .pod_settings import PortNumber, check_operator_port

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
    master: Role | None = None
    """Settings of the Master pod that differ from the Workers' (``Role(restart_policy=
    "Never", env={…})``); a setting left out is the job's. Its ``replicas`` stays 1."""

    master_port: PortNumber | None = None
    """The rendezvous port: the container port named ``pytorchjob-port`` on every pod, which
    the operator reads back into ``MASTER_PORT`` (with ``elastic``, the c10d endpoint on Worker
    0); default 23456, the operator's. Set it where the program expects another one
    (``master_port=37777``); it must differ from the job's ``ports``."""

    ROLE_FIELDS: ClassVar[dict[str, str]] = {"master": "Master"}

    @field_validator("restart_policy", mode="before")
    @classmethod
    def _not_always(cls, value: Any) -> Any:
        return refuse_always(value, "the Master")

    @model_validator(mode="after")
    def _coherent(self) -> PyTorchJob:
        if self.master is not None and self.elastic is not None:
            # pkg/controller.v1/pytorch/elastic.go: an elastic job is Workers only.
            raise ValueError(
                "master= sets the Master pod, which an elastic job has none of (Workers only); "
                "drop master=, or elastic= to run a Master"
            )
        # pkg/controller.v1/pytorch/envvar.go getPortFromPyTorchJob (and elastic.go, for the
        # c10d endpoint): the rendezvous is the container port named pytorchjob-port; a port
        # of the job's own with that number would fight over it.
        check_operator_port("master_port", self.master_port, self.ports, "rendezvous")
        if self.master is not None and self.master.replicas != 1:
            # pkg/webhooks/pytorch/pytorchjob_webhook.go validatePyTorchReplicaSpecs: the
            # Master's replicas must be 1.
            raise ValueError(
                f"master.replicas is {self.master.replicas}; a PyTorchJob has one Master: drop "
                "replicas, or raise nodes for more Workers"
            )
        if (
            self.master is not None
            and self.master.resources is not None
            and self.master.resources.gpu != self.resources.gpu
        ):
            # pkg/controller.v1/pytorch/envvar.go: one PET_NPROC_PER_NODE (spec.nprocPerNode)
            # for every replica type, so torchrun starts as many processes on the Master as
            # on each Worker, and WORLD_SIZE counts them so.
            raise ValueError(
                f"master.resources.gpu {self.master.resources.gpu} differs from resources.gpu "
                f"{self.resources.gpu}: torchrun starts the same number of processes on every "
                "node (one nprocPerNode for the job); give the Master the Workers' GPUs"
            )
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
