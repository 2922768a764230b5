"""Volumes a job mounts besides its claims: scratch space, Secret and ConfigMap files,
service-account tokens for other systems, and CSI volumes of drivers the cluster lists.

Each kind is typed for what a job may say. What it may read is the platform's to grant: a
Secret's or ConfigMap's keys through ``Team.secrets`` / ``Team.config_maps`` (as for env),
a CSI driver through ``Cluster.csi_drivers``, a directory of the node (``HostPath``) through
``Team.host_paths`` only.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from typing import Annotated

from pydantic import (
    AfterValidator,
    Field,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from ..kube.paths import under
from .base import TrainkitModel, by_own_field
from .env import Key
from .fields import DNS1123Label, MemoryQuantity, ObjectName, Path
from .job import GENERATED_VOLUMES, WORKSPACE, Script, Volume, repeated

__all__ = [
    "AnyVolume",
    "ConfigMapVolume",
    "CsiVolume",
    "EmptyDir",
    "HostPath",
    "SecretVolume",
    "ServiceAccountToken",
    "check_volumes",
    "check_workspace",
    "volume_name",
]

_RESERVED_PATHS = ("/dev/shm",)
"""Where trainkit mounts the job's shared memory (``shm_size``). ``/workspace`` is the
script's directory only where the job ships one (``check_workspace``)."""
# Kubeflow Trainer's initializers write the dataset and the model there on every node
# (trainer v2.3.0 pkg/constants/constants.go DatasetMountPath, ModelMountPath).
_TRAINER_PATHS = (f"{WORKSPACE}/dataset", f"{WORKSPACE}/model")


def _relative(v: str) -> str:
    # The API server takes subPath and an item's path only as a relative path without '..'
    # (k8s.io/kubernetes pkg/apis/core/validation/validation.go validateLocalDescendingPath).
    if not v or v.startswith("/") or ".." in v.split("/") or posixpath.normpath(v) != v:
        raise ValueError(
            f"{v!r} is not a relative path inside the volume: no leading '/', no '..', e.g. "
            "'config/train.yaml'"
        )
    return v


RelativePath = Annotated[
    str, AfterValidator(_relative), WithJsonSchema({"type": "string", "pattern": "^[^/]"})
]


class _Mount(TrainkitModel):
    """Where every kind of volume is mounted."""

    name: DNS1123Label
    """Volume name, unique in the job (``scratch``, ``tokens``)."""
    path: Path
    """Mount path inside the container, e.g. ``/scratch``."""
    sub_path: RelativePath | None = None
    """Mount only this file or directory of the volume (``subPath``): it is then not updated
    when the source changes."""

    @model_validator(mode="after")
    def _not_reserved(self) -> _Mount:
        for reserved in _RESERVED_PATHS:
            if self.path == reserved or self.path.startswith(reserved + "/"):
                raise ValueError(
                    f"mount path {self.path!r} is used by trainkit ({reserved}); choose another "
                    "path, e.g. /scratch"
                )
        return self


class EmptyDir(_Mount):
    """Scratch space that lives as long as the pod: ``EmptyDir(name="scratch",
    path="/scratch", size="200Gi")`` on the node's disk, or ``memory=True`` in RAM (tmpfs)."""

    size: MemoryQuantity
    """The most it may hold (``sizeLimit``), e.g. ``"200Gi"``: the kubelet evicts the pod
    beyond it. On disk it comes out of the node's ephemeral storage (count it in
    ``Resources.ephemeral_storage``); in memory it counts against the pod's memory."""
    memory: bool = False
    """In RAM (``medium: Memory``) instead of on the node's disk."""


class SecretVolume(_Mount):
    """Keys of a Secret of the team's namespace as files, read-only:
    ``SecretVolume(name="keys", secret="gcs-creds", path="/etc/gcs", items={"key.json":
    "key.json"})``. Only keys the Team grants (``Team.secrets``); without ``items`` every key
    of the Secret, which the Team must list with every key it holds."""

    secret: ObjectName
    """Secret name; one the Team lists in ``secrets``."""
    items: dict[Key, RelativePath] = {}
    """Key → file name under ``path``; only these keys are mounted. Empty: every key, each as
    a file of its own name."""
    optional: bool = False
    """Start the pod even when the Secret (or a key of ``items``) does not exist."""


