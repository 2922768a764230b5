"""Containers a job runs besides its own: init containers that finish before it starts, and
native sidecars that run beside it and stop with it.

A sidecar must never keep a pod Running once training ends (the job would never complete and
keep its GPUs), so a sidecar is only ever a native one: an init container with
``restartPolicy: Always`` (Kubernetes ≥ 1.29), which the kubelet stops when the pod's own
containers have ended. Each is held to the job's container's rules: an image the registry
policy allows, resources whose requests equal the limits unless the policy allows less, no
GPUs (those are the job's container's), and the job's volumes only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from pydantic import AfterValidator, Field, WithJsonSchema, model_validator

from ..injected_env.device_env import DEVICES
from .base import TrainkitModel
from .fields import Arg, DNS1123Label, EnvName, EnvValue
from .job import Resources, repeated
from .security import ContainerSecurityContext

__all__ = ["RESERVED_CONTAINERS", "InitContainer", "check_init_containers"]

RESERVED_CONTAINERS = frozenset(
    {
        # The job's own container, per kind (render/: training_operator, mpi_operator,
        # tensorflow, paddle, xgboost, jax, kuberay).
        "pytorch", "mpi", "tensorflow", "paddle", "xgboost", "jax", "ray-head", "ray-worker",
        "ray-job-submitter",
        # What trainkit and the operators add: the MPI launcher's wait (render/mpi_wait.py),
        # the Training Operator's PyTorchJob Worker init container (v1.9.4
        # pkg/controller.v1/pytorch/initcontainer.go), KubeRay's autoscaler.
        "wait-for-hosts", "init-pytorch", "autoscaler",
        # A Trainer runtime's node container (render/kubeflow_trainer.py NODE) and the init
        # container Trainer's Flux plugin adds (trainer v2.3.0 plugins/flux/flux.go).
        "node", "flux-installer",
    }
)  # fmt: skip
"""Container names a job's own containers may not take: a pod's container names are unique."""


def _image_ref(v: str) -> str:
    if not v or any(c.isspace() for c in v):
        raise ValueError(
            f"{v!r} is not an image reference (no spaces, not empty), e.g. "
            "'registry.example.com/ml/tools:1.4'"
        )
    return v


class InitContainer(TrainkitModel):
    """A container of every pod that runs the job's code, besides the job's own: it runs to
    completion before the job's container starts, e.g. ``InitContainer(name="fetch",
    command=["sh", "-c", "cp -r /data/shard /scratch"], mounts=["scratch"],
    resources=Resources(cpu=2, memory="4Gi"))``; with ``sidecar=True`` it starts first and
    runs beside the job's container until that ends (a native sidecar)."""

    name: DNS1123Label
    """Container name, unique in the pod (not the job's container's, e.g. ``pytorch``)."""
    image: (
        Annotated[
            str, AfterValidator(_image_ref), WithJsonSchema({"type": "string", "pattern": r"^\S+$"})
        ]
        | None
    ) = None
    """Its image, one the registry policy allows; default: the job's image on each cluster."""
    command: list[Arg] = Field(min_length=1)
    """What it runs, e.g. ``["python3", "-m", "prefetch"]``."""
    args: list[Arg] = []
    """Arguments of the command."""
    env: dict[EnvName, EnvValue] = {}
    """Its environment variables (it gets none of the job's or the operator's)."""
    resources: Resources
    """Its CPU and memory, the same rules as the job's (requests equal limits unless
    ``Policy.burstable`` allows less); no GPUs. The scheduler counts an init container
    against the pod while it runs (the pod needs the larger of the biggest init container
    and its containers), a sidecar for the pod's whole life."""
    sidecar: bool = False
    """Run beside the job's container instead of before it (``restartPolicy: Always``):
    started in order before it, restarted when it exits, stopped when the job's container
    has ended, so the pod still completes. Needs Kubernetes ≥ 1.29."""
    mounts: list[DNS1123Label] = []
    """Names of the job's volumes it mounts, at the same paths (a claim's name for a
    ``Volume``), e.g. ``["scratch"]``."""
    security_context: ContainerSecurityContext | None = None
    """Its own security settings; default: the job's ``container_security_context``."""

    @model_validator(mode="after")
    def _coherent(self) -> InitContainer:
        if self.name in RESERVED_CONTAINERS:
            raise ValueError(
                f"name {self.name!r} is taken by a container trainkit or the operator adds "
                f"({', '.join(sorted(RESERVED_CONTAINERS))}); choose another"
            )
        if self.resources.gpu:
            raise ValueError(
                f"resources.gpu is {self.resources.gpu}: GPUs belong to the job's container; "
                "an init container or sidecar gets none (the scheduler would hold them for the "
                "pod's whole life for a sidecar)"
            )
        twice = repeated(self.mounts)
        if twice:
            raise ValueError(f"mounts lists {twice[0]!r} twice; list each volume once")
        # What the container runtime reads would expose GPUs the pod was not given, refused as
        # in the job's env (injected_env/device_env.py); the operators' names are not set here.
        devices = sorted(k for k in self.env if DEVICES.reason(k))
        if devices:
            raise ValueError(
                f"env sets {devices[0]}, which the container runtime reads to expose GPUs; an "
                "init container or sidecar gets none: remove it"
            )
        return self


def check_init_containers(containers: Sequence[InitContainer], volumes: Sequence[str]) -> None:
    """Unique names, and mounts of the job's own volumes (``volumes``: their names); raises
    ValueError for the job's model validator."""
    twice = repeated(c.name for c in containers)
    if twice:
        raise ValueError(f"two init containers are named {twice[0]!r}; name each once")
    for c in containers:
        unknown = [m for m in c.mounts if m not in volumes]
        if unknown:
            raise ValueError(
                f"init container {c.name!r} mounts {unknown[0]!r}, which is none of the job's "
                f"volumes ({', '.join(repr(v) for v in volumes) or 'none'}); add it to volumes "
                "or drop it from mounts"
            )
