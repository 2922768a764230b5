"""Parts shared by job kinds: resources per node, scripts, volumes, tolerations."""

from __future__ import annotations

import math
import posixpath
from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, WithJsonSchema, field_validator, model_validator

from ..kube.quantities import parse_quantity
from .base import TrainkitModel
from .fields import (
    CpuQuantity,
    DNS1123Label,
    HugePageSize,
    LabelKey,
    LabelValue,
    MemoryQuantity,
    Path,
    ResourceName,
)

__all__ = [
    "ACCELERATORS",
    "GENERATED_VOLUMES",
    "SCRIPT_VOLUME",
    "SHM_VOLUME",
    "WORKSPACE",
    "Image",
    "Resources",
    "Script",
    "Toleration",
    "Volume",
    "check_program",
    "image_for",
    "repeated",
]

WORKSPACE = "/workspace"
"""The working directory; each script file is mounted read-only inside it."""
SCRIPT_VOLUME = "script"
SHM_VOLUME = "dshm"
GENERATED_VOLUMES = frozenset({SCRIPT_VOLUME, SHM_VOLUME})
"""Pod volume names trainkit generates (script ConfigMap, /dev/shm)."""
ACCELERATORS = ("cuda", "rocm")
"""Accelerator stacks a Cluster may declare; image tags naming one are checked against it."""


def _image_ref(v: str) -> str:
    if not v or any(c.isspace() for c in v):
        raise ValueError(
            f"{v!r} is not an image reference (no spaces, not empty), e.g. "
            "'registry.example.com/ml/pytorch:2.5.1-cuda12.4'"
        )
    return v


_ImageRef = Annotated[
    str, AfterValidator(_image_ref), WithJsonSchema({"type": "string", "pattern": r"^\S+$"})
]
Image = _ImageRef | dict[str, _ImageRef]
"""One image, or one per cluster name or declared accelerator (``{"cuda": …, "rocm": …}``)."""


def image_for(image: str | dict[str, str], cluster: str, accelerator: str | None) -> str | None:
    """The image a job runs on ``cluster``: its own key, else its accelerator's, else None."""
    if isinstance(image, str):
        return image
    return image.get(cluster) or (image.get(accelerator) if accelerator else None)


class Resources(TrainkitModel):
    """Resources of one node (pod); requests equal limits so the scheduler packs GPUs exactly."""

    cpu: CpuQuantity
    """CPU cores per node, e.g. ``32`` or ``"500m"`` (the limit, and the request unless
    ``cpu_request`` says less)."""
    memory: MemoryQuantity
    """Memory per node with a unit, e.g. ``"256Gi"`` (the limit, and the request unless
    ``memory_request`` says less)."""
    gpu: int = Field(default=0, ge=0)
    """GPUs per node, counted in the cluster's GPU resource (``nvidia.com/gpu``, …)."""
    ephemeral_storage: MemoryQuantity | None = None
    """Local disk per node (``ephemeral-storage``: the image's writable layer, logs and
    ``EmptyDir`` volumes on disk), e.g. ``"200Gi"``, requested and the limit: the scheduler
    places the pod where that much is free, and the kubelet evicts it beyond. Volcano and Kueue
    count it against the queue."""
    cpu_request: CpuQuantity | None = None
    """A CPU request below ``cpu``, only where ``Policy.burstable`` allows it: the pod is then
    Burstable, not Guaranteed, and may be throttled or evicted before Guaranteed pods."""
    memory_request: MemoryQuantity | None = None
    """A memory request below ``memory``, only where ``Policy.burstable`` allows it (the pod
    can then be OOM-killed when the node runs short)."""
    extended: dict[ResourceName, Annotated[int, Field(ge=1)]] = {}
    """Extended resources per node by name, requested and the limit (they are never
    overcommitted), e.g. ``{"vpc.amazonaws.com/efa": 4}``. Only those a network profile granted
    to the team lists (``NetworkProfile.resources``), up to the count it lists; where the job's
    own profile lists one, this count replaces the profile's. GPUs go in ``gpu``. Volcano and
    Kueue count them against the queue, and a Kueue ClusterQueue must have quota for them."""

    hugepages: dict[HugePageSize, MemoryQuantity] = {}
    """Huge pages per node by page size, requested and the limit (the API server wants them
    equal), e.g. ``{"2Mi": "1Gi"}`` (``hugepages-2Mi: 1Gi``): a whole number of pages, apart
    from ``memory``. The nodes must have pages of that size set aside; Volcano and Kueue count
    them against the queue, and a Kueue ClusterQueue must have quota for them."""

    @field_validator("hugepages")
    @classmethod
    def _whole_pages(cls, v: dict[str, str]) -> dict[str, str]:
        # "… is not positive integer multiple of hugepages-<size>" (kubernetes
        # pkg/apis/core/validation/validation.go validateResourceQuantityHugePageValue,
        # helper.IsHugePageResourceValueDivisible). Requests equal limits here, and cpu and
        # memory are always requested ("HugePages require cpu or memory",
        # ValidateContainerResourceRequirements).
        for size, amount in v.items():
            page = parse_quantity(size) or Decimal(0)
            total = parse_quantity(amount) or Decimal(0)
            if total <= 0 or total % page:
                raise ValueError(
                    f"{size}: {amount} is not a whole number of {size} pages; ask for a "
                    f"positive multiple of {size}, e.g. {_pages(page, total)}"
                )
        return v

    @field_validator("extended")
    @classmethod
    def _extended_not_native(cls, v: dict[str, int]) -> dict[str, int]:
        # Names in the kubernetes.io domain are native, not extended, and "requests."-prefixed
        # ones are quota names (kubernetes pkg/apis/core/helper/helpers.go
        # IsExtendedResourceName, IsNativeResource).
        bad = [
            n
            for n in v
            if (d := n.partition("/")[0]) == "kubernetes.io"
            or d.endswith(".kubernetes.io")
            or n.startswith("requests.")
        ]
        if bad:
            raise ValueError(
                f"{', '.join(sorted(bad))} is not an extended resource (the kubernetes.io "
                "domain is Kubernetes' own, 'requests.' names quota): use the device plugin's "
                "name, e.g. 'vpc.amazonaws.com/efa' or 'rdma/hca'"
            )
        return v

    @model_validator(mode="after")
    def _requests_within_limits(self) -> Resources:
        # The API server refuses a request above its limit (ValidateResourceRequirements).
        for field, limit in (("cpu_request", self.cpu), ("memory_request", self.memory)):
            request = getattr(self, field)
            if request is not None and (parse_quantity(request) or 0) > (
                parse_quantity(limit) or 0
            ):
                what = field.removesuffix("_request")
                raise ValueError(
                    f"{field} {request} exceeds {what} {limit}, the limit; a request may only "
                    "be lower"
                )
        return self

    @property
    def requested_cpus(self) -> int:
        """Whole CPUs of the request (``cpu_request``, else ``cpu``), rounded up as Kubernetes'
        ``Quantity.Value()`` does: what Trainer's ``auto`` counts without GPUs."""
        return math.ceil(parse_quantity(str(self.cpu_request or self.cpu)) or 0)


