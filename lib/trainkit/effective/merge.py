"""Kubernetes strategic merge patch, for the pod fields trainkit's objects carry.

Kubeflow Trainer applies a TrainJob's ``runtimePatches`` to the runtime's JobSet
spec with ``strategicpatch.StrategicMergePatch`` (trainer v2.3
pkg/runtime/core/trainingruntime.go, mergeRuntimePatches): maps merge key by key,
lists with a patch merge key merge item by item, every other list is replaced.
The merge keys are the ``patchMergeKey`` tags of k8s.io/api core/v1 and
jobset v1alpha2 types.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["strategic_merge"]

_MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "env": "name",
    "ports": "containerPort",
    "imagePullSecrets": "name",
    "schedulingGates": "name",
    "replicatedJobs": "name",
}


def strategic_merge(base: Any, patch: Any, field: str = "") -> Any:
    """``patch`` applied to ``base`` (neither is changed); ``null`` in a patch deletes."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for key, value in patch.items():
            if value is None:
                out.pop(key, None)
            elif key in out:
                out[key] = strategic_merge(out[key], value, key)
            else:
                out[key] = copy.deepcopy(value)
        return out
    key = _MERGE_KEYS.get(field)
    if isinstance(base, list) and isinstance(patch, list) and key is not None:
        merged = [copy.deepcopy(item) for item in base]
        for item in patch:
            at = next(
                (
                    i
                    for i, old in enumerate(merged)
                    if isinstance(old, dict)
                    and isinstance(item, dict)
                    and old.get(key) == item.get(key)
                ),
                None,
            )
            if at is None:
                merged.append(copy.deepcopy(item))
            else:
                merged[at] = strategic_merge(merged[at], item)
        return merged
    return copy.deepcopy(patch)
