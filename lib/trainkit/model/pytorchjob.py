"""The Kubeflow PyTorchJob (Training Operator v1.9) definition."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from ..kube.quantities import parse_quantity
from .base import TrainkitModel
from .fields import CpuQuantity
from .operator_job import MAX_RUN, OperatorJob, Role, refuse_always, run_name
from .pod_settings import HostName, PortNumber, check_operator_port

__all__ = ["MAX_RUN", "Elastic", "PyTorchJob", "ResourceMetric", "run_name"]


class ResourceMetric(TrainkitModel):
    """A Horizontal Pod Autoscaler metric on the Workers' own use of CPU or memory
    (``autoscaling/v2`` ``type: Resource``), e.g. ``ResourceMetric(resource="cpu",
    utilization=80)``: the autoscaler adds Workers while their average use is above the
    target and removes them while it is below."""

    resource: Literal["cpu", "memory"]
    """What the Workers use: ``cpu`` or ``memory`` (of the whole pod)."""
    utilization: int | None = Field(default=None, ge=1, le=2**31 - 1)
    """Target average use in percent of each pod's request (``averageUtilization``); the
    requests are the job's ``resources``."""
    average: CpuQuantity | None = None
    """Target average use per pod as a quantity (``averageValue``: ``"3"`` CPUs, ``"12Gi"``);
    instead of ``utilization``."""

    @model_validator(mode="after")
    def _one_target(self) -> ResourceMetric:
        # k8s.io/kubernetes pkg/apis/autoscaling/validation/validation.go validateMetricTarget:
        # Utilization needs averageUtilization > 0, AverageValue a positive averageValue.
        if (self.utilization is None) == (self.average is None):
            raise ValueError(
                f"{self.resource} metric: give exactly one target, utilization=<percent of the "
                "request> or average=<quantity per pod>"
            )
        if self.average is not None and not parse_quantity(self.average):
            raise ValueError(
                f"{self.resource} metric: average {self.average!r} must be a positive quantity "
                "(the autoscaler refuses 0)"
            )
        return self

    def spec(self) -> dict[str, Any]:
        """The ``MetricSpec`` the operator copies into its HorizontalPodAutoscaler."""
        target: dict[str, Any] = (
            {"type": "Utilization", "averageUtilization": self.utilization}
            if self.utilization is not None
            else {"type": "AverageValue", "averageValue": self.average}
        )
        return {"type": "Resource", "resource": {"name": self.resource, "target": target}}


class Elastic(TrainkitModel):
    """Elastic training: Worker pods only, which meet through torchrun's rendezvous (c10d on
    the first Worker, or an etcd the platform runs) and go on training when some of them
    fail, down to ``min_nodes``. With ``metrics`` the Training Operator creates a Horizontal
    Pod Autoscaler that scales the Workers between ``min_nodes`` and ``max_nodes``."""

    min_nodes: int = Field(ge=1, le=10000)
    """Fewest nodes the job trains with; with fewer, torchrun waits for nodes to come back."""
    max_nodes: int | None = Field(default=None, ge=1, le=10000)
    """Most nodes the autoscaler may give the job (``maxReplicas``); default ``nodes``. Above
    ``nodes`` only with ``metrics``, and then quota, caps, gangs and ``trainkit plan`` count
    ``max_nodes`` Workers, all the autoscaler may start."""
    max_restarts: int = Field(default=3, ge=0, le=1000)
    """How often torchrun restarts the worker group (a node left or joined, a process
    failed) before the job fails. Every scaling step of the autoscaler is one."""
    metrics: list[ResourceMetric] = Field(default=[], max_length=8)
    """What the autoscaler scales the Workers by (``elasticPolicy.metrics``), e.g.
    ``[ResourceMetric(resource="cpu", utilization=80)]``; the largest count any metric asks
    for wins. Empty: no autoscaler, the job keeps ``nodes`` Workers."""
    rdzv_backend: Literal["c10d", "etcd", "etcd-v2"] = "c10d"
    """torchrun's rendezvous backend (``--rdzv-backend``): ``c10d`` on the first Worker, or
    ``etcd``/``etcd-v2`` at ``rdzv_host``."""
    rdzv_host: HostName | None = None
    """The rendezvous server (``rdzvHost``), e.g. an etcd Service ``"etcd-gpu"``; default the
    first Worker. Needs ``rdzv_port``."""
    rdzv_port: PortNumber | None = None
    """The rendezvous server's port (``rdzvPort``), e.g. ``2379`` for etcd; only with
    ``rdzv_host`` (on the first Worker the port is ``master_port``)."""

    @model_validator(mode="after")
    def _rendezvous(self) -> Elastic:
        # pkg/controller.v1/pytorch/elastic.go generateEnvRDZVEndpoint: without rdzvHost the
        # endpoint is <job>-worker-0, without rdzvPort the Worker's pytorchjob-port.
        if self.rdzv_backend != "c10d" and self.rdzv_host is None:
            raise ValueError(
                f"rdzv_backend {self.rdzv_backend!r} needs rdzv_host: without it the operator "
                "points torchrun at the first Worker, where no etcd runs; give the etcd "
                "server's rdzv_host and rdzv_port, or use rdzv_backend='c10d'"
            )
        if (self.rdzv_host is None) != (self.rdzv_port is None):
            raise ValueError(
                "rdzv_host and rdzv_port go together: with a host of its own the rendezvous "
                "needs that server's port (the operator would use the Worker's pytorchjob-port), "
                "and on the first Worker the port is master_port; give both or neither"
            )
        return self


