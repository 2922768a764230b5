"""The kustomize files of a cluster directory: what kustomize cannot know about CRD kinds.

Kustomize treats every kind it has no schema for as namespaced and knows no
name references inside CRD pod templates. Two small files fix that for the
kinds trainkit writes, so overlays (``namespace:``, ``namePrefix:``,
``images:``, generators) behave as they do for built-in kinds. They are one
kustomize Component per cluster, which the cluster's kustomization (all its Applications
together, what overlays build on) includes: kustomize refuses a file outside a
kustomization's directory, but not a directory, and a parent build merges the
configurations of what it includes.

No Application's own kustomization includes it. With no transformer in that build it
changes no byte of what Argo CD applies (tests/test_kustomize.py), yet it made each build
cost half again (kustomize v5.8.1, 200 objects: 0.55 against 0.36 CPU-s): a Component's
accumulator is made afresh and every resource appended to it again, each append comparing
its id with every resource before it (api/internal/target/kusttarget.go
accumulateDirectory, ``isComponent``; api/resmap/reswrangler.go ``Append``); the
name-reference pass walks every object (api/internal/accumulator/namereferencetransformer.go);
and a custom ``openapi`` schema makes the first scope question parse kustomize's built-in
Kubernetes schema as well (kyaml/openapi/openapi.go ``initSchema``). An overlay of one
Application's directory includes the Component itself.
"""

from __future__ import annotations

from typing import Any

from ..model.jaxjob import JAX_ROLES
from ..model.paddlejob import PADDLE_ROLES
from ..model.tfjob import TF_ROLES
from ..model.xgboostjob import XGBOOST_ROLES
from .kuberay import QUEUE_LABEL
from .meta import KUEUE_PRIORITY_LABEL, KUEUE_QUEUE_LABEL, VOLCANO_QUEUE_ANNOTATION

__all__ = [
    "CLUSTER_SCOPED",
    "KUSTOMIZE_CONFIG",
    "KUSTOMIZE_OPENAPI",
    "cluster_scoped_openapi",
    "kustomization",
    "kustomize_component",
    "kustomize_config",
]

KUSTOMIZE_CONFIG = "kustomizeconfig.yaml"
KUSTOMIZE_OPENAPI = "kustomize-openapi.yaml"

# (group, version, kind, plural) of the cluster-scoped CRD kinds trainkit writes.
CLUSTER_SCOPED = (
    ("scheduling.volcano.sh", "v1beta1", "Queue", "queues"),
    ("kueue.x-k8s.io", "v1beta2", "ResourceFlavor", "resourceflavors"),
    ("kueue.x-k8s.io", "v1beta2", "ClusterQueue", "clusterqueues"),
    ("kueue.x-k8s.io", "v1beta2", "WorkloadPriorityClass", "workloadpriorityclasses"),
    ("trainer.kubeflow.org", "v1alpha1", "ClusterTrainingRuntime", "clustertrainingruntimes"),
)

_POD_REFS = {
    "ConfigMap": [
        "volumes/configMap/name",
        "volumes/projected/sources/configMap/name",
        "containers/envFrom/configMapRef/name",
        "containers/env/valueFrom/configMapKeyRef/name",
        "initContainers/envFrom/configMapRef/name",
        "initContainers/env/valueFrom/configMapKeyRef/name",
    ],
    "Secret": [
        "volumes/secret/secretName",
        "volumes/projected/sources/secret/name",
        "containers/envFrom/secretRef/name",
        "containers/env/valueFrom/secretKeyRef/name",
        "initContainers/envFrom/secretRef/name",
        "initContainers/env/valueFrom/secretKeyRef/name",
        "imagePullSecrets/name",
    ],
    "PersistentVolumeClaim": ["volumes/persistentVolumeClaim/claimName"],
}

