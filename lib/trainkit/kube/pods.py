"""Finding pod specs and containers in any kind that nests them.

Pod specs are found by shape: ``Pod.spec``, and any ``template.spec`` holding
pod fields — PyTorchJob replica specs, (Cluster)TrainingRuntime and JobSet
replicated jobs, Deployments, Jobs, CronJobs… A ``template.spec`` without
pod fields (a JobSet's, a Job template's) is walked into, not reported. A pod template
under a key of its own counts too: a RayJob's ``submitterPodTemplate`` (KubeRay v1.7
ray-operator/apis/ray/v1/rayjob_types.go SubmitterPodTemplate, a PodTemplateSpec).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["CONTAINER_LISTS", "Path", "containers", "pod_specs"]

Path = tuple[str | int, ...]

# core/v1 PodSpec: the three lists whose items are containers.
CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")
# Fields only a PodSpec has among the objects that carry a ``template.spec``.
_POD_FIELDS = frozenset({*CONTAINER_LISTS, "volumes", "hostNetwork", "hostPID", "hostIPC"})


def pod_specs(doc: dict[str, Any]) -> Iterator[tuple[Path, dict[str, Any]]]:
    """``(path, pod spec)`` for every pod spec of one manifest, in document order."""
    spec = doc.get("spec")
    if doc.get("kind") == "Pod" and doc.get("apiVersion") == "v1" and isinstance(spec, dict):
        yield ("spec",), spec
        return
    yield from _walk(doc, ())


def _walk(value: Any, path: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    if isinstance(value, dict):
        for key, child in value.items():
            if not isinstance(child, dict | list):
                continue
            template = key == "template" or key.endswith("PodTemplate")
            spec = child.get("spec") if template and isinstance(child, dict) else None
            if isinstance(spec, dict) and _POD_FIELDS.intersection(spec):
                yield (*path, key, "spec"), spec
            else:
                yield from _walk(child, (*path, key))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            yield from _walk(child, (*path, i))


def containers(spec: dict[str, Any], path: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    """``(path, container)`` for every container of a pod spec at ``path``."""
    for key in CONTAINER_LISTS:
        items = spec.get(key)
        if isinstance(items, list):
            for i, container in enumerate(items):
                if isinstance(container, dict):
                    yield (*path, key, i), container
