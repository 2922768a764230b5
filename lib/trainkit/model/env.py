"""Environment variables whose value lives in the cluster: a key of a Secret or ConfigMap.

A definition names the object and the key, never the value, so no secret enters git. Which
objects and keys a team may read is the platform's to grant (``Team.secrets``,
``Team.config_maps``): a Secret holds another system's credentials, and the plan refuses
every reference the team's grants do not list.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import AfterValidator, ValidationInfo, WithJsonSchema, field_validator

from ..injected_env import refused_env_reason
from ..kube.names import configmap_key_problem
from .base import TrainkitModel
from .fields import ObjectName

__all__ = [
    "ConfigMapEnv",
    "ConfigMapKey",
    "EnvRef",
    "EnvSource",
    "Key",
    "SecretEnv",
    "SecretKey",
    "check_env_refs",
    "env_from_validator",
    "env_refs_validator",
    "source_key_refused",
]


def _key(v: str) -> str:
    why = configmap_key_problem(v)
    if why:
        raise ValueError(f"{v!r} is not a valid key: it {why}")
    return v


Key = Annotated[str, AfterValidator(_key), WithJsonSchema({"type": "string", "maxLength": 253})]
"""A key of a Secret's or ConfigMap's data."""


class SecretKey(TrainkitModel):
    """The value of ``key`` in Secret ``secret`` of the team's namespace, read when the pod
    starts (``valueFrom.secretKeyRef``)."""

    secret: ObjectName
    """Secret name; one the Team lists in ``secrets``."""
    key: Key
    """Key of the Secret's data; one the Team lists for that Secret."""

    def describe_ref(self) -> str:
        return f"Secret {self.secret!r} key {self.key!r}"


class ConfigMapKey(TrainkitModel):
    """The value of ``key`` in ConfigMap ``config_map`` of the team's namespace, read when the
    pod starts (``valueFrom.configMapKeyRef``)."""

    config_map: ObjectName
    """ConfigMap name; one the Team lists in ``config_maps``."""
    key: Key
    """Key of the ConfigMap's data; one the Team lists for that ConfigMap."""

    def describe_ref(self) -> str:
        return f"ConfigMap {self.config_map!r} key {self.key!r}"


EnvRef = SecretKey | ConfigMapKey


class SecretEnv(TrainkitModel):
    """Every key of Secret ``secret`` as a variable of the same name (``envFrom.secretRef``)."""

    secret: ObjectName
    """Secret name; the Team lists it in ``secrets`` with every key it holds."""

    def describe_ref(self) -> str:
        return f"Secret {self.secret!r}"


class ConfigMapEnv(TrainkitModel):
    """Every key of ConfigMap ``config_map`` as a variable of the same name
    (``envFrom.configMapRef``)."""

    config_map: ObjectName
    """ConfigMap name; the Team lists it in ``config_maps`` with every key it holds."""

    def describe_ref(self) -> str:
        return f"ConfigMap {self.config_map!r}"


EnvSource = SecretEnv | ConfigMapEnv


def source_key_refused(key: str, kind: str) -> str | None:
    """Why a key of a Secret or ConfigMap taken whole (``env_from``) may not become a variable
    of a ``kind``'s pods: the same reasons as a variable set in ``env``."""
    return refused_env_reason(key, kind)


def check_env_refs(env: Mapping[str, str], refs: Mapping[str, EnvRef], kind: str) -> None:
    """``refs`` names no variable ``env`` sets, nor one a ``kind``'s operator sets."""
    both = sorted(set(env) & set(refs))
    if both:
        raise ValueError(f"{', '.join(both)} set both in env and in env_refs; keep one of them")
    bad = [(k, why) for k in refs if (why := refused_env_reason(k, kind))]
    if bad:
        raise ValueError(
            "; ".join(f"{k} may not be set: {why}" for k, why in bad) + " — remove it from env_refs"
        )


def env_refs_validator(kind: str) -> Any:
    """The ``env_refs`` field validator of a model whose pods ``kind``'s operator runs (``env``
    is declared before ``env_refs``, so it is validated already)."""

    def check(cls: type, refs: dict[str, EnvRef], info: ValidationInfo) -> dict[str, EnvRef]:
        check_env_refs(info.data.get("env", {}), refs, kind)
        return refs

    return field_validator("env_refs")(classmethod(check))


def env_from_validator() -> Any:
    """The ``env_from`` field validator: each source once (a second would add nothing but a
    doubt about which one the operator reads)."""

    def check(cls: type, sources: list[EnvSource]) -> list[EnvSource]:
        refs = [s.describe_ref() for s in sources]
        twice = sorted({r for r in refs if refs.count(r) > 1})
        if twice:
            raise ValueError(f"env_from lists {twice[0]} twice; list each source once")
        return sources

    return field_validator("env_from")(classmethod(check))
