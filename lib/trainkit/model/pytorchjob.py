"""The Kubeflow PyTorchJob (Training Operator v1.9) definition."""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, Field, WithJsonSchema, field_validator, model_validator

from .autoscaling import AnyMetric
from .base import TrainkitModel
from .fields import must_match, pattern_schema
from .operator_job import MAX_RUN, OperatorJob, Role, refuse_always, run_name
from .pod_settings import HostName, PortNumber, check_operator_port

__all__ = ["MAX_RUN", "Elastic", "PyTorchJob", "run_name"]


# pkg/controller.v1/pytorch/elastic.go: rdzvId becomes PET_RDZV_ID and rdzvConf one
# PET_RDZV_CONF, "<key>=<value>" joined by ",", which torchrun splits back on "," and the
# first "=" and strips (torch/distributed/elastic/rendezvous/utils.py
# _parse_rendezvous_config). Both are env values, where the kubelet expands "$(VAR)" and
# turns "$$" into "$" (kube/expansion.py). So a key is a plain name, and a value holds no
# ",", no "$" and no space at its ends; the id is a plain name too, as etcd's rendezvous keys
# carry it in their paths (torch/distributed/elastic/rendezvous/etcd_rendezvous.py).
_RDZV_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
_RDZV_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")


def _rdzv_value(v: str) -> str:
    bad = [why for bad, why in _RDZV_VALUE_BREAKS if bad(v)]
    if bad:
        raise ValueError(f"{v!r} is not a rendezvous setting's value: {'; '.join(bad)}; e.g. '900'")
    return v


_RDZV_VALUE_BREAKS = (
    (lambda v: not v.strip(), "it is empty (torchrun refuses an option without a value)"),
    (lambda v: "," in v, "',' ends it (the operator joins the settings with ',')"),
    (lambda v: "$" in v, "'$' is the kubelet's ($(VAR) and $$ are expanded in env values)"),
    (lambda v: v != v.strip(), "torchrun strips the spaces at its ends"),
    (lambda v: not v.isprintable(), "it holds a control character"),
    (lambda v: len(v) > 1024, "it is longer than 1024 characters"),
)

RdzvId = Annotated[
    str,
    AfterValidator(
        must_match(
            _RDZV_NAME,
            "{v!r} is not a rendezvous id: 1-128 letters, digits, '_', '.' or '-', starting with "
            "a letter or digit (torchrun's etcd rendezvous puts it in its key paths), e.g. "
            "'imagenet-run-7'",
        )
    ),
    pattern_schema(_RDZV_NAME),
]
RdzvKey = Annotated[
    str,
    AfterValidator(
        must_match(
            _RDZV_KEY,
            "{v!r} is not a rendezvous setting: a name of letters, digits and '_' such as "
            "'join_timeout' (torchrun reads '<key>=<value>' pairs split on ',' and '=')",
        )
    ),
    pattern_schema(_RDZV_KEY),
]
RdzvValue = Annotated[
    str,
    AfterValidator(_rdzv_value),
    WithJsonSchema({"type": "string", "pattern": "^[^,$\\s]([^,$]*[^,$\\s])?$", "maxLength": 1024}),
]


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
    metrics: list[AnyMetric] = Field(default=[], max_length=8)
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
    rdzv_id: RdzvId | None = None
    """The rendezvous's run id (``rdzvId``, torchrun's ``--rdzv-id``), e.g.
    ``"imagenet-run-7"``; default torchrun's ``none``. Workers meet every Worker with the same
    id at the same server, so two jobs at one ``rdzv_host`` with one id are refused."""
    rdzv_conf: dict[RdzvKey, RdzvValue] = Field(default={}, max_length=16)
    """Settings of the rendezvous backend (``rdzvConf``, torchrun's ``--rdzv-conf``), e.g.
    ``{"join_timeout": "900", "last_call_timeout": "60"}`` for c10d, or etcd's
    ``{"protocol": "https", "cacert": "/etc/etcd/ca.crt"}``."""

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
        if "is_host" in self.rdzv_conf:
            # elastic.go gives every Worker the same PET_RDZV_CONF, and torchrun's c10d
            # backend hosts the store on each Worker told is_host=true, on none told false
            # (torch/distributed/elastic/rendezvous/c10d_rendezvous_backend.py
            # _create_tcp_store); without it the Worker whose name is the endpoint's hosts it.
            raise ValueError(
                "rdzv_conf sets is_host, which every Worker gets alike: true makes each Worker "
                "start its own c10d store, false makes none start it, and the rendezvous never "
                "completes; drop it (the Worker named in the endpoint hosts the store)"
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
