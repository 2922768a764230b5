"""Constrained field types shared by the models, with messages a person can act on."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

from pydantic import AfterValidator, BeforeValidator, WithJsonSchema

from ..kube.names import (
    DNS1035_LABEL,
    DNS1123_LABEL,
    DNS1123_SUBDOMAIN,
    ENV_NAME,
    env_name_problem,
    is_dns1035_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_label_value,
    qualified_name_problem,
)
from ..kube.quantities import QUANTITY, parse_quantity
from ..kube.text import text_value_problem

__all__ = [
    "AnnotationValue",
    "Arg",
    "ClusterRef",
    "CpuQuantity",
    "DNS1035Name",
    "DNS1123Label",
    "EnvName",
    "EnvValue",
    "HugePageSize",
    "LabelKey",
    "LabelValue",
    "MemoryQuantity",
    "ObjectName",
    "Path",
    "ResourceName",
    "must_match",
    "pattern_schema",
]


def _dns1123_label(v: str) -> str:
    if not is_dns1123_label(v):
        raise ValueError(
            f"{v!r} is not a valid name: use at most 63 lowercase letters, digits and '-', "
            "starting and ending with a letter or digit"
        )
    return v


def _object_name(v: str) -> str:
    if not is_dns1123_subdomain(v):
        raise ValueError(
            f"{v!r} is not a valid object name: use at most 253 lowercase letters, digits, '-' "
            "and '.', each dot-separated part starting and ending with a letter or digit"
        )
    return v


def _dns1035_label(v: str) -> str:
    if not is_dns1035_label(v):
        raise ValueError(
            f"{v!r} is not a valid name: the operator requires a DNS-1035 label "
            "(at most 63 lowercase letters, digits and '-', starting with a letter, "
            "ending with a letter or digit), e.g. 'resnet50-ddp'"
        )
    return v


def _quantity(v: object) -> str:
    if isinstance(v, bool):
        raise ValueError(f"{v!r} is not a quantity")
    if isinstance(v, int | float):
        if parse_quantity(v) is None:
            why = "is negative" if v < 0 else "is not a finite number"
            raise ValueError(f"{v!r} {why}; quantities must be ≥ 0")
        return repr(v) if isinstance(v, float) else str(v)
    if not isinstance(v, str) or parse_quantity(v) is None:
        raise ValueError(
            f"{v!r} is not a Kubernetes quantity: use a number with an optional suffix, "
            "e.g. 8, '500m', '64Gi', '1.5'"
        )
    return v


def _memory(v: str) -> str:
    if v.isdigit() and len(v) < 8 and int(v) < 1024 * 1024:
        raise ValueError(
            f"{v!r} is {v} bytes; did you mean '{v}Gi' or '{v}Mi'? Write memory with a unit"
        )
    return v


def _page_size(v: str) -> str:
    # The API server reads the size from the resource name hugepages-<size> as a quantity and
    # wants it positive (kubernetes pkg/apis/core/v1/helper/helpers.go
    # HugePageSizeFromResourceName).
    size = parse_quantity(v) if isinstance(v, str) else None
    if size is None or size <= 0 or size != size.to_integral_value():
        raise ValueError(
            f"{v!r} is not a huge page size: use the node's page size with a unit, e.g. '2Mi' "
            "or '1Gi'"
        )
    return v


def _env_name(v: str) -> str:
    why = env_name_problem(v)
    if why is not None:
        raise ValueError(f"{v!r} is not a valid environment variable name: it {why}")
    return v


def _text(what: str) -> Callable[[str], str]:
    """A validator refusing what no container or kustomize can carry (see kube.text)."""

    def check(v: str) -> str:
        why = text_value_problem(v)
        if why is not None:
            raise ValueError(f"{what}{v!r} {why}")
        return v

    return check


def _resource_name(v: str) -> str:
    if "/" not in v or qualified_name_problem(v) is not None:
        raise ValueError(
            f"{v!r} is not an extended resource name: use '<domain>/<name>', "
            "e.g. 'nvidia.com/gpu', 'amd.com/gpu'"
        )
    return v


def _label_key(v: str) -> str:
    why = qualified_name_problem(v)
    if why is not None:
        raise ValueError(f"{v!r} is not a label key: {why}")
    return v


def _label_value(v: str) -> str:
    if not is_label_value(v):
        raise ValueError(
            f"{v!r} is not a label value: at most 63 letters, digits, '-', '_' and '.', "
            "starting and ending with a letter or digit (or empty)"
        )
    return v


def _abs_path(v: str) -> str:
    if not v.startswith("/") or "\n" in v:
        raise ValueError(f"{v!r} must be an absolute path inside the container, e.g. '/mnt/data'")
    return v.rstrip("/") or "/"


_STR = {"type": "string"}


def _pattern(rx: re.Pattern[str]) -> str:
    # JSON Schema patterns search (ECMA-262), so anchor them; ECMA's $ is end of input.
    return f"^{rx.pattern}$"


DNS1123Label = Annotated[
    str,
    AfterValidator(_dns1123_label),
    WithJsonSchema({**_STR, "pattern": _pattern(DNS1123_LABEL), "maxLength": 63}),
]
DNS1035Name = Annotated[
    str,
    AfterValidator(_dns1035_label),
    WithJsonSchema({**_STR, "pattern": _pattern(DNS1035_LABEL), "maxLength": 63}),
]
ClusterRef = DNS1123Label
ObjectName = Annotated[
    str,
    AfterValidator(_object_name),
    WithJsonSchema({**_STR, "pattern": _pattern(DNS1123_SUBDOMAIN), "maxLength": 253}),
]
"""The name of a ServiceAccount, Secret or PriorityClass (a DNS-1123 subdomain)."""
if TYPE_CHECKING:
    # What a definition may write (cpu=32 or cpu="500m"); the models store the
    # Kubernetes quantity as a string whatever was given.
    CpuQuantity = str | int | float
else:
    CpuQuantity = Annotated[
        str,
        BeforeValidator(_quantity),
        WithJsonSchema({"anyOf": [{"type": "number", "minimum": 0}, _STR]}),
    ]
MemoryQuantity = Annotated[
    str,
    BeforeValidator(_quantity),
    AfterValidator(_memory),
    WithJsonSchema({**_STR, "pattern": _pattern(QUANTITY)}),
]
HugePageSize = Annotated[
    str, AfterValidator(_page_size), WithJsonSchema({**_STR, "pattern": _pattern(QUANTITY)})
]
"""A huge page size, e.g. ``"2Mi"``, ``"1Gi"`` (the ``<size>`` of ``hugepages-<size>``)."""
EnvName = Annotated[
    str, AfterValidator(_env_name), WithJsonSchema({**_STR, "pattern": _pattern(ENV_NAME)})
]
EnvValue = Annotated[
    str, AfterValidator(_text("environment variable value ")), WithJsonSchema({**_STR})
]
Arg = Annotated[str, AfterValidator(_text("")), WithJsonSchema({**_STR})]
"""An item of a command or its arguments."""
ResourceName = Annotated[str, AfterValidator(_resource_name), WithJsonSchema({**_STR})]
LabelKey = Annotated[str, AfterValidator(_label_key), WithJsonSchema({**_STR, "maxLength": 317})]
"""A node label key, ``[prefix/]name`` (the API server refuses pods naming another)."""
LabelValue = Annotated[str, AfterValidator(_label_value), WithJsonSchema({**_STR, "maxLength": 63})]
AnnotationValue = Annotated[
    str, AfterValidator(_text("annotation value ")), WithJsonSchema({**_STR})
]
Path = Annotated[str, AfterValidator(_abs_path), WithJsonSchema({**_STR, "pattern": "^/"})]


def must_match(rx: re.Pattern[str], refusal: str) -> Callable[[str], str]:
    """A validator for strings that fully match ``rx``, refusing any other with ``refusal``
    (where ``{v!r}`` stands for the value)."""

    def check(v: str) -> str:
        if not rx.fullmatch(v):
            raise ValueError(refusal.replace("{v!r}", repr(v)))
        return v

    return check


def pattern_schema(rx: re.Pattern[str]) -> WithJsonSchema:
    """The JSON Schema of a string matching ``rx``."""
    return WithJsonSchema({**_STR, "pattern": f"^(?:{rx.pattern})$"})