_REPLICATED_POD = "template/spec/replicatedJobs/template/spec/template/spec"
# Where each namespaced kind keeps pod specs that may refer to ConfigMaps, Secrets, claims.
_POD_SPECS = (
    ("PyTorchJob", "spec/pytorchReplicaSpecs/Master/template/spec"),
    ("PyTorchJob", "spec/pytorchReplicaSpecs/Worker/template/spec"),
    ("MPIJob", "spec/mpiReplicaSpecs/Launcher/template/spec"),
    ("MPIJob", "spec/mpiReplicaSpecs/Worker/template/spec"),
    *(("TFJob", f"spec/tfReplicaSpecs/{role}/template/spec") for role in TF_ROLES),
    *(("PaddleJob", f"spec/paddleReplicaSpecs/{role}/template/spec") for role in PADDLE_ROLES),
    *(("XGBoostJob", f"spec/xgbReplicaSpecs/{role}/template/spec") for role in XGBOOST_ROLES),
    *(("JAXJob", f"spec/jaxReplicaSpecs/{role}/template/spec") for role in JAX_ROLES),
    # paddle-operator's PaddleJob (batch.paddlepaddle.org): the same kind name, other paths.
    ("PaddleJob", "spec/ps/template/spec"),
    ("PaddleJob", "spec/worker/template/spec"),
    ("PaddleJob", "spec/heter/template/spec"),
    ("RayJob", "spec/rayClusterSpec/headGroupSpec/template/spec"),
    ("RayJob", "spec/rayClusterSpec/workerGroupSpecs/template/spec"),
    ("RayJob", "spec/submitterPodTemplate/spec"),
    ("RayCluster", "spec/headGroupSpec/template/spec"),
    ("RayCluster", "spec/workerGroupSpecs/template/spec"),
    ("TrainJob", f"spec/runtimePatches/trainingRuntimeSpec/{_REPLICATED_POD}"),
    ("TrainingRuntime", f"spec/{_REPLICATED_POD}"),
)


def kustomization(resources: list[str], *, component: str | None) -> dict[str, Any]:
    """A kustomization of ``resources`` (files, or directories of other kustomizations),
    including the cluster's Component at ``component`` (a relative directory)."""
    k: dict[str, Any] = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization"}
    if component is not None:
        k["components"] = [component]
    k["resources"] = resources
    return k


def kustomize_component() -> dict[str, Any]:
    """The Component carrying ``KUSTOMIZE_CONFIG`` and ``KUSTOMIZE_OPENAPI``: a
    kustomization including it, and any overlay above that, know the CRD fields (a
    parent build merges its resources' configurations)."""
    return {
        "apiVersion": "kustomize.config.k8s.io/v1alpha1",
        "kind": "Component",
        "configurations": [KUSTOMIZE_CONFIG],
        "openapi": {"path": KUSTOMIZE_OPENAPI},
    }


