"""Which fields of an existing object a new version may not change in place.

The API server rejects such an update ("field is immutable"), so Argo CD's
sync fails and the object keeps its old spec; comparing the rendered object
with its deployed version finds that before the commit.

A TrainJob's whole spec but ``suspend`` counts, added or removed fields
included: the controller builds the JobSet once, and trainkit never suspends,
so even a change CEL would let through (adding ``initializer``) or only
allows while suspended (``runtimePatches``) would not take effect.

A PyTorchJob's spec counts as a whole too, though the API server accepts most
changes: a finished job never runs again, and on a running one the operator
builds replacement pods from the new template (training-operator v1.9
pkg/controller.v1/common/pod.go), one job running two versions of its code. An
MPIJob's likewise: mpi-operator keeps running workers and creates missing ones from the
new template (kubeflow/mpi-operator pkg/controller/mpi_job_controller.go).

The runtimes' JobSet policies follow the CRDs' CEL
transition rules exactly: ``self == oldSelf`` runs only when the field is set
in both versions, so adding or removing one is allowed and not reported (a
false alarm there would force renaming a runtime and, with it, every job
that refers to it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

__all__ = ["IMMUTABLE_KINDS", "in_place_changes"]

_TRAINER = "trainer.kubeflow.org"
_KUBEFLOW = "kubeflow.org"
_JOBSET_SPEC = ("spec", "template", "spec")
_JOBSET_IMMUTABLE = (
    "failurePolicy",
    "network",
    "startupPolicy",
    "successPolicy",
    "volumeClaimPolicies",
)
_ABSENT: Final[Any] = object()

_Rule = Callable[[dict[str, Any], dict[str, Any]], list[str]]


def in_place_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Dotted paths of the immutable fields that differ between two versions of one object.

    One path per differing immediate child of an immutable object
    (``spec.trainer.image``), a list-map item by its name
    (``spec.template.spec.replicatedJobs[node].dependsOn``); sorted. Kinds
    without rules give ``[]``.
    """
    group = str(new.get("apiVersion", "")).rpartition("/")[0]
    rule = _RULES.get((group, str(new.get("kind", ""))))
    return sorted(set(rule(old, new))) if rule is not None else []


def _whole_spec(old: dict[str, Any], new: dict[str, Any], ignore: set[str]) -> list[str]:
    old_spec, new_spec = _dict(_at(old, "spec")), _dict(_at(new, "spec"))
    changed: list[str] = []
    for key in sorted((old_spec.keys() | new_spec.keys()) - ignore):
        changed += _diff(_at(old_spec, key), _at(new_spec, key), f"spec.{key}", presence=True)
    return changed


