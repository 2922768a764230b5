"""User-facing definition models; pure data, no I/O."""

from .base import ModelError, TrainkitModel
from .job import WORKSPACE, Resources, Script, Toleration, Volume
from .platform import ArgoCD, Capacity, Cluster, Queue, Team
from .pytorchjob import PyTorchJob
from .trainer import ClusterTrainingRuntime, TrainingRuntime, TrainJob

__all__ = [
    "WORKSPACE",
    "ArgoCD",
    "Capacity",
    "Cluster",
    "ClusterTrainingRuntime",
    "ModelError",
    "PyTorchJob",
    "Queue",
    "Resources",
    "Script",
    "Team",
    "Toleration",
    "TrainJob",
    "TrainingRuntime",
    "TrainkitModel",
    "Volume",
]

PLATFORM_KINDS: tuple[type[TrainkitModel], ...] = (
    ArgoCD,
    Cluster,
    ClusterTrainingRuntime,
    Queue,
    Team,
    TrainingRuntime,
)
JOB_KINDS: tuple[type[TrainkitModel], ...] = (PyTorchJob, TrainJob)