def kustomize_config() -> dict[str, Any]:
    """Name references inside CRD pod templates (one fieldSpec per path: kustomize has no
    wildcards), and ``spec.trainer.image`` for ``images:``."""
    name_refs = []
    for kind, paths in _POD_REFS.items():
        specs = [{"kind": k, "path": f"{base}/{p}"} for k, base in _POD_SPECS for p in paths]
        name_refs.append({"kind": kind, "version": "v1", "fieldSpecs": specs})
    name_refs += [
        {
            "kind": kind,
            "group": "trainer.kubeflow.org",
            "version": "v1alpha1",
            "fieldSpecs": [{"kind": "TrainJob", "path": "spec/runtimeRef/name"}],
        }
        for kind in ("ClusterTrainingRuntime", "TrainingRuntime")
    ]
    # A RayJob names its RayCluster in clusterSelector (KubeRay's ray.io/cluster key): a
    # prefix or suffix an overlay gives the RayCluster reaches the selector too.
    name_refs.append(
        {
            "kind": "RayCluster",
            "group": "ray.io",
            "version": "v1",
            "fieldSpecs": [{"kind": "RayJob", "path": "spec/clusterSelector/ray.io\\/cluster"}],
        }
    )
    # kustomize field paths split on "/": the annotation key's own slash is escaped.
    queue_annotation = "annotations/" + VOLCANO_QUEUE_ANNOTATION.replace("/", "\\/")
    ray_queue_label = QUEUE_LABEL.replace("/", "\\/")
    name_refs.append(
        {
            "kind": "Queue",
            "group": "scheduling.volcano.sh",
            "version": "v1beta1",
            "fieldSpecs": [
                {"kind": "PyTorchJob", "path": "spec/runPolicy/schedulingPolicy/queue"},
                {"kind": "PyTorchJob", "path": f"metadata/{queue_annotation}"},
                {"kind": "MPIJob", "path": "spec/runPolicy/schedulingPolicy/queue"},
                {"kind": "MPIJob", "path": f"metadata/{queue_annotation}"},
                {"kind": "TFJob", "path": "spec/runPolicy/schedulingPolicy/queue"},
                {"kind": "TFJob", "path": f"metadata/{queue_annotation}"},
                {"kind": "PaddleJob", "path": "spec/runPolicy/schedulingPolicy/queue"},
                {"kind": "PaddleJob", "path": f"metadata/{queue_annotation}"},
                {"kind": "PaddleJob", "path": "spec/schedulingPolicy/queue"},
                {"kind": "XGBoostJob", "path": "spec/runPolicy/schedulingPolicy/queue"},
                {"kind": "XGBoostJob", "path": f"metadata/{queue_annotation}"},
                {"kind": "JAXJob", "path": "spec/runPolicy/schedulingPolicy/queue"},
                {"kind": "JAXJob", "path": f"metadata/{queue_annotation}"},
                # KubeRay reads a RayJob's queue from this label (volcano_scheduler.go).
                {"kind": "RayJob", "path": f"metadata/labels/{ray_queue_label}"},
                {"kind": "RayJob", "path": f"metadata/{queue_annotation}"},
                {"kind": "RayCluster", "path": f"metadata/labels/{ray_queue_label}"},
                {"kind": "RayCluster", "path": f"metadata/{queue_annotation}"},
                {
                    "kind": "TrainJob",
                    "path": f"spec/runtimePatches/trainingRuntimeSpec/template/metadata/"
                    f"{queue_annotation}",
                },
                {
                    "kind": "ClusterTrainingRuntime",
                    "path": f"spec/template/metadata/{queue_annotation}",
                },
                {"kind": "TrainingRuntime", "path": f"spec/template/metadata/{queue_annotation}"},
                # A child queue names its parent; Volcano's own "root" is no object of the
                # build, so kustomize leaves that name alone.
                {"kind": "Queue", "path": "spec/parent"},
            ],
        }
    )
    # Kueue: a LocalQueue names its ClusterQueue, which names its flavors; every job names its
    # LocalQueue in a label.
    kueue_label = "metadata/labels/" + KUEUE_QUEUE_LABEL.replace("/", "\\/")
    priority_label = "metadata/labels/" + KUEUE_PRIORITY_LABEL.replace("/", "\\/")
    job_kinds = sorted({k for k, _ in _POD_SPECS if k != "TrainingRuntime"})
    name_refs += [
        {
            "kind": "ClusterQueue",
            "group": "kueue.x-k8s.io",
            "version": "v1beta2",
            "fieldSpecs": [{"kind": "LocalQueue", "path": "spec/clusterQueue"}],
        },
        {
            "kind": "ResourceFlavor",
            "group": "kueue.x-k8s.io",
            "version": "v1beta2",
            "fieldSpecs": [{"kind": "ClusterQueue", "path": "spec/resourceGroups/flavors/name"}],
        },
        {
            "kind": "LocalQueue",
            "group": "kueue.x-k8s.io",
            "version": "v1beta2",
            "fieldSpecs": [{"kind": k, "path": kueue_label} for k in job_kinds],
        },
        {
            "kind": "WorkloadPriorityClass",
            "group": "kueue.x-k8s.io",
            "version": "v1beta2",
            "fieldSpecs": [{"kind": k, "path": priority_label} for k in job_kinds],
        },
    ]
    return {
        "nameReference": name_refs,
        "images": [{"kind": "TrainJob", "path": "spec/trainer/image"}],
    }


def cluster_scoped_openapi() -> dict[str, Any]:
    """A swagger document whose paths tell kustomize's namespace transformer which CRD
    kinds are cluster-scoped (a GET path without ``namespaces/{namespace}``).

    Kustomize then leaves them without a namespace under a ``namespace:``
    overlay. It replaces kustomize's built-in schema, so strategic-merge
    patches of built-in kinds with merge keys (Deployment containers) would
    replace lists: the tree holds only Namespaces, ConfigMaps and CRD kinds,
    whose patches merge the same either way.
    """
    paths = {
        f"/apis/{g}/{v}/{plural}/{{name}}": {
            "get": {
                "x-kubernetes-group-version-kind": {"group": g, "version": v, "kind": k},
                "responses": {"200": {"description": "OK"}},
            }
        }
        for g, v, k, plural in CLUSTER_SCOPED
    }
    return {
        "swagger": "2.0",
        "info": {"title": "cluster-scoped CRD kinds written by trainkit", "version": "v1"},
        "paths": paths,
        "definitions": {},
    }
