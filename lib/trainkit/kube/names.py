"""Name grammars of the API server (k8s.io/apimachinery/pkg/util/validation/validation.go).

``IsDNS1123Label``, ``IsDNS1123Subdomain``, ``IsDNS1035Label``,
``IsQualifiedName``, ``IsValidLabelValue``, ``IsConfigMapKey`` and
``IsEnvVarName`` — the regular expressions are upstream's, applied with
``fullmatch`` (Go's ``^...$`` without ``(?m)`` anchors at the very end of the
text; Python's ``$`` would let ``"name\\n"`` through). None of these grammars
admits a control character, so names, label keys and values, annotation keys
and env names refuse NUL, newlines and the rest by construction.
"""

from __future__ import annotations

import re

__all__ = [
    "DNS1035_LABEL",
    "DNS1123_LABEL",
    "DNS1123_SUBDOMAIN",
    "ENV_NAME",
    "LABEL_MAX",
    "SUBDOMAIN_MAX",
    "configmap_key_problem",
    "env_name_problem",
    "is_dns1035_label",
    "is_dns1123_label",
    "is_dns1123_subdomain",
    "is_label_value",
    "qualified_name_problem",
]

LABEL_MAX = 63  # DNS1123LabelMaxLength, DNS1035LabelMaxLength, qualifiedNameMaxLength
SUBDOMAIN_MAX = 253  # DNS1123SubdomainMaxLength

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_LABEL = re.compile(_LABEL)
DNS1123_SUBDOMAIN = re.compile(rf"{_LABEL}(\.{_LABEL})*")
DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
# qualifiedNameFmt: the name part of a label or annotation key.
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
# labelValueFmt: like a qualified name, but may be empty.
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_CONFIGMAP_KEY = re.compile(r"[-._a-zA-Z0-9]+")
# envVarNameFmt. Kubernetes ≥ 1.30 can relax this (RelaxedEnvironmentVariableValidation:
# any printable ASCII but '='); the strict form is valid on every cluster version.
ENV_NAME = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")


def is_dns1123_label(value: str) -> bool:
    """Namespaces, Services of most kinds, container names: ``[a-z0-9]([-a-z0-9]*[a-z0-9])?``."""
    return len(value) <= LABEL_MAX and DNS1123_LABEL.fullmatch(value) is not None


def is_dns1123_subdomain(value: str) -> bool:
    """Most object names: dot-separated DNS-1123 labels, at most 253 characters."""
    return len(value) <= SUBDOMAIN_MAX and DNS1123_SUBDOMAIN.fullmatch(value) is not None


def is_dns1035_label(value: str) -> bool:
    """Services and the operators' job names: a DNS-1123 label starting with a letter."""
    return len(value) <= LABEL_MAX and DNS1035_LABEL.fullmatch(value) is not None


def is_label_value(value: str) -> bool:
    """Label values: at most 63 characters of ``[-A-Za-z0-9_.]``, alphanumeric at both ends."""
    return len(value) <= LABEL_MAX and _LABEL_VALUE.fullmatch(value) is not None


def qualified_name_problem(key: str) -> str | None:
    """Why ``key`` is not a qualified name (``[prefix/]name``: label and annotation keys)."""
    prefix, slash, name = key.rpartition("/")
    if slash and not (prefix and is_dns1123_subdomain(prefix)):
        return "the prefix before '/' must be a DNS-1123 subdomain of at most 253 characters"
    if len(name) > LABEL_MAX or _QUALIFIED_NAME.fullmatch(name) is None:
        return (
            "the name part must be at most 63 characters of letters, digits, '-', '_' and '.', "
            "starting and ending with a letter or digit"
        )
    return None


def _chdir_prefix(value: str) -> str | None:
    # hasChDirPrefix: such a key or name would mean a directory when used as a file name.
    if value in (".", ".."):
        return f"may not be {value!r}"
    if value.startswith(".."):
        return "may not start with '..'"
    return None


def configmap_key_problem(key: str) -> str | None:
    """Why ``key`` cannot name a ConfigMap (or Secret) entry (``IsConfigMapKey``)."""
    if len(key) > SUBDOMAIN_MAX:
        return f"is {len(key)} characters long; at most 253 are allowed"
    if _CONFIGMAP_KEY.fullmatch(key) is None:
        return "may hold only letters, digits, '-', '_' and '.'"
    return _chdir_prefix(key)


def env_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name an environment variable (``IsEnvVarName``)."""
    if ENV_NAME.fullmatch(name) is None:
        return "may hold only letters, digits, '_', '-' and '.', and may not start with a digit"
    return _chdir_prefix(name)