def _pages(page: Decimal, total: Decimal) -> str:
    """The next whole number of pages above ``total``, in the largest binary unit it fits."""
    whole = int(max(page, math.ceil(total / page) * page))
    for unit, size in (("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
        if whole % size == 0:
            return f"{whole // size}{unit}"
    return str(whole)


class Script(TrainkitModel):
    """A training script next to the definition, shipped in a ConfigMap at ``/workspace``."""

    path: str = Field(min_length=1)
    """Path of the script relative to the definition file, e.g. ``scripts/train.py``."""

    @classmethod
    def file(cls, path: str) -> Script:
        """The script at ``path``, relative to the definition file."""
        return cls(path=path)

    @model_validator(mode="after")
    def _relative(self) -> Script:
        norm = posixpath.normpath(self.path)
        if self.path.startswith("/") or norm.startswith(".."):
            raise ValueError(
                f"script path {self.path!r} must be relative to the definition file "
                "and stay inside jobs/"
            )
        return self

    @property
    def filename(self) -> str:
        """The file's name inside ``/workspace``."""
        return posixpath.basename(self.path)

    @property
    def mount_path(self) -> str:
        return f"{WORKSPACE}/{self.filename}"


class Volume(TrainkitModel):
    """A PersistentVolumeClaim mounted into every node."""

    claim: DNS1123Label
    """Name of an existing PersistentVolumeClaim in the team's namespace."""
    path: Path
    """Mount path inside the container, e.g. ``/mnt/data``."""
    read_only: bool = False
    """Mount read-only (recommended for datasets)."""
    sub_path: str | None = None
    """Mount only this sub-directory of the volume."""

    @model_validator(mode="after")
    def _not_reserved(self) -> Volume:
        # /workspace is checked against the job's script (volumes.check_workspace).
        for reserved in ("/dev/shm",):
            if self.path == reserved or self.path.startswith(reserved + "/"):
                raise ValueError(
                    f"mount path {self.path!r} is used by trainkit ({reserved}); "
                    "choose another path, e.g. /mnt/data"
                )
        return self


class Toleration(TrainkitModel):
    """Lets the job's pods run on nodes with a matching taint."""

    key: LabelKey | None = None
    """Taint key; ``None`` with ``operator='Exists'`` tolerates every taint."""
    operator: Literal["Equal", "Exists"] = "Equal"
    """``Equal`` matches ``value``; ``Exists`` matches any value."""
    value: LabelValue | None = None
    """Taint value for ``operator='Equal'``."""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None
    """Taint effect to tolerate; ``None`` means all effects."""

    def covers(self, other: Toleration) -> bool:
        """Whether every taint ``other`` tolerates is one this toleration tolerates."""
        if self.key is None:  # Exists without key: every taint
            return self.effect is None or self.effect == other.effect
        if other.key != self.key:
            return False
        if self.operator == "Equal" and (other.operator != "Equal" or other.value != self.value):
            return False
        return self.effect is None or self.effect == other.effect

    def describe(self) -> str:
        """``key=value:Effect`` as kubectl shows taints (``*`` for every key)."""
        key = self.key if self.key is not None else "*"
        value = f"={self.value}" if self.operator == "Equal" and self.value is not None else ""
        return f"{key}{value}:{self.effect or '*'}"

    @model_validator(mode="after")
    def _consistent(self) -> Toleration:
        if self.operator == "Exists" and self.value is not None:
            raise ValueError("operator 'Exists' takes no value; drop value= or use 'Equal'")
        if self.key is None and self.operator != "Exists":
            raise ValueError("a toleration without key needs operator='Exists'")
        return self


def check_program(script: Script | None, command: Sequence[str] | None, without: str) -> None:
    """At most one of ``script`` and ``command``, and no empty command; ``without`` says what
    runs with neither. Raises ValueError for the job's model validator."""
    if script is not None and command is not None:
        raise ValueError(
            "give script=Script.file('train.py') (shipped in a ConfigMap) or command=[...] "
            f"(code inside the image), not both; with neither {without}"
        )
    if command is not None and not command:
        raise ValueError(f"command is empty; give the program to run, or leave it out ({without})")


def repeated(items: Iterable[str]) -> list[str]:
    """The items that occur more than once, sorted."""
    seen: set[str] = set()
    twice: set[str] = set()
    for item in items:
        (twice if item in seen else seen).add(item)
    return sorted(twice)
