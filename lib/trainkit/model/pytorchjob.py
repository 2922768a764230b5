"""The Kubeflow PyTorchJob (Training Operator v1.9) definition."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from ..injected_env import reserved_env_reason
from .base import TrainkitModel
from .fields import ClusterRef, DNS1035Name, DNS1123Label, EnvName, EnvValue, MemoryQuantity
from .job import Resources, Script, Toleration, Volume, check_volumes

__all__ = ["PyTorchJob"]


class PyTorchJob(TrainkitModel):
    """A distributed PyTorch job: one Master node plus ``nodes - 1`` Workers, run with torchrun."""

    name: DNS1035Name
    """Job name, unique in the team's namespace on each cluster."""
    image: str = Field(min_length=1, pattern=r"^\S+$")
    """Container image with PyTorch, e.g. ``registry.example.com/ml/pytorch:2.5.1-cuda12.4``."""
    script: Script | None = None
    """Training script next to the definition (``Script.file(...)``), run with torchrun."""
    command: list[str] | None = None
    """Command for images that carry their own code (instead of ``script``)."""
    args: list[str] = []
    """Arguments passed to the script or command."""
    env: dict[EnvName, EnvValue] = {}
    """Extra environment variables (the operator's own, such as ``PET_*``, are refused)."""
    nodes: int = Field(default=1, ge=1, le=10000)
    """Number of nodes (pods): 1 Master plus ``nodes - 1`` Workers."""
    procs_per_node: int | None = Field(default=None, ge=1, le=1024)
    """Processes per node; defaults to ``resources.gpu`` (or 1 without GPUs)."""
    resources: Resources
    """CPU, memory and GPUs of each node."""
    shm_size: MemoryQuantity | None = None
    """Size of ``/dev/shm`` (memory-backed emptyDir), e.g. ``"20Gi"`` for data loaders, NCCL."""
    volumes: list[Volume] = []
    """PersistentVolumeClaims mounted on every node."""
    node_selector: dict[str, str] = {}
    """Node labels the pods must run on, e.g. ``{"gpu.product": "A100"}``."""
    tolerations: list[Toleration] = []
    """Taints the pods tolerate."""
    restart_policy: Literal["OnFailure", "Never", "ExitCode", "Always"] = "OnFailure"
    """What the operator does when a pod fails; ``ExitCode`` retries only exit codes ≥ 128."""
    backoff_limit: int | None = Field(default=None, ge=0)
    """Restarts before the whole job is marked failed."""
    deadline_seconds: int | None = Field(default=None, ge=1)
    """Fail the job when it has run this long."""
    queue: DNS1123Label | None = None
    """Volcano queue; defaults to the team's first queue."""
    clusters: list[ClusterRef] | None = None
    """Clusters to run on; defaults to the team's clusters."""
    network: DNS1123Label | None = None
    """A ``NetworkProfile`` declared in ``jobs/platform/`` (e.g. ``"rdma"``): the capabilities,
    device resources and host network its pods get. Nothing else can ask for them; privileged
    containers and host paths are never generated."""

    @field_validator("env")
    @classmethod
    def _no_reserved_env(cls, env: dict[str, str]) -> dict[str, str]:
        bad = [(k, reserved_env_reason(k)) for k in env if reserved_env_reason(k)]
        if bad:
            raise ValueError(
                "; ".join(f"{k} may not be set: {why}" for k, why in bad) + " — remove it from env"
            )
        return env

    @model_validator(mode="after")
    def _coherent(self) -> PyTorchJob:
        if (self.script is None) == (self.command is None):
            raise ValueError(
                "give exactly one of script=Script.file('train.py') (shipped in a ConfigMap) "
                "or command=[...] (code inside the image)"
            )
        if self.command is not None and not self.command:
            raise ValueError("command is empty; give the program to run, e.g. ['python', 'x.py']")
        # The operator creates one Service per pod named <job>-worker-<i>; Services
        # are DNS-1035 labels, so the longest one must fit in 63 characters.
        if self.nodes > 1:
            longest = f"{self.name}-worker-{self.nodes - 2}"
            if len(longest) > 63:
                raise ValueError(
                    f"name {self.name!r} is too long for {self.nodes} nodes: the operator's "
                    f"Service {longest!r} would exceed 63 characters; shorten the name to "
                    f"{63 - len(longest) + len(self.name)} characters"
                )
        check_volumes(self.volumes)
        return self

    @property
    def nprocs(self) -> int:
        """Processes per node after defaults."""
        if self.procs_per_node is not None:
            return self.procs_per_node
        return self.resources.gpu or 1

    @property
    def world_size(self) -> int:
        return self.nodes * self.nprocs