class ConfigMapVolume(_Mount):
    """Keys of a ConfigMap of the team's namespace as files, read-only:
    ``ConfigMapVolume(name="cfg", config_map="train-config", path="/etc/train")``. Only
    keys the Team grants (``Team.config_maps``); without ``items`` every key, which the Team
    must list with every key the ConfigMap holds."""

    config_map: ObjectName
    """ConfigMap name; one the Team lists in ``config_maps``."""
    items: dict[Key, RelativePath] = {}
    """Key → file name under ``path``; only these keys are mounted. Empty: every key."""
    optional: bool = False
    """Start the pod even when the ConfigMap (or a key of ``items``) does not exist."""


class ServiceAccountToken(_Mount):
    """A token of the pod's ServiceAccount for another system, rotated by the kubelet
    (a projected ``serviceAccountToken``): ``ServiceAccountToken(name="vault-token",
    path="/var/run/secrets/vault", audience="vault")``, the file ``<path>/token``."""

    audience: str = Field(min_length=1, max_length=253, pattern=r"^\S+$")
    """Who the token is for (its ``aud``), e.g. ``"vault"`` or ``"sts.amazonaws.com"``."""
    expiration_seconds: int = Field(default=3600, ge=600, le=2**32)
    """How long each token is valid; the kubelet renews it at 80 %. The API server takes at
    least 600 s."""
    file: RelativePath = "token"
    """File name of the token under ``path``."""


class CsiVolume(_Mount):
    """An inline volume of a CSI driver the cluster lists (``Cluster.csi_drivers``), e.g. the
    Secrets Store driver: ``CsiVolume(name="secrets", driver="secrets-store.csi.k8s.io",
    path="/mnt/secrets", attributes={"secretProviderClass": "ml-secrets"})``."""

    driver: ObjectName
    """The CSI driver's name; one the Cluster lists in ``csi_drivers``."""
    attributes: dict[str, Annotated[str, Field(max_length=4096)]] = {}
    """The driver's ``volumeAttributes`` (driver-specific)."""
    read_only: bool = True
    """Mount read-only (the default: inline CSI volumes mostly carry secrets or datasets)."""
    fs_type: str | None = Field(default=None, pattern=r"^[a-z0-9]+$")
    """File system type (``fsType``), where the driver asks for one."""

    @field_validator("attributes")
    @classmethod
    def _keys(cls, attributes: dict[str, str]) -> dict[str, str]:
        for key in attributes:
            if not key or any(c.isspace() for c in key):
                raise ValueError(f"attribute key {key!r} is empty or has spaces")
        return attributes


class HostPath(_Mount):
    """A directory of the node, only one under a directory the Team grants
    (``Team.host_paths``), e.g. a local NVMe cache: ``HostPath(name="nvme",
    host_path="/mnt/nvme/cache", path="/cache")``. It is the node's, shared with every pod
    there and kept after the job: the platform decides which ones a team may touch."""

    host_path: Path
    """The directory on the node, e.g. ``/mnt/nvme/cache``; it must exist
    (``type: Directory``)."""
    read_only: bool = True
    """Mount read-only (the default); ``False`` lets the job write to the node."""

    def below(self, directory: str) -> bool:
        """Whether ``host_path`` is ``directory`` or below it (a ``Team.host_paths`` grant)."""
        return under(self.host_path, directory)

    @field_validator("host_path")
    @classmethod
    def _plain(cls, v: str) -> str:
        if ".." in v.split("/") or posixpath.normpath(v) != v:
            raise ValueError(
                f"host_path {v!r} must be a plain absolute path (no '..', no trailing '/'), "
                "e.g. '/mnt/nvme/cache'"
            )
        return v


AnyVolume = Annotated[
    Volume | EmptyDir | SecretVolume | ConfigMapVolume | ServiceAccountToken | CsiVolume | HostPath,
    by_own_field(
        {
            "claim": Volume,
            "size": EmptyDir,
            "secret": SecretVolume,
            "config_map": ConfigMapVolume,
            "audience": ServiceAccountToken,
            "driver": CsiVolume,
            "host_path": HostPath,
        }
    ),
]
"""Every kind of volume a job may mount."""