class PyTorchJob(OperatorJob):
    """A distributed PyTorch job: one Master node plus ``nodes - 1`` Workers, run with torchrun."""

    nodes: int = Field(default=1, ge=1, le=10000)
    """Number of nodes (pods): 1 Master plus ``nodes - 1`` Workers; with ``elastic``, the
    Workers the job starts with (there is no Master)."""
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
    rendezvous, and the job goes on while at least ``min_nodes`` run; with ``metrics``, an
    autoscaler moves the Workers between ``min_nodes`` and ``max_nodes``."""
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
        if self.elastic is not None:
            self._check_elastic(self.elastic)
        # The operator creates one Service per pod named <job>-worker-<i>; Services
        # are DNS-1035 labels, so the longest one must fit in 63 characters.
        if self.workers > 0:
            most = self.max_workers
            self._check_longest_name(
                f"{self.object_name}-worker-{most - 1}",
                f"max_nodes {most}" if most > self.workers else f"{self.nodes} nodes",
            )
        return self

    def _check_elastic(self, elastic: Elastic) -> None:
        if elastic.min_nodes > self.nodes:
            raise ValueError(
                f"elastic.min_nodes {elastic.min_nodes} exceeds nodes {self.nodes}: the job "
                "starts with nodes Workers and trains with at least min_nodes; raise nodes or "
                "lower min_nodes"
            )
        most = elastic.max_nodes
        if most is not None and most < self.nodes:
            raise ValueError(
                f"elastic.max_nodes {most} is below nodes {self.nodes}, the Workers the job "
                "starts with; raise max_nodes or lower nodes"
            )
        if most is not None and most > self.nodes and not elastic.metrics:
            # pkg/controller.v1/pytorch/hpa.go ReconcileHPA: no metrics, no autoscaler; the
            # Worker count is then what git says (a hand `kubectl scale` is undone by Argo
            # CD's self-heal), so Workers above nodes never start.
            raise ValueError(
                f"elastic.max_nodes {most} is above nodes {self.nodes} but elastic.metrics is "
                "empty: without metrics no autoscaler is created and the job never grows past "
                "nodes; give metrics (ResourceMetric(resource='cpu', utilization=80)), or drop "
                "max_nodes"
            )

    @property
    def max_workers(self) -> int:
        """The most Worker pods the job can have: ``elastic.max_nodes`` when an autoscaler
        may scale it (``elastic.metrics``), else ``workers``."""
        if self.elastic is not None and self.elastic.metrics and self.elastic.max_nodes:
            return self.elastic.max_nodes
        return self.workers

    @property
    def workers(self) -> int:
        """Worker pods: ``nodes - 1`` beside the Master, or ``nodes`` when elastic."""
        return self.nodes if self.elastic is not None else self.nodes - 1
