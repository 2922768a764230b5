"""The Kubeflow PyTorchJob (Training Operator v1.9) definition."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from ..injected_env import refused_env_reason
from .base import TrainkitModel
from .env import EnvRef, env_refs_validator
from .fields import (
    Arg,
    ClusterRef,
    DNS1035Name,
    DNS1123Label,
    EnvName,
    EnvValue,
    LabelKey,
    LabelValue,
    MemoryQuantity,
    ObjectName,
)
from .job import Image, Resources, Script, Toleration, Volume, check_volumes
from .placement import NodeLabel, Topology

__all__ = ["MAX_RUN", "Elastic", "PyTorchJob", "run_name"]

MAX_RUN = 9999


def run_name(name: str, run: int | None) -> str:
    """The Kubernetes name of a job's run: ``<name>-r<run>``, or the name without a run."""
    return name if run is None else f"{name}-r{run}"


class Elastic(TrainkitModel):
    """Elastic training: Worker pods only, which meet through torchrun's c10d rendezvous on the
    first Worker and go on training when some of them fail, down to ``min_nodes``."""

    min_nodes: int = Field(ge=1, le=10000)
    """Fewest nodes the job trains with; with fewer, torchrun waits for nodes to come back."""
    max_restarts: int = Field(default=3, ge=0, le=1000)
    """How often torchrun restarts the worker group (a node left, a process failed) before the
    job fails."""


