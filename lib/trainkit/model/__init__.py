"""User-facing definition models; pure data, no I/O."""

from .autoscaling import ExternalMetric, ObjectMetric, PodsMetric, ResourceMetric
from .base import ModelError, TrainkitModel
from .env import ConfigMapEnv, ConfigMapKey, PodField, ResourceField, SecretEnv, SecretKey
from .init_containers import InitContainer
from .jaxjob import JAXJob
from .job import ACCELERATORS, GENERATED_VOLUMES, WORKSPACE, Resources, Script, Toleration, Volume
from .kueue import (
    AdmissionCheckRule,
    ClusterQueue,
    FlavorQuota,
    ResourceFlavor,
    WorkloadPriorityClass,
)
from .lifecycle import Hook
from .mpijob import MPIJob
from .operator_job import Role
from .paddlejob import PaddleJob
from .patches import PatchOp, PlatformPatch
from .placement import KueueTopology, NodeLabel, PodAffinity, Topology
from .platform import ArgoCD, Capacity, Cluster, Queue, Team
from .probes import Probe
from .pytorchjob import Elastic, PyTorchJob
from .raycluster import RayCluster
from .rayjob import DeletionRule, HeadService, RayJob, RayStart, RuntimeEnv, WorkerGroup
from .rules import HostDevice, NetworkProfile, Policy
from .security import ContainerSecurityContext, SecurityContext
from .tfjob import TFJob
from .trainer import ClusterTrainingRuntime, RuntimeMPI, TrainingRuntime, TrainJob
from .trainer_flux import RuntimeFlux
from .trainer_initializers import DataSource, Initializer, RuntimeInitializers
from .volumes import (
    ConfigMapVolume,
    CsiVolume,
    EmptyDir,
    HostPath,
    SecretVolume,
    ServiceAccountToken,
)
from .xgboostjob import XGBoostJob

__all__ = [
    "ACCELERATORS",
    "GENERATED_VOLUMES",
    "WORKSPACE",
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
    "Job",
    "KueueTopology",
    "MPIJob",
    "ModelError",
    "NetworkProfile",
    "NodeLabel",
    "ObjectMetric",
    "OperatorJobs",
    "PaddleJob",
    "PatchOp",
    "PlatformPatch",
    "PodAffinity",
    "PodField",
    "PodsMetric",
    "Policy",
    "Probe",
    "PyTorchJob",
    "Queue",
    "RayCluster",
    "RayJob",
    "RayStart",
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
    "TFJob",
    "Team",
    "Toleration",
    "Topology",
    "TrainJob",
    "TrainingRuntime",
    "TrainkitModel",
    "Volume",
    "WorkerGroup",
    "WorkloadPriorityClass",
    "XGBoostJob",
]

PLATFORM_KINDS: tuple[type[TrainkitModel], ...] = (
    ArgoCD,
    Cluster,
    ClusterQueue,
    ClusterTrainingRuntime,
    NetworkProfile,
    PlatformPatch,
    Policy,
    Queue,
    ResourceFlavor,
    Team,
    TrainingRuntime,
    WorkloadPriorityClass,
)
JOB_KINDS = (
    PyTorchJob, MPIJob, TFJob, PaddleJob, XGBoostJob, JAXJob, RayJob, RayCluster, TrainJob
)  # fmt: skip

Job = PyTorchJob | MPIJob | TFJob | PaddleJob | XGBoostJob | JAXJob | RayJob | RayCluster | TrainJob
"""Every job kind a definition may declare."""
OperatorJobs = (PyTorchJob, MPIJob, TFJob, PaddleJob, XGBoostJob, JAXJob, RayJob, RayCluster)
"""The kinds an operator runs from their own pod templates (not through a runtime)."""
