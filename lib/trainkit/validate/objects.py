"""Kubernetes object rules that no CRD schema states: names, labels, annotations.

A CRD schema says only ``metadata: {type: object}``; the API server checks
ObjectMeta itself (apimachinery ``ValidateObjectMeta``), and operators add
stricter name rules because they derive Service and pod host names from the
job name. These checks run for every manifest, with or without CRDs, so a bad
name is caught before ``kubectl apply`` or an Argo CD sync fails on it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from trainkit.kube.names import (
    is_dns1035_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_label_value,
    qualified_name_problem,
)
from trainkit.validate.findings import Finding, JsonPath

__all__ = ["NameRule", "check_metadata", "check_object_meta", "name_rule_for"]

NameRule = Literal["subdomain", "label", "dns1035"]

_NAME_HELP: dict[NameRule, tuple[Callable[[str], bool], int, str]] = {
    "subdomain": (
        is_dns1123_subdomain,
        253,
        "a DNS-1123 subdomain: lowercase letters, digits, '-' and '.', "
        "starting and ending with a letter or digit, at most 253 characters",
    ),
    "label": (
        is_dns1123_label,
        63,
        "a DNS-1123 label: lowercase letters, digits and '-', "
        "starting and ending with a letter or digit, at most 63 characters",
    ),
    "dns1035": (
        is_dns1035_label,
        63,
        "a DNS-1035 label: lowercase letters, digits and '-', starting with a letter "
        "and ending with a letter or digit, at most 63 characters (the operator derives "
        "Service and host names from it)",
    ),
}

# Fields of ObjectMeta. Anything else under metadata is pruned silently.
_OBJECT_META_FIELDS = frozenset(
    {
        "name", "generateName", "namespace", "labels", "annotations", "finalizers",
        "ownerReferences", "uid", "resourceVersion", "generation", "creationTimestamp",
        "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields", "selfLink",
    }
)  # fmt: skip
# Set by the API server; a stale value in Git makes applies conflict or is ignored.
_SERVER_FIELDS = ("uid", "resourceVersion", "generation", "deletionTimestamp",
                  "deletionGracePeriodSeconds", "managedFields", "selfLink")  # fmt: skip
_ANNOTATIONS_MAX_BYTES = 256 * 1024


def name_rule_for(api_version: str, kind: str) -> NameRule:
    """Which name syntax the API server (or the operator's webhook) enforces for a kind."""
    group = api_version.rpartition("/")[0]
    if kind == "Namespace" and group == "":
        return "label"
    if (kind == "Service" and group == "") or (group == "kubeflow.org" and kind.endswith("Job")):
        return "dns1035"
    if kind == "TrainJob" and group == "trainer.kubeflow.org":
        return "dns1035"  # the TrainJob CRD says so in CEL; checked here without CRDs too
    return "subdomain"


def check_name(value: object, rule: NameRule, path: JsonPath, out: list[Finding]) -> None:
    """Report ``value`` unless it is a valid name under ``rule``."""
    valid, limit, help_text = _NAME_HELP[rule]
    if not isinstance(value, str):
        out.append(Finding(path, f"must be a string, got {value!r}"))
    elif not valid(value):
        why = f"is {len(value)} characters long" if len(value) > limit else "is invalid"
        out.append(Finding(path, f"{value!r} {why}; it must be {help_text}"))


def check_qualified_key(key: object, path: JsonPath, out: list[Finding], what: str) -> None:
    """Label and annotation keys: optional DNS-1123 subdomain prefix + '/' + name (≤63)."""
    if not isinstance(key, str):
        out.append(Finding(path, f"{what} key {key!r} must be a string"))
        return
    bad = qualified_name_problem(key)
    if bad is not None:
        out.append(Finding(path, f"invalid {what} key {key!r}: {bad}"))


def check_labels(labels: object, path: JsonPath, out: list[Finding]) -> None:
    """Label keys and values (values: ≤63 characters, same charset, may be empty)."""
    if not isinstance(labels, dict):
        out.append(Finding(path, "labels must be a map of string to string"))
        return
    for key, value in labels.items():
        check_qualified_key(key, (*path, str(key)), out, "label")
        if not isinstance(value, str):
            out.append(
                Finding((*path, str(key)), f"label value {value!r} must be a string; quote it")
            )
        elif not is_label_value(value):
            out.append(
                Finding(
                    (*path, str(key)),
                    f"invalid label value {value!r}: at most 63 characters of letters, digits, "
                    "'-', '_' and '.', starting and ending with a letter or digit (or empty)",
                )
            )


def check_annotations(annotations: object, path: JsonPath, out: list[Finding]) -> None:
    """Annotation keys like label keys; values any string; all together ≤256 KiB."""
    if not isinstance(annotations, dict):
        out.append(Finding(path, "annotations must be a map of string to string"))
        return
    total = 0
    for key, value in annotations.items():
        check_qualified_key(key, (*path, str(key)), out, "annotation")
        if not isinstance(value, str):
            out.append(Finding((*path, str(key)), f"annotation value {value!r} must be a string"))
        else:
            total += len(str(key).encode()) + len(value.encode())
    if total > _ANNOTATIONS_MAX_BYTES:
        out.append(Finding(path, f"annotations total {total} bytes; the limit is 262144 (256 KiB)"))


def check_object_meta(
    meta: object, path: JsonPath, out: list[Finding], *, name_rule: NameRule | None
) -> None:
    """Validate an ObjectMeta; ``name_rule=None`` for embedded objects where a name is optional."""
    if not isinstance(meta, dict):
        out.append(Finding(path, "metadata must be a map"))
        return
    name = meta.get("name")
    if name_rule is not None and name is None:
        out.append(Finding((*path, "name"), "metadata.name is required; give the object a name"))
    elif name is not None:
        check_name(name, name_rule or "subdomain", (*path, "name"), out)
    if "namespace" in meta and meta["namespace"] not in (None, ""):
        check_name(meta["namespace"], "label", (*path, "namespace"), out)
    if meta.get("labels") is not None:
        check_labels(meta["labels"], (*path, "labels"), out)
    if meta.get("annotations") is not None:
        check_annotations(meta["annotations"], (*path, "annotations"), out)
    for key in meta:
        if key not in _OBJECT_META_FIELDS:
            out.append(
                Finding((*path, str(key)), "unknown field; the API server would drop it silently")
            )
    for key in _SERVER_FIELDS:
        if meta.get(key) is not None:
            out.append(
                Finding((*path, key), "is set by the API server; remove it from the manifest")
            )


def check_metadata(doc: dict[str, Any], out: list[Finding]) -> None:
    """Top-level metadata of a manifest, with the name rule of its kind."""
    api_version = doc.get("apiVersion")
    kind = doc.get("kind")
    rule = name_rule_for(api_version if isinstance(api_version, str) else "", str(kind))
    check_object_meta(doc.get("metadata") or {}, ("metadata",), out, name_rule=rule)