def volume_name(v: AnyVolume) -> str:
    """The pod volume's name: a claim's own name, else the volume's ``name``."""
    return v.claim if isinstance(v, Volume) else v.name


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top + "/")


def check_workspace(
    volumes: Sequence[AnyVolume],
    script: Script | None,
    trainer: bool = False,
    field: str = "volumes",
) -> None:
    """No mount hides what trainkit puts in ``/workspace``: with a script, the script (at
    ``/workspace/<file>``, a read-only ``subPath`` of the scripts' ConfigMap: render/pod.py
    pod_volumes) and the directory that holds it (a volume there would take the image's
    writable ``/workspace`` away, and the runtime would create the script's file in the
    volume to mount it over); on a TrainJob (``trainer``), Trainer's initializer directories.
    Anything else under ``/workspace`` is the job's: ``/workspace/data`` beside the script, or
    ``/workspace`` itself for a job that runs its own command."""
    for i, v in enumerate(volumes):
        if script is not None and (v.path == WORKSPACE or _under(v.path, script.mount_path)):
            raise ValueError(
                f"{field}[{i}] at {v.path!r} would hide the script, which trainkit mounts at "
                f"{script.mount_path} (the directory {WORKSPACE} stays the image's, writable); "
                f"mount beside it, e.g. {WORKSPACE}/data, or elsewhere"
            )
        for top in _TRAINER_PATHS if trainer else ():
            if _under(v.path, top) or _under(top, v.path):
                raise ValueError(
                    f"{field}[{i}] at {v.path!r} would clash with {top}, where Kubeflow "
                    "Trainer's initializers put the dataset and the model on every node; "
                    f"mount elsewhere, e.g. {WORKSPACE}/data"
                )


def check_volumes(volumes: Sequence[AnyVolume]) -> None:
    """One mount per path, one volume per name and claim, no clash with the volumes trainkit
    generates; raises ValueError for the job's model validator."""
    for v in volumes:
        if volume_name(v) in GENERATED_VOLUMES:
            # Pod volumes are named after their claims: a claim named like a generated volume
            # would replace it (for a TrainJob silently, through Trainer's merge by name).
            what = "claim" if isinstance(v, Volume) else "volume"
            raise ValueError(
                f"{what} {volume_name(v)!r} has the name of a volume trainkit generates "
                f"({', '.join(sorted(GENERATED_VOLUMES))}); rename the {what}"
            )
    dupes = repeated(v.path for v in volumes)
    if dupes:
        raise ValueError(f"volumes mount more than once at {', '.join(dupes)}")
    claims = [v.claim for v in volumes if isinstance(v, Volume)]
    if len(set(claims)) != len(claims):
        raise ValueError("each claim may be mounted once; use sub_path for parts of a volume")
    twice = repeated(volume_name(v) for v in volumes)
    if twice:
        raise ValueError(
            f"two volumes are named {twice[0]!r} (a claim's volume takes the claim's name); "
            "give each a name of its own"
        )


def check_group_volumes(
    job_volumes: Sequence[AnyVolume], own: Sequence[AnyVolume], where: str, field: str
) -> None:
    """A pod group's own volumes (``field``) beside the job's, held to the rules of
    ``check_volumes`` on the group's pods (``where``), which get both."""
    if not own:
        return
    try:
        check_volumes([*job_volumes, *own])
    except ValueError as e:
        raise ValueError(f"on {where}, with the job's volumes and {field}: {e}") from None


def volume_fields(obj: object) -> list[tuple[str, AnyVolume]]:
    """Every volume a definition mounts on some pod, with its field: the job's ``volumes``
    and, for a kind with pod groups of their own volumes (Ray's head and worker groups),
    theirs; grants and cluster rules hold each wherever it is given."""
    own = getattr(obj, "group_volume_fields", None)
    out = [(f"volumes[{i}]", v) for i, v in enumerate(getattr(obj, "volumes", None) or ())]
    return [*out, *(own() if callable(own) else ())]