class PyTorchJob(TrainkitModel):
    """A distributed PyTorch job: one Master node plus ``nodes - 1`` Workers, run with torchrun."""

    name: DNS1035Name
    """Job name, unique in the team's namespace on each cluster."""
    run: int | None = Field(default=None, ge=1, le=MAX_RUN)
    """Run number: the object is then named ``<name>-r<run>``; raise it to run an edited job
    (a deployed PyTorchJob is never changed in place). Without it the object keeps its name."""
    image: Image
    """Container image with PyTorch, e.g. ``registry.example.com/ml/pytorch:2.5.1-cuda12.4``; or
    one per cluster or per accelerator the cluster declares: ``{"cuda": "…", "rocm": "…"}``."""
    script: Script | None = None
    """Training script next to the definition (``Script.file(...)``), run with torchrun."""
    command: list[Arg] | None = None
    """Command for images that carry their own code (instead of ``script``). With neither,
    the image's ENTRYPOINT runs (with ``args`` as its arguments)."""
    args: list[Arg] = []
    """Arguments passed to the script, the command or the image's ENTRYPOINT."""
    env: dict[EnvName, EnvValue] = {}
    """Extra environment variables (the operator's own, such as ``PET_*``, are refused)."""
    env_refs: dict[EnvName, EnvRef] = {}
    """Variables read when the pod starts from a key of a Secret or ConfigMap the Team grants,
    e.g. ``{"HF_TOKEN": SecretKey(secret="hf-token", key="token")}``: the value never enters
    git."""
    nodes: int = Field(default=1, ge=1, le=10000)
    """Number of nodes (pods): 1 Master plus ``nodes - 1`` Workers; with ``elastic``, the most
    Workers (there is no Master)."""
    procs_per_node: Annotated[int, Field(ge=1, le=1024)] | Literal["auto"] | None = None
    """Processes per node (torchrun's ``--nproc-per-node``). Default: ``resources.gpu`` (or 1)
    with ``script``; with ``command`` or the image's ENTRYPOINT the operator's ``auto``
    (WORLD_SIZE = nodes, for launchers such as ``accelerate launch`` that start their own
    processes)."""
    resources: Resources
    """CPU, memory and GPUs of each node."""
    shm_size: MemoryQuantity | None = None
    """Size of ``/dev/shm`` (memory-backed emptyDir), e.g. ``"20Gi"`` for data loaders, NCCL."""
    volumes: list[Volume] = []
    """PersistentVolumeClaims mounted on every node."""
    node_selector: dict[LabelKey, LabelValue] = {}
    """Node labels the pods must run on, e.g. ``{"gpu.product": "A100"}``."""
    tolerations: list[Toleration] = []
    """Taints the pods tolerate (only those the Cluster allows)."""
    node_affinity: list[NodeLabel] = []
    """Node label rules beyond ``node_selector``: ``NodeLabel(key=…, operator="In",
    values=[…])`` is required, one with ``weight=`` preferred."""
    topology: Topology | None = None
    """How the job's pods lie across racks or zones: ``Topology(key="rack", layout="pack")``
    keeps NCCL traffic in one rack where it can, ``layout="spread"`` spreads the pods."""
    restart_policy: Literal["OnFailure", "Never", "ExitCode"] = "OnFailure"
    """What the operator does when a pod fails. ``ExitCode`` retries only exit codes ≥ 128 —
    but torchrun exits 1 when it is stopped (SIGTERM) or a worker is OOM-killed, so those are
    not retried either. ``Always`` is refused: a Master restarted after exit 0 never succeeds."""
    backoff_limit: int = Field(default=3, ge=0)
    """Restarts before the whole job is marked failed; without a limit a crashing job would
    restart forever, holding its gang's GPUs."""
    clean_pods: Literal["Running", "All", "None"] = "Running"
    """Pods deleted when the job ends: ``Running`` (the default) stops hung workers so they
    release their GPUs; ``All`` also removes finished pods; ``None`` keeps them for debugging."""
    deadline_seconds: int | None = Field(default=None, ge=1)
    """Fail the job when it has run this long, counted from when its pods start running
    (``status.startTime``; time queued in Volcano does not count)."""
    queue: DNS1123Label | None = None
    """Volcano queue; defaults to the team's first queue."""
    clusters: list[ClusterRef] | None = None
    """Clusters to run on; defaults to the team's clusters."""
    network: DNS1123Label | None = None
    """A ``NetworkProfile`` declared in ``jobs/platform/`` (e.g. ``"rdma"``): the capabilities,
    device resources and host network its pods get. Nothing else can ask for them; privileged
    containers and host paths are never generated."""
    elastic: Elastic | None = None
    """Elastic training (``Elastic(min_nodes=2)``): ``nodes`` Workers and no Master, torchrun's
    c10d rendezvous, and the job goes on while at least ``min_nodes`` run."""
    service_account: ObjectName | None = None
    """ServiceAccount the pods run as, one the Team lists in ``service_accounts``; default:
    the namespace's ``default``."""
    image_pull_secrets: list[ObjectName] = []
    """Secrets to pull the image with, ones the Team lists in ``image_pull_secrets``."""
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] | None = None
    """When the kubelet pulls the image; default: Kubernetes' (``Always`` for ``:latest``
    or no tag, else ``IfNotPresent``)."""
    priority_class: ObjectName | None = None
    """PriorityClass of the pods and of Volcano's PodGroup, one the Team lists in
    ``priority_classes``."""

    @field_validator("restart_policy", mode="before")
    @classmethod
    def _not_always(cls, value: Any) -> Any:
        if value == "Always":
            raise ValueError(
                "'Always' restarts the Master even after it exits 0, so the job never "
                "succeeds; use 'OnFailure' or 'ExitCode'"
            )
        return value

    @field_validator("env")
    @classmethod
    def _no_reserved_env(cls, env: dict[str, str]) -> dict[str, str]:
        bad = [(k, why) for k in env if (why := refused_env_reason(k, "PyTorchJob"))]
        if bad:
            raise ValueError(
                "; ".join(f"{k} may not be set: {why}" for k, why in bad) + " — remove it from env"
            )
        return env

    _refs = env_refs_validator("PyTorchJob")

    @model_validator(mode="after")
    def _coherent(self) -> PyTorchJob:
        if self.script is not None and self.command is not None:
            raise ValueError(
                "give script=Script.file('train.py') (shipped in a ConfigMap) or command=[...] "
                "(code inside the image), not both; with neither the image's ENTRYPOINT runs"
            )
        if self.command is not None and not self.command:
            raise ValueError("command is empty; give the program to run, e.g. ['python', 'x.py']")
        # The operator creates one Service per pod named <job>-worker-<i>; Services
        # are DNS-1035 labels, so the longest one must fit in 63 characters.
        if self.elastic is not None and self.elastic.min_nodes > self.nodes:
            raise ValueError(
                f"elastic.min_nodes {self.elastic.min_nodes} exceeds nodes {self.nodes}: nodes is "
                "the most Workers the job runs; raise nodes or lower min_nodes"
            )
        if self.workers > 0:
            longest = f"{self.object_name}-worker-{self.workers - 1}"
            if len(longest) > 63:
                raise ValueError(
                    f"name {self.name!r} is too long for {self.nodes} nodes: the operator's "
                    f"Service {longest!r} would exceed 63 characters; shorten the name to "
                    f"{63 - len(longest) + len(self.name)} characters"
                )
        check_volumes(self.volumes)
        return self

    @property
    def workers(self) -> int:
        """Worker pods: ``nodes - 1`` beside the Master, or ``nodes`` when elastic."""
        return self.nodes if self.elastic is not None else self.nodes - 1

    @property
    def object_name(self) -> str:
        """The Kubernetes name: ``<name>-r<run>`` with a run number, else the name."""
        return run_name(self.name, self.run)
