"""trainkit: Python definitions of distributed training jobs → GitOps manifests.

Only the names in ``__all__`` are public; every module is an implementation detail.
"""

from .errors import (
    DefinitionError,
    ManifestError,
    Problem,
    RehearsalError,
    SetupError,
    StaleOutputError,
    TrainkitError,
)
from .model import (
    ArgoCD,
    Capacity,
    Cluster,
    ClusterTrainingRuntime,
    NetworkProfile,
    Policy,
    PyTorchJob,
    Queue,
    Resources,
    Script,
    Team,
    Toleration,
    TrainingRuntime,
    TrainJob,
    Volume,
)

__all__ = [
    "ArgoCD",
    "Capacity",
    "Cluster",
    "ClusterTrainingRuntime",
    "DefinitionError",
    "ManifestError",
    "NetworkProfile",
    "Policy",
    "Problem",
    "PyTorchJob",
    "Queue",
    "RehearsalError",
    "Resources",
    "Script",
    "SetupError",
    "StaleOutputError",
    "Team",
    "Toleration",
    "TrainJob",
    "TrainingRuntime",
    "TrainkitError",
    "Volume",
]
