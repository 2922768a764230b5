"""trainkit: Python definitions of distributed training jobs → GitOps manifests.

Only the names in ``__all__`` are public; every module is an implementation detail.
They are imported on first use, so commands that need no model (a no-change
``trainkit synth``) start without loading pydantic.
"""

from __future__ import annotations

import importlib
import typing

__version__ = "0.2.0"

if typing.TYPE_CHECKING:
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
        AdmissionCheckRule,
        ArgoCD,
        Capacity,
        Cluster,
        ClusterQueue,
        ClusterTrainingRuntime,
        ConfigMapEnv,
        ConfigMapKey,
        ConfigMapVolume,
        ContainerSecurityContext,
        CsiVolume,
        DataSource,
        DeletionRule,
        Elastic,
        EmptyDir,
        ExternalMetric,
        FlavorQuota,
        HeadService,
        Hook,
        HostDevice,
        HostPath,
        InitContainer,
        Initializer,
        JAXJob,
        KueueTopology,
        ModelError,
        MPIJob,
        NetworkProfile,
        NodeLabel,
        ObjectMetric,
        PaddleJob,
        PatchOp,
        PlatformPatch,
        PodAffinity,
        PodField,
        PodsMetric,
        Policy,
        Probe,
        PyTorchJob,
        Queue,
        RayCluster,
        RayJob,
        RayStart,
        ResourceField,
        ResourceFlavor,
        ResourceMetric,
        Resources,
        Role,
        RuntimeEnv,
        RuntimeFlux,
        RuntimeInitializers,
        RuntimeMPI,
        Script,
        SecretEnv,
        SecretKey,
        SecretVolume,
        SecurityContext,
        ServiceAccountToken,
        Team,
        TFJob,
        Toleration,
        Topology,
        TrainingRuntime,
        TrainJob,
        Volume,
        WorkerGroup,
        WorkloadPriorityClass,
        XGBoostJob,
    )

__all__ = [
    "AdmissionCheckRule",
    "ArgoCD",
    "Capacity",
    "Cluster",
    "ClusterQueue",
    "ClusterTrainingRuntime",
    "ConfigMapEnv",
    "ConfigMapKey",
    "ConfigMapVolume",
    "ContainerSecurityContext",
    "CsiVolume",
    "DataSource",
    "DefinitionError",
    "DeletionRule",
    "Elastic",
    "EmptyDir",
    "ExternalMetric",
    "FlavorQuota",
    "HeadService",
    "Hook",
    "HostDevice",
    "HostPath",
    "InitContainer",
    "Initializer",
    "JAXJob",
    "KueueTopology",
    "MPIJob",
    "ManifestError",
    "ModelError",
    "NetworkProfile",
    "NodeLabel",
    "ObjectMetric",
    "PaddleJob",
    "PatchOp",
    "PlatformPatch",
    "PodAffinity",
    "PodField",
    "PodsMetric",
    "Policy",
    "Probe",
    "Problem",
    "PyTorchJob",
    "Queue",
    "RayCluster",
    "RayJob",
    "RayStart",
    "RehearsalError",
    "ResourceField",
    "ResourceFlavor",
    "ResourceMetric",
    "Resources",
    "Role",
    "RuntimeEnv",
    "RuntimeFlux",
    "RuntimeInitializers",
    "RuntimeMPI",
    "Script",
    "SecretEnv",
    "SecretKey",
    "SecretVolume",
    "SecurityContext",
    "ServiceAccountToken",
    "SetupError",
    "StaleOutputError",
    "TFJob",
    "Team",
    "Toleration",
    "Topology",
    "TrainJob",
    "TrainingRuntime",
    "TrainkitError",
    "Volume",
    "WorkerGroup",
    "WorkloadPriorityClass",
    "XGBoostJob",
    "__version__",
]

_ERRORS = frozenset(
    {
        "DefinitionError",
        "ManifestError",
        "Problem",
        "RehearsalError",
        "SetupError",
        "StaleOutputError",
        "TrainkitError",
    }
)
_HOME = {name: ".errors" if name in _ERRORS else ".model" for name in __all__ if name[0].isupper()}


def __getattr__(name: str) -> typing.Any:
    if name in _HOME:
        value = getattr(importlib.import_module(_HOME[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'trainkit' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
