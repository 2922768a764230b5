"""User-facing definition models; pure data, no I/O."""

from .base import ModelError, TrainkitModel
from .env import ConfigMapKey, SecretKey
from .job import ACCELERATORS, GENERATED_VOLUMES, WORKSPACE, Resources, Script, Toleration, Volume
from .placement import NodeLabel, Topology
from .platform import ArgoCD, Capacity, Cluster, Queue, Team
from .pytorchjob import Elastic, PyTorchJob
from .rules import NetworkProfile, Policy
from .trainer import ClusterTrainingRuntime, TrainingRuntime, TrainJob

__all__ = [
    "ACCELERATORS",
    "GENERATED_VOLUMES",
    "WORKSPACE",
    "ArgoCD",
    "Capacity",
    "Cluster",
    "ClusterTrainingRuntime",
    "ConfigMapKey",
    "Elastic",
    "ModelError",
    "NetworkProfile",
    "NodeLabel",
    "Policy",
    "PyTorchJob",
    "Queue",
    "Resources",
    "Script",
    "SecretKey",
    "Team",
    "Toleration",
    "Topology",
    "TrainJob",
    "TrainingRuntime",
    "TrainkitModel",
    "Volume",
]

PLATFORM_KINDS: tuple[type[TrainkitModel], ...] = (
    ArgoCD,
    Cluster,
    ClusterTrainingRuntime,
    NetworkProfile,
    Policy,
    Queue,
    Team,
    TrainingRuntime,
)
JOB_KINDS: tuple[type[TrainkitModel], ...] = (PyTorchJob, TrainJob)
