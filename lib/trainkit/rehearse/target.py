"""The job a rehearsal runs, whichever operator would run it on the cluster.

What differs between a PyTorchJob (Training Operator v1.9) and a TrainJob
(Kubeflow Trainer v2.3) is decided here, once: the sizes and env after a
runtime's defaults, the env the operator injects into each node, the pod
names, and which variables the operator (or torchrun under it) sets. The plan
and the runner only read a Target, so the GPU downgrade, the size cap and the
process handling are the same code for both kinds.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from ..injected_env import (
    PYTORCHJOB_MASTER_PORT,
    TRAINER_MASTER_PORT,
    pytorchjob_env,
    reserved_env_reason,
    trainjob_env,
    trainjob_reserved_env_reason,
)
from ..load import Definition
from ..model import PyTorchJob, Resources, Script, TrainJob, Volume
from ..plan import PlannedJob, PlannedRuntime
from ..render.training_operator import nproc_per_node

__all__ = ["PyTorchJobTarget", "Target", "TrainJobTarget", "pod_name", "target_of"]


def pod_name(job: str, node_rank: int) -> str:
    """The operator's pod for a node rank: node 0 is the Master, node i is Worker i-1."""
    return f"{job}-master-0" if node_rank == 0 else f"{job}-worker-{node_rank - 1}"


@dataclass(frozen=True)
class Target(ABC):
    """A job with the values it runs with on the cluster (after any runtime's defaults)."""

    job: PyTorchJob | TrainJob
    nodes: int
    procs_per_node: int
    nodes_label: str
    """How a change of ``nodes`` is introduced, e.g. ``nodes (from runtime 'x')``."""
    procs_label: str
    resources: Resources | None
    env: Mapping[str, str]
    """The container's env from the definitions (a runtime's under the job's)."""
    image: str | None
    shm_size: str | None
    definition: Definition | None = None
    runtime: PlannedRuntime | None = None

    operator: ClassVar[str]
    """Who runs the job, as said in messages."""
    master_vars: ClassVar[tuple[str, str]]
    """The injected variables holding the rendezvous address and port."""
    master_port: ClassVar[int]
    """The port the operator gives the master."""

    @property
    def name(self) -> str:
        return self.job.name

    @property
    def script(self) -> Script | None:
        return self.job.script

    @property
    def command(self) -> list[str] | None:
        return self.job.command

    @property
    def args(self) -> list[str]:
        return self.job.args

    @property
    def volumes(self) -> list[Volume]:
        return self.job.volumes

    @property
    def gpu(self) -> int:
        return self.resources.gpu if self.resources else 0

    def describe(self) -> str:
        return self.job.describe()

    @abstractmethod
    def pod(self, node_rank: int) -> str: ...

    def injected_env(
        self,
        *,
        nodes: int,
        procs_per_node: int,
        node_rank: int,
        master_addr: str | None = None,
        master_port: int | None = None,
    ) -> dict[str, str]:
        """What the operator adds to the env of one node's container (the cluster's
        master address and port unless given)."""
        return self._operator_env(
            nodes=nodes,
            procs_per_node=procs_per_node,
            node_rank=node_rank,
            master_addr=master_addr,
            master_port=master_port or self.master_port,
        )

    @abstractmethod
    def _operator_env(self, **sizes: Any) -> dict[str, str]: ...

    @abstractmethod
    def sets(self, name: str) -> bool:
        """Whether the operator, or torchrun under it, sets ``name`` on the cluster."""

    def notes(self, procs_per_node: int) -> list[str]:
        """Changes only this kind has, for a rehearsal of ``procs_per_node`` processes."""
        return []


@dataclass(frozen=True)
class PyTorchJobTarget(Target):
    operator: ClassVar[str] = "the operator"
    master_vars: ClassVar[tuple[str, str]] = ("MASTER_ADDR", "MASTER_PORT")
    master_port: ClassVar[int] = PYTORCHJOB_MASTER_PORT

    def pod(self, node_rank: int) -> str:
        return pod_name(self.job.name, node_rank)

    def _operator_env(self, **sizes: Any) -> dict[str, str]:
        return pytorchjob_env(job_name=self.job.name, **sizes)

    def sets(self, name: str) -> bool:
        return reserved_env_reason(name) is not None

    def notes(self, procs_per_node: int) -> list[str]:
        assert isinstance(self.job, PyTorchJob)
        if self.job.restart_policy == "Never":
            return []
        return [
            f"restart_policy {self.job.restart_policy}: no restarts; the rehearsal stops at "
            "the first failure"
        ]


