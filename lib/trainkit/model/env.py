"""Environment variables whose value lives in the cluster: a key of a Secret or ConfigMap, or
a field of the pod itself (the downward API).

A definition names the object and the key, never the value, so no secret enters git. Which
objects and keys a team may read is the platform's to grant (``Team.secrets``,
``Team.config_maps``): a Secret holds another system's credentials, and the plan refuses
every reference the team's grants do not list. A field of the pod (``PodField``,
``ResourceField``) tells the pod only about itself and needs no grant.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from ..injected_env import refused_env_reason
from ..kube.names import configmap_key_problem, qualified_name_problem
from .base import TrainkitModel, by_own_field
from .fields import ObjectName

__all__ = [
    "POD_FIELD_PATHS",
    "ConfigMapEnv",
    "ConfigMapKey",
    "EnvRef",
    "EnvSource",
    "Key",
    "PodField",
    "ResourceField",
    "SecretEnv",
    "SecretKey",
    "check_env_refs",
    "env_from_validator",
    "env_refs_validator",
    "own_pod_refs_refused",
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
    optional: bool = False
    """Start the pod without the variable when the Secret or the key is missing. By default
    the kubelet does not start the container until both exist (``CreateContainerConfigError``).
    The Team must grant the key all the same."""

    def describe_ref(self) -> str:
        return f"Secret {self.secret!r} key {self.key!r}"


class ConfigMapKey(TrainkitModel):
    """The value of ``key`` in ConfigMap ``config_map`` of the team's namespace, read when the
    pod starts (``valueFrom.configMapKeyRef``)."""

    config_map: ObjectName
    """ConfigMap name; one the Team lists in ``config_maps``."""
    key: Key
    """Key of the ConfigMap's data; one the Team lists for that ConfigMap."""
    optional: bool = False
    """Start the pod without the variable when the ConfigMap or the key is missing. By
    default the kubelet does not start the container until both exist."""

    def describe_ref(self) -> str:
        return f"ConfigMap {self.config_map!r} key {self.key!r}"


# The field paths the API server accepts in an env var's fieldRef (k8s.io/kubernetes v1.31+
# pkg/apis/core/validation/validation.go validEnvDownwardAPIFieldPathExpressions, and
# validateObjectFieldSelector for one label or annotation, ``metadata.labels['key']``).
# Labels and annotations as a whole and status.phase are for downward-API volumes only.
POD_FIELD_PATHS = (
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
)
_SUBSCRIPTED = ("metadata.labels", "metadata.annotations")


def _pod_field_path(path: str) -> str:
    if path in POD_FIELD_PATHS:
        return path
    head, sep, rest = path.partition("['")
    if sep and head in _SUBSCRIPTED and rest.endswith("']") and (key := rest[:-2]):
        # validateObjectFieldSelector: a label key as is, an annotation key lowercased.
        why = qualified_name_problem(key.lower() if head == "metadata.annotations" else key)
        if why is None:
            return path
        raise ValueError(f"{key!r} in {path!r} is not a label or annotation key: {why}")
    raise ValueError(
        f"{path!r} is not a field the kubelet gives a variable; use one of "
        f"{', '.join(POD_FIELD_PATHS)}, or one label or annotation: "
        "\"metadata.labels['key']\", \"metadata.annotations['key']\""
    )


class PodField(TrainkitModel):
    """A field of the pod itself, read when it starts (``valueFrom.fieldRef``, the downward
    API): ``PodField(path="status.podIP")``, ``PodField(path="spec.nodeName")``."""

    path: Annotated[str, AfterValidator(_pod_field_path)]
    """``metadata.name``, ``metadata.namespace``, ``metadata.uid``, ``spec.nodeName``,
    ``spec.serviceAccountName``, ``status.hostIP``, ``status.hostIPs``, ``status.podIP``,
    ``status.podIPs``, or one label or annotation of the pod:
    ``metadata.labels['example.com/tier']``, ``metadata.annotations['key']``."""

    def describe_ref(self) -> str:
        return f"the pod's {self.path}"


# validation.go validateContainerResourceDivisor: the divisors each resource accepts.
_CPU_DIVISORS = ("1m", "1")
_BYTE_DIVISORS = ("1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei")


class ResourceField(TrainkitModel):
    """A resource of the job's own container, read when the pod starts
    (``valueFrom.resourceFieldRef``): ``ResourceField(resource="limits.memory",
    divisor="1Mi")`` gives the memory limit in MiB, rounded up."""

    resource: Literal[
        "limits.cpu",
        "limits.memory",
        "limits.ephemeral-storage",
        "requests.cpu",
        "requests.memory",
        "requests.ephemeral-storage",
    ]
    """Which limit or request of the container."""
    divisor: str | None = None
    """The unit the value is given in (rounded up): ``"1"`` or ``"1m"`` for CPU (default
    ``"1"``: whole cores), ``"1"``, ``"1k"``, ``"1Mi"``, ``"1Gi"``, … for memory and
    ephemeral storage (default ``"1"``: bytes)."""

    @model_validator(mode="after")
    def _divisor(self) -> ResourceField:
        allowed = _CPU_DIVISORS if self.resource.endswith(".cpu") else _BYTE_DIVISORS
        if self.divisor is not None and self.divisor not in allowed:
            raise ValueError(
                f"divisor {self.divisor!r} is not one the API server accepts for "
                f"{self.resource}; use one of {', '.join(allowed)}"
            )
        return self

    def describe_ref(self) -> str:
        unit = f" in units of {self.divisor}" if self.divisor is not None else ""
        return f"the container's {self.resource}{unit}"


EnvRef = Annotated[
    SecretKey | ConfigMapKey | PodField | ResourceField,
    by_own_field(
        {
            "secret": SecretKey,
            "config_map": ConfigMapKey,
            "path": PodField,
            "resource": ResourceField,
        }
    ),
]


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


EnvSource = Annotated[
    SecretEnv | ConfigMapEnv, by_own_field({"secret": SecretEnv, "config_map": ConfigMapEnv})
]


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


def own_pod_refs_refused(refs: Mapping[str, EnvRef], where: str) -> None:
    """No ``PodField`` or ``ResourceField`` where the job's ranks are started over ssh by an
    MPI launcher: mpirun passes them the launcher's own value (``-x NAME``, as every variable
    of the job), not the one of the pod they run in. ``where`` names the job's field."""
    own = sorted(k for k, ref in refs.items() if isinstance(ref, PodField | ResourceField))
    if own:
        raise ValueError(
            f"{', '.join(own)} in {where} read the pod's own fields, but sshd starts the MPI "
            "ranks without the worker pod's env and mpirun forwards the launcher's values "
            "(-x), so every rank would see the launcher's; compute the value in the script "
            "(socket.gethostname(), os.cpu_count(), …) instead"
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
