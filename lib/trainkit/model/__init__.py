"""User-facing definition models; pure data, no I/O."""

from .base import ModelError, TrainkitModel
from .job import WORKSPACE, Resources, Script, Toleration, Volume
from .platform import ArgoCD, Capacity, Cluster, Queue, Team
from .pytorchjob import PyTorchJob

__all__ = [
    "WORKSPACE",
    "ArgoCD",
    "Capacity",
    "Cluster",
    "ModelError",
    "PyTorchJob",
    "Queue",
    "Resources",
    "Script",
    "Team",
    "Toleration",
    "TrainkitModel",
    "Volume",
]

PLATFORM_KINDS: tuple[type[TrainkitModel], ...] = (ArgoCD, Cluster, Queue, Team)
JOB_KINDS: tuple[type[TrainkitModel], ...] = (PyTorchJob,)