@dataclass(frozen=True)
class TrainJobTarget(Target):
    operator: ClassVar[str] = "Kubeflow Trainer"
    master_vars: ClassVar[tuple[str, str]] = ("PET_MASTER_ADDR", "PET_MASTER_PORT")
    master_port: ClassVar[int] = TRAINER_MASTER_PORT

    @property
    def object_name(self) -> str:
        assert isinstance(self.job, TrainJob)
        return self.job.object_name

    def pod(self, node_rank: int) -> str:
        # JobSet's pod hostname; the pod's own name adds a random suffix.
        return f"{self.object_name}-node-0-{node_rank}"

    def _operator_env(self, **sizes: Any) -> dict[str, str]:
        return trainjob_env(trainjob=self.object_name, **sizes)

    def sets(self, name: str) -> bool:
        return trainjob_reserved_env_reason(name) is not None

    def notes(self, procs_per_node: int) -> list[str]:
        assert isinstance(self.job, TrainJob)
        if self.job.procs_per_node is not None or self.job.resources is not None or not self.gpu:
            return []
        # Trainer passes "auto" when neither the job nor the runtime gives a
        # number and the node has GPUs; torchrun then starts one per GPU.
        return [
            f"PET_NPROC_PER_NODE 'auto' → {procs_per_node} (on the cluster torchrun starts one "
            "process per GPU; there are none here)"
        ]


def target_of(job: PyTorchJob | PlannedJob | Target) -> Target:
    """The Target of a PyTorchJob, or of a planned job (a TrainJob needs its runtime)."""
    if isinstance(job, Target):
        return job
    if isinstance(job, PyTorchJob):
        return _pytorchjob(job, None)
    if not isinstance(job, PlannedJob):
        raise TypeError(
            f"cannot rehearse a {type(job).__name__}: a TrainJob needs its runtime, so pass "
            "its PlannedJob from trainkit.plan.build_plan"
        )
    if isinstance(job.job, PyTorchJob):
        return _pytorchjob(job.job, job.definition)
    return _trainjob(job, job.job)


def _pytorchjob(job: PyTorchJob, definition: Definition | None) -> Target:
    procs = "procs_per_node"
    if job.procs_per_node is None and job.resources.gpu:
        procs = "procs_per_node (one per GPU)"
    nproc = nproc_per_node(job)
    image = job.image if isinstance(job.image, str) else next(iter(job.image.values()), None)
    return PyTorchJobTarget(
        job=job,
        nodes=job.nodes,
        procs_per_node=int(nproc) if nproc and nproc.isdigit() else max(1, job.resources.gpu),
        nodes_label="nodes",
        procs_label=procs,
        resources=job.resources,
        env=dict(job.env),
        image=image,
        shm_size=job.shm_size,
        definition=definition,
    )


def _trainjob(pj: PlannedJob, job: TrainJob) -> Target:
    rt = pj.runtime.runtime if pj.runtime is not None else None
    from_rt = f"from runtime {rt.name!r}" if rt is not None else ""
    nodes = f"nodes ({from_rt})" if job.nodes is None and from_rt else "nodes"
    procs = "procs_per_node"
    if job.procs_per_node is None and pj.resources is not None:
        how = ["one per GPU" if pj.resources.gpu else "one per CPU"]
        if job.resources is None and from_rt:
            how.append(from_rt)
        procs += f" ({', '.join(how)})"
    return TrainJobTarget(
        job=job,
        nodes=pj.nodes,
        procs_per_node=pj.trainer_procs(),
        nodes_label=nodes,
        procs_label=procs,
        resources=pj.resources,
        env={**(rt.env if rt is not None else {}), **job.env},
        image=pj.image or (rt.image if rt is not None else None),
        shm_size=rt.shm_size if rt is not None else None,
        definition=pj.definition,
        runtime=pj.runtime,
    )