def _spec_but_suspend(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    return _whole_spec(old, new, {"suspend"})


def _operator_job(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    # runPolicy.suspend is Kueue's to flip (and ignored by Argo CD's diff).
    changed = _whole_spec(old, new, set())
    return [c for c in changed if c != "spec.runPolicy.suspend"]


def _runtime(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    where = ".".join(_JOBSET_SPEC)
    changed: list[str] = []
    for key in _JOBSET_IMMUTABLE:
        old_value, new_value = _at(old, *_JOBSET_SPEC, key), _at(new, *_JOBSET_SPEC, key)
        changed += _diff(old_value, new_value, f"{where}.{key}", presence=False)
    # replicatedJobs is a list-map keyed by name: CEL pairs items by name, not position.
    old_jobs = _by_name(_at(old, *_JOBSET_SPEC, "replicatedJobs"))
    new_jobs = _by_name(_at(new, *_JOBSET_SPEC, "replicatedJobs"))
    for name in sorted(old_jobs.keys() & new_jobs.keys()):
        path = f"{where}.replicatedJobs[{name}].dependsOn"
        old_value, new_value = _at(old_jobs[name], "dependsOn"), _at(new_jobs[name], "dependsOn")
        changed += _diff(old_value, new_value, path, presence=False)
    return changed


# What KubeRay v1.7.0 applies to a running RayCluster (ray-operator/controllers/ray/
# raycluster_controller.go reconcilePods): each listed group's count within minReplicas and
# maxReplicas (utils/util.go GetWorkerGroupDesiredReplicas), new groups' pods. Pods are made
# from the template once (createHeadPod, createWorkerPod) and never updated: without
# upgradeStrategy Recreate an edited template reaches only pods made later, so one cluster
# would run two versions; a group taken out of the spec keeps its pods, which no loop visits.
_RAY_GROUP_SCALING = frozenset({"replicas", "minReplicas", "maxReplicas"})


def _raycluster(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    changed = _whole_spec(old, new, {"suspend", "workerGroupSpecs"})
    old_groups = _by_group(_at(old, "spec", "workerGroupSpecs"))
    new_groups = _by_group(_at(new, "spec", "workerGroupSpecs"))
    for name in sorted(old_groups.keys() - new_groups.keys()):
        changed.append(f"spec.workerGroupSpecs[{name}]")
    for name in sorted(old_groups.keys() & new_groups.keys()):
        was, now = old_groups[name], new_groups[name]
        for key in sorted((was.keys() | now.keys()) - _RAY_GROUP_SCALING):
            path = f"spec.workerGroupSpecs[{name}].{key}"
            changed += _diff(_at(was, key), _at(now, key), path, presence=True)
    return changed


def _by_group(items: Any) -> dict[str, dict[str, Any]]:
    if not isinstance(items, list):
        return {}
    return {str(i["groupName"]): i for i in items if isinstance(i, dict) and "groupName" in i}


_RULES: dict[tuple[str, str], _Rule] = {
    (_TRAINER, "TrainJob"): _spec_but_suspend,
    (_KUBEFLOW, "PyTorchJob"): _operator_job,
    # mpi-operator creates missing pods only and never updates a running worker
    # (pkg/controller/mpi_job_controller.go getOrCreateWorker): an edit mixes templates.
    (_KUBEFLOW, "MPIJob"): _operator_job,
    (_KUBEFLOW, "TFJob"): _operator_job,
    (_KUBEFLOW, "PaddleJob"): _operator_job,
    (_KUBEFLOW, "XGBoostJob"): _operator_job,
    (_KUBEFLOW, "JAXJob"): _operator_job,
    # paddle-operator creates each pod once from the template it reads then
    # (controllers/paddlejob_controller.go): an edit would mix pods of two templates.
    ("batch.paddlepaddle.org", "PaddleJob"): _operator_job,
    # KubeRay builds the RayCluster and the submitter once, from the spec it reads when the
    # job starts (ray-operator/controllers/ray/rayjob_controller.go
    # getOrCreateRayClusterInstance): an edit changes nothing that runs. suspend is Kueue's.
    ("ray.io", "RayJob"): _spec_but_suspend,
    ("ray.io", "RayCluster"): _raycluster,
    (_TRAINER, "ClusterTrainingRuntime"): _runtime,
    (_TRAINER, "TrainingRuntime"): _runtime,
}

IMMUTABLE_KINDS: frozenset[str] = frozenset(kind for _, kind in _RULES)
"""Kinds with rules; for any other kind ``in_place_changes`` is ``[]`` and need not be called."""


def _diff(old: Any, new: Any, path: str, *, presence: bool) -> list[str]:
    """``path`` or its differing immediate children; a missing side counts only with ``presence``."""
    if old is _ABSENT or new is _ABSENT:
        return [path] if presence and old is not new else []
    if old == new:
        return []
    if isinstance(old, dict) and isinstance(new, dict):
        keys = sorted(old.keys() | new.keys())
        return [f"{path}.{k}" for k in keys if old.get(k, _ABSENT) != new.get(k, _ABSENT)]
    return [path]


def _at(obj: Any, *keys: str) -> Any:
    """The value at ``keys``, or ``_ABSENT``; an explicit null is absent, as the API server treats it."""
    for key in keys:
        if not isinstance(obj, dict) or obj.get(key) is None:
            return _ABSENT
        obj = obj[key]
    return obj


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _by_name(items: Any) -> dict[str, Any]:
    if not isinstance(items, list):
        return {}
    return {str(i["name"]): i for i in items if isinstance(i, dict) and "name" in i}
