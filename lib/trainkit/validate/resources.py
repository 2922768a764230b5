"""Resource quantities and the pod-template rules that only bite at run time.

The CRD schemas allow any int-or-string matching the quantity pattern,
negatives included, and say nothing about resource names. The problems that
slip through — a negative request, ``requests > limits``, a GPU requested
without a limit, ``memeory`` — are rejected only when the operator creates the
pods, long after Argo CD reported the job as synced. Checking them here moves
the failure to ``trainkit validate``.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from trainkit.kube.pods import containers
from trainkit.kube.quantities import parse_quantity
from trainkit.validate.findings import Finding, JsonPath
from trainkit.validate.objects import check_annotations, check_labels

__all__ = ["check_quantities"]

# Unqualified resource names a container may use; anything else needs a domain prefix.
_STANDARD = frozenset({"cpu", "memory", "ephemeral-storage"})
_QUEUE_EXTRA = frozenset({"pods", "storage"})
_HELP = (
    "use cpu, memory, ephemeral-storage, hugepages-<size> or a domain-qualified "
    "extended resource such as nvidia.com/gpu"
)


def _resource_list(
    value: object, path: JsonPath, out: list[Finding], extra_names: frozenset[str] | None
) -> dict[str, tuple[Decimal, object]]:
    """Check one ResourceList map; return ``name -> (amount, as written)`` for those that parse.

    ``extra_names`` None means resource names are not checked.
    """
    amounts: dict[str, tuple[Decimal, object]] = {}
    if not isinstance(value, dict):
        return amounts  # the schema check reports the wrong type
    for name, raw in value.items():
        if raw is None:
            continue  # null is pruned: same as unset
        where = (*path, str(name))
        if extra_names is not None and not _known_resource(str(name), extra_names):
            out.append(Finding(where, f"unknown resource name {name!r}; {_HELP}"))
        amount = parse_quantity(raw)
        if amount is None:
            out.append(
                Finding(
                    where,
                    f"invalid quantity {raw!r}: use a non-negative number with an optional "
                    "suffix (m, k, M, G, Ki, Mi, Gi, ...), e.g. 500m, 4, 16Gi",
                )
            )
        else:
            amounts[str(name)] = (amount, raw)
    return amounts


def _known_resource(name: str, extra: frozenset[str]) -> bool:
    return name in _STANDARD or name in extra or name.startswith("hugepages-") or "/" in name


def _is_extended(name: str) -> bool:
    """Extended resources (GPUs etc.): integral, not overcommitted, limit required."""
    domain = name.partition("/")[0]
    return "/" in name and not (domain == "kubernetes.io" or domain.endswith(".kubernetes.io"))


def _check_requirements(value: object, path: JsonPath, out: list[Finding]) -> None:
    """A container's ``resources``: quantities, names, requests ≤ limits, extended resources."""
    if not isinstance(value, dict):
        return
    lists = {
        part: _resource_list(value.get(part), (*path, part), out, frozenset())
        for part in ("requests", "limits")
    }
    req, lim = lists["requests"], lists["limits"]
    raw_limits = value.get("limits")
    for name, (amount, raw) in req.items():
        where = (*path, "requests", name)
        if _is_extended(name) and not (isinstance(raw_limits, dict) and name in raw_limits):
            out.append(Finding(where, f"{name} is an extended resource: set limits.{name} too"))
        elif name in lim and _is_extended(name) and lim[name][0] != amount:
            out.append(Finding(where, f"{name} requests must equal limits (no overcommit)"))
        elif name in lim and amount > lim[name][0]:
            out.append(
                Finding(where, f"request {raw!r} is greater than the limit {lim[name][1]!r}")
            )
    for part, amounts in lists.items():
        for name, (amount, raw) in amounts.items():
            if _is_extended(name) and amount != amount.to_integral_value():
                out.append(
                    Finding((*path, part, name), f"{name} must be a whole number, not {raw!r}")
                )


def _check_template_meta(value: object, path: JsonPath, out: list[Finding]) -> None:
    """Pod template labels are only checked when the operator creates pods; check them now."""
    meta = value.get("metadata") if isinstance(value, dict) else None
    if isinstance(meta, dict):
        if meta.get("labels") is not None:
            check_labels(meta["labels"], (*path, "metadata", "labels"), out)
        if meta.get("annotations") is not None:
            check_annotations(meta["annotations"], (*path, "metadata", "annotations"), out)


def _walk(value: Any, path: JsonPath, out: list[Finding], pods: set[int]) -> None:
    """Find templates and resource lists wherever a kind nests them, outside pod specs.

    A pod spec (``pods``: their ids) holds neither; its containers are checked
    through ``kube.pods.containers``, so the walk does not enter it.
    """
    if isinstance(value, dict):
        for key, child in value.items():
            if not isinstance(child, dict | list) or id(child) in pods:
                continue
            where = (*path, key)
            if key == "template":
                _check_template_meta(child, where, out)
            elif key == "resourcesPerNode":  # TrainJob trainer
                _check_requirements(child, where, out)
            elif key == "minResources":  # Kubeflow schedulingPolicy, Volcano PodGroup
                _resource_list(child, where, out, None)
            _walk(child, where, out, pods)
    elif isinstance(value, list):
        for i, child in enumerate(value):
            if isinstance(child, dict | list):
                _walk(child, (*path, i), out, pods)


def _check_queue(spec: dict[str, Any], out: list[Finding]) -> None:
    """Volcano Queue: quantities and ``guarantee ≤ deserved ≤ capability`` (webhook ≥ v1.14)."""
    guarantee = spec.get("guarantee")
    raw = {
        "guarantee.resource": guarantee.get("resource") if isinstance(guarantee, dict) else None,
        "deserved": spec.get("deserved"),
        "capability": spec.get("capability"),
    }
    paths: dict[str, JsonPath] = {
        "guarantee.resource": ("spec", "guarantee", "resource"),
        "deserved": ("spec", "deserved"),
        "capability": ("spec", "capability"),
    }
    amounts = {k: _resource_list(v, paths[k], out, _QUEUE_EXTRA) for k, v in raw.items()}
    order = list(amounts)
    for i, low in enumerate(order):
        for name, amount in amounts[low].items():
            # compare with the next level that names the resource
            high = next((h for h in order[i + 1 :] if name in amounts[h]), None)
            if high is not None and amount[0] > amounts[high][name][0]:
                out.append(
                    Finding(
                        (*paths[low], name),
                        f"{low} {amount[1]!r} exceeds {high} {amounts[high][name][1]!r}; "
                        "Volcano requires guarantee ≤ deserved ≤ capability",
                    )
                )


def check_quantities(
    doc: dict[str, Any], pods: list[tuple[JsonPath, dict[str, Any]]], out: list[Finding]
) -> None:
    """All quantity and pod-template checks for one manifest and its pod specs."""
    spec = doc.get("spec")
    if not isinstance(spec, dict | list):
        return
    api_version = str(doc.get("apiVersion", ""))
    if doc.get("kind") == "Queue" and api_version.startswith("scheduling.volcano.sh/"):
        if isinstance(spec, dict):
            _check_queue(spec, out)
        return
    _walk(spec, ("spec",), out, {id(pod) for _, pod in pods})
    for pod_path, pod in pods:
        for where, container in containers(pod, pod_path):
            if "resources" in container:
                _check_requirements(container["resources"], (*where, "resources"), out)
