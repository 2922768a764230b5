"""Node label keys and values in pod templates: ``nodeSelector`` and node affinity terms.

No CRD schema states their grammar, and the API server checks it only for the pods an
operator creates from the template (``ValidatePodSpec``): a bad key is accepted with the job
and fails when its pods are made, after Argo CD reported the job as synced.
"""

from __future__ import annotations

from typing import Any

from trainkit.kube.names import is_label_value
from trainkit.validate.findings import Finding, JsonPath
from trainkit.validate.objects import check_qualified_key

__all__ = ["check_node_labels"]

_VALUE_HELP = (
    "at most 63 characters of letters, digits, '-', '_' and '.', starting and ending with a "
    "letter or digit (or empty)"
)


def check_node_labels(pods: list[tuple[JsonPath, dict[str, Any]]], out: list[Finding]) -> None:
    for path, pod in pods:
        selector = pod.get("nodeSelector")
        if isinstance(selector, dict):
            for key, value in selector.items():
                at = (*path, "nodeSelector", str(key))
                check_qualified_key(key, at, out, "node label")
                _value(value, at, out)
        affinity = pod.get("affinity")
        node = affinity.get("nodeAffinity") if isinstance(affinity, dict) else None
        if isinstance(node, dict):
            for at, requirement in _requirements(node, (*path, "affinity", "nodeAffinity")):
                check_qualified_key(requirement.get("key"), (*at, "key"), out, "node label")
                values = requirement.get("values")
                for i, value in enumerate(values if isinstance(values, list) else []):
                    _value(value, (*at, "values", i), out)


def _value(value: object, at: JsonPath, out: list[Finding]) -> None:
    if not isinstance(value, str) or not is_label_value(value):
        out.append(Finding(at, f"invalid node label value {value!r}: {_VALUE_HELP}"))


def _requirements(node: dict[str, Any], path: JsonPath) -> list[tuple[JsonPath, dict[str, Any]]]:
    """Every matchExpressions entry of the required and the preferred terms."""
    terms: list[tuple[JsonPath, Any]] = []
    required = node.get("requiredDuringSchedulingIgnoredDuringExecution")
    if isinstance(required, dict) and isinstance(required.get("nodeSelectorTerms"), list):
        base = (*path, "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
        terms += [((*base, i), t) for i, t in enumerate(required["nodeSelectorTerms"])]
    preferred = node.get("preferredDuringSchedulingIgnoredDuringExecution")
    for i, p in enumerate(preferred if isinstance(preferred, list) else []):
        if isinstance(p, dict):
            base = (*path, "preferredDuringSchedulingIgnoredDuringExecution", i, "preference")
            terms.append((base, p.get("preference")))
    out = []
    for at, term in terms:
        exprs = term.get("matchExpressions") if isinstance(term, dict) else None
        for j, e in enumerate(exprs if isinstance(exprs, list) else []):
            if isinstance(e, dict):
                out.append(((*at, "matchExpressions", j), e))
    return out
