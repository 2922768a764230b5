"""The platform's own escape hatch: JSON patches (RFC 6902) of planned objects.

Some needs are one-off: a field trainkit does not model yet, an annotation one cluster's
admission controller wants. A ``PlatformPatch`` lives in ``jobs/platform/`` (teams cannot
declare one: platform objects are refused anywhere else), names the objects it changes by
Kubernetes kind and, optionally, name, team and cluster, and is applied where the objects are
planned: before the effective pods, policy, the in-place checks and what ``check``
compares with the kustomize builds, so a patched object is judged as it will run. It is
never a kustomize ``patches:`` entry, which the gate would not see.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from .base import TrainkitModel
from .fields import ClusterRef, DNS1123Label

__all__ = ["PatchOp", "PlatformPatch"]

# Changing these would move the object out of what the plan placed: another file, another
# namespace (another team's), another kind. Such a change is a new object, not a patch.
_IDENTITY = ("/apiVersion", "/kind", "/metadata/name", "/metadata/namespace")


class PatchOp(TrainkitModel):
    """One operation of a JSON patch (RFC 6902)."""

    op: Literal["add", "remove", "replace", "move", "copy", "test"]
    """What to do at ``path``."""
    path: str = Field(pattern=r"^/")
    """A JSON pointer (RFC 6901) into the object, e.g. ``/spec/runPolicy/ttlSecondsAfterFinished``
    or ``/metadata/annotations/example.com~1team`` (``~1`` stands for ``/``)."""
    value: Any = None
    """The value for ``add``, ``replace`` and ``test``."""
    from_path: str | None = Field(default=None, pattern=r"^/")
    """The source pointer of ``move`` and ``copy`` (RFC 6902's ``from``)."""

    @model_validator(mode="after")
    def _complete(self) -> PatchOp:
        if self.op in ("move", "copy") and self.from_path is None:
            raise ValueError(f"op {self.op!r} needs from_path, the pointer to take the value from")
        if self.op not in ("move", "copy") and self.from_path is not None:
            raise ValueError(f"from_path is only for move and copy, not {self.op!r}")
        if self.op in ("add", "replace", "test") and "value" not in self.model_fields_set:
            raise ValueError(f"op {self.op!r} needs a value")
        for pointer in (self.path, self.from_path):
            if pointer is None:
                continue
            for fixed in _IDENTITY:
                if (
                    pointer == fixed
                    or pointer.startswith(fixed + "/")
                    or fixed.startswith(pointer.rstrip("/") + "/")
                ):
                    raise ValueError(
                        f"{pointer!r} would change {fixed[1:]!r}, which places the object "
                        "(its file, namespace and kind); declare the object in a definition "
                        "instead of patching it"
                    )
        return self

    def as_rfc6902(self) -> dict[str, Any]:
        """The operation as RFC 6902 writes it."""
        out: dict[str, Any] = {"op": self.op, "path": self.path}
        if self.from_path is not None:
            out["from"] = self.from_path
        if self.op in ("add", "replace", "test"):
            out["value"] = self.value
        return out


class PlatformPatch(TrainkitModel):
    """A JSON patch the platform applies to every planned object it targets."""

    name: DNS1123Label
    """Names the patch in errors and in the ``trainkit.dev/patched-by`` annotation of
    every object it changed."""
    object_kind: str = Field(pattern=r"^[A-Z][A-Za-z0-9]*$")
    """The Kubernetes kind of the objects to patch, e.g. ``PyTorchJob``, ``TrainJob``,
    ``ClusterTrainingRuntime``, ``ConfigMap``."""
    object_name: str | None = None
    """Only the object of this name (``metadata.name``, e.g. ``resnet50-r1``); default: every
    object of ``object_kind`` in scope."""
    team: str | None = None
    """Only objects in this team's namespace."""
    clusters: list[ClusterRef] | None = None
    """Only on these clusters; default: every cluster."""
    ops: list[PatchOp] = Field(min_length=1)
    """The operations, applied in order to each object; one that fails (a ``test`` that does
    not hold, a path that does not exist) is an error naming the patch and the object."""
