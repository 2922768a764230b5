"""The pods of the deployed jobs, from the deployed objects alone.

The effective model reads a job's rendered object (and a TrainJob's runtime
object); from its planned job it takes only the kind, the object's name and
the cluster's GPU resource. A deployed job has no definition in this tree (it
may be gone from it), so a stand-in carries those three, built from the object
itself and the cluster as the definitions now declare it (or, for a removed
cluster, its GPU resource as the deployed objects name it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..effective import EffectiveJob, effective_job
from ..load import Definition
from ..model import (
    Cluster,
    JAXJob,
    Job,
    MPIJob,
    PaddleJob,
    PyTorchJob,
    RayCluster,
    RayJob,
    TFJob,
    TrainJob,
    XGBoostJob,
)
from ..render.meta import SOURCE_ANNOTATION
from ..resolve import PlannedJob
from .trees import JOB_KINDS, Key, Obj

__all__ = ["deployed_effective", "gpu_resource_of"]

_RUN = re.compile(r"^(.+)-r([0-9]+)$")
_DEFAULT_GPU = "nvidia.com/gpu"


def deployed_effective(objects: Mapping[Key, Obj], cluster: Cluster) -> dict[Key, EffectiveJob]:
    """The effective pods of each deployed job trainkit can read; others are left out."""
    out: dict[Key, EffectiveJob] = {}
    for key, obj in objects.items():
        if obj.kind not in JOB_KINDS:
            continue
        planned = _stand_in(obj, cluster)
        if planned is None:
            continue
        runtime = _runtime(obj, objects) if obj.kind == "TrainJob" else None
        if obj.kind == "TrainJob" and runtime is None:
            continue  # its runtime is not deployed: the controller could not run it either
        try:
            out[key] = effective_job(planned, obj.body, runtime)
        except (KeyError, TypeError, ValueError, AttributeError, StopIteration):
            # Written by an older trainkit or by hand in a shape the model does not read:
            # the plan still lists the object, without its pods.
            continue
    return out


def _stand_in(obj: Obj, cluster: Cluster) -> PlannedJob | None:
    # Only what the effective model reads (the object's name comes from name and run);
    # model_construct skips validation, which needs fields the deployed object lacks.
    job: Job
    fields: dict[str, Any]
    if obj.kind == "TrainJob":
        m = _RUN.match(obj.name)
        if m is None:
            return None
        fields = {"name": m[1], "run": int(m[2])}
        job = TrainJob.model_construct(**fields)
    else:
        fields = {"name": obj.name, "run": None}
        if obj.kind == "MPIJob":
            job = MPIJob.model_construct(**fields)
        elif obj.kind == "TFJob":
            job = TFJob.model_construct(**fields)
        elif obj.kind == "PaddleJob":
            job = PaddleJob.model_construct(**fields)
        elif obj.kind == "XGBoostJob":
            job = XGBoostJob.model_construct(**fields)
        elif obj.kind == "JAXJob":
            job = JAXJob.model_construct(**fields)
        elif obj.kind == "RayJob":
            job = RayJob.model_construct(**fields)
        elif obj.kind == "RayCluster":
            job = RayCluster.model_construct(**fields)
        else:
            job = PyTorchJob.model_construct(**fields)
    source = obj.annotation(SOURCE_ANNOTATION) or obj.path
    definition = Definition(obj=job, file=source, team=obj.team)
    return PlannedJob(job, definition, cluster, obj.namespace or "", None)


def _runtime(obj: Obj, objects: Mapping[Key, Obj]) -> dict[str, Any] | None:
    spec = obj.body.get("spec")
    ref = spec.get("runtimeRef") if isinstance(spec, dict) else None
    if not isinstance(ref, dict):
        return None
    kind, name = ref.get("kind", "ClusterTrainingRuntime"), ref.get("name")
    namespace = obj.namespace or "" if kind == "TrainingRuntime" else ""
    found = objects.get((str(kind), namespace, str(name)))
    return found.body if found is not None else None


def gpu_resource_of(objects: Mapping[Key, Obj]) -> str:
    """The GPU resource the deployed objects of a cluster count in (for a removed cluster)."""
    names: set[str] = set()
    for obj in objects.values():
        _resource_names(obj.body, names)
    gpus = sorted(n for n in names if "gpu" in n.lower())
    return gpus[0] if gpus else _DEFAULT_GPU


def _resource_names(value: Any, names: set[str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ("limits", "requests", "capability", "deserved", "resource") and isinstance(
                item, dict
            ):
                names.update(str(k) for k in item)
            _resource_names(item, names)
    elif isinstance(value, list):
        for item in value:
            _resource_names(item, names)
