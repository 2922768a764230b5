"""Constrained field types shared by the models, with messages a person can act on."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, BeforeValidator, WithJsonSchema

__all__ = [
    "ClusterRef",
    "CpuQuantity",
    "DNS1035Name",
    "DNS1123Label",
    "EnvName",
    "MemoryQuantity",
    "Path",
    "ResourceName",
]

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_QUANTITY = re.compile(r"^(\d+(\.\d*)?|\.\d+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?\d+)?$")
_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
_QUALIFIED = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)


def _dns1123_label(v: str) -> str:
    if len(v) > 63 or not _DNS1123_LABEL.match(v):
        raise ValueError(
            f"{v!r} is not a valid name: use at most 63 lowercase letters, digits and '-', "
            "starting and ending with a letter or digit"
        )
    return v


def _dns1035_label(v: str) -> str:
    if len(v) > 63 or not _DNS1035_LABEL.match(v):
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
        if v < 0:
            raise ValueError(f"{v!r} is negative; quantities must be ≥ 0")
        return repr(v) if isinstance(v, float) else str(v)
    if not isinstance(v, str) or not _QUANTITY.match(v):
        raise ValueError(
            f"{v!r} is not a Kubernetes quantity: use a number with an optional suffix, "
            "e.g. 8, '500m', '64Gi', '1.5'"
        )
    return v


def _memory(v: str) -> str:
    if v.isdigit() and int(v) < 1024 * 1024:
        raise ValueError(
            f"{v!r} is {v} bytes; did you mean '{v}Gi' or '{v}Mi'? Write memory with a unit"
        )
    return v


def _env_name(v: str) -> str:
    if not _ENV_NAME.match(v):
        raise ValueError(
            f"{v!r} is not a valid environment variable name "
            "(letters, digits, '_', '-', '.'; not starting with a digit)"
        )
    return v


def _resource_name(v: str) -> str:
    if len(v) > 316 or not _QUALIFIED.match(v) or "/" not in v:
        raise ValueError(
            f"{v!r} is not an extended resource name: use '<domain>/<name>', "
            "e.g. 'nvidia.com/gpu', 'amd.com/gpu'"
        )
    return v


def _abs_path(v: str) -> str:
    if not v.startswith("/") or "\n" in v:
        raise ValueError(f"{v!r} must be an absolute path inside the container, e.g. '/mnt/data'")
    return v.rstrip("/") or "/"


_STR = {"type": "string"}

DNS1123Label = Annotated[
    str,
    AfterValidator(_dns1123_label),
    WithJsonSchema({**_STR, "pattern": _DNS1123_LABEL.pattern, "maxLength": 63}),
]
DNS1035Name = Annotated[
    str,
    AfterValidator(_dns1035_label),
    WithJsonSchema({**_STR, "pattern": _DNS1035_LABEL.pattern, "maxLength": 63}),
]
ClusterRef = DNS1123Label
CpuQuantity = Annotated[
    str,
    BeforeValidator(_quantity),
    WithJsonSchema({"anyOf": [{"type": "number", "minimum": 0}, _STR]}),
]
MemoryQuantity = Annotated[
    str,
    BeforeValidator(_quantity),
    AfterValidator(_memory),
    WithJsonSchema({**_STR, "pattern": _QUANTITY.pattern}),
]
EnvName = Annotated[str, AfterValidator(_env_name), WithJsonSchema({**_STR})]
ResourceName = Annotated[str, AfterValidator(_resource_name), WithJsonSchema({**_STR})]
Path = Annotated[str, AfterValidator(_abs_path), WithJsonSchema({**_STR, "pattern": "^/"})]
