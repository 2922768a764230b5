"""Policy the platform engineer declares in ``jobs/platform/``: registries, GPU caps, networks.

Definitions have no field that asks for a privileged container or the host's
network: the only way to more than a plain pod is a ``NetworkProfile``
declared here, which grants capabilities, extended resources and (optionally)
the host network to the jobs and runtimes that name it. A node's directory
(``HostPath``) needs the Team's grant, ``Team.host_paths``.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal, TypeVar

from pydantic import AfterValidator, Field, field_validator

from ..injected_env import refused_env_reason
from ..kube.paths import under
from .base import TrainkitModel
from .fields import ClusterRef, DNS1123Label, EnvName, EnvValue, ObjectName, ResourceName

__all__ = [
    "DEVICE_VOLUME",
    "Capability",
    "HostDevice",
    "NetworkProfile",
    "Policy",
    "image_allowed",
    "valid_reference",
]

# Linux capabilities (capabilities(7)) as Kubernetes writes them, without CAP_.
Capability = Literal[
    "AUDIT_CONTROL", "AUDIT_READ", "AUDIT_WRITE", "BLOCK_SUSPEND", "BPF", "CHECKPOINT_RESTORE",
    "CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "IPC_LOCK", "IPC_OWNER",
    "KILL", "LEASE", "LINUX_IMMUTABLE", "MAC_ADMIN", "MAC_OVERRIDE", "MKNOD", "NET_ADMIN",
    "NET_BIND_SERVICE", "NET_BROADCAST", "NET_RAW", "PERFMON", "SETFCAP", "SETGID", "SETPCAP",
    "SETUID", "SYS_ADMIN", "SYS_BOOT", "SYS_CHROOT", "SYS_MODULE", "SYS_NICE", "SYS_PACCT",
    "SYS_PTRACE", "SYS_RAWIO", "SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "SYSLOG",
    "WAKE_ALARM",
]  # fmt: skip


def _registry(v: str) -> str:
    if "/" not in v:
        raise ValueError(
            f"{v!r} names no repository; to allow every image of a registry write {v + '/'!r}"
        )
    return v


Registry = Annotated[str, Field(min_length=1, pattern=r"^\S+$"), AfterValidator(_registry)]


def _package_index(v: str) -> str:
    if not re.fullmatch(r"https://[A-Za-z0-9.-]+(:[0-9]+)?/([A-Za-z0-9._~+-]+/)*", v):
        raise ValueError(
            f"{v!r} is not a package index URL: https://, a host without user or password, a "
            "path of plain segments ending in '/', no query (e.g. "
            "'https://pypi.example.com/simple/')"
        )
    return v


def _package_source(v: str) -> str:
    if not re.fullmatch(
        r"(https|git\+https)://[A-Za-z0-9.-]+(:[0-9]+)?/([A-Za-z0-9._~+-]+/)*|file:///([A-Za-z0-9._~+-]+/)+",
        v,
    ):
        raise ValueError(
            f"{v!r} is not a source prefix: https://, git+https:// or file:///, a host "
            "without user or password, plain path segments, ending in '/' (e.g. "
            "'https://files.example.com/wheels/')"
        )
    if "/../" in v or "/./" in v:
        raise ValueError(f"{v!r} has a '.' or '..' segment; write the path plainly")
    return v


def _repo_path(v: str) -> str:
    parts = v.split("/")
    if v.startswith("/") or "\\" in v or any(p in ("", ".", "..") for p in parts):
        raise ValueError(
            f"{v!r} is not a path from the repository root: plain segments joined by '/', "
            "e.g. 'crds/gpu-east.yaml'"
        )
    return v


def _sha256(v: str) -> str:
    if not re.fullmatch(r"[0-9a-f]{64}", v):
        raise ValueError(f"{v!r} is not a SHA-256 (64 lowercase hex digits: sha256sum FILE)")
    return v


_T = TypeVar("_T")

RepoPath = Annotated[str, AfterValidator(_repo_path)]
Sha256 = Annotated[str, AfterValidator(_sha256)]
PackageIndex = Annotated[str, AfterValidator(_package_index)]
PackageSource = Annotated[str, AfterValidator(_package_source)]


# The grammar of an image reference, as container runtimes parse it (distribution/reference
# regexp.go): an optional domain, path components of lowercase letters and digits joined by
# one ".", "_", "__" or dashes, then a tag and/or a digest. No "..", no empty component.
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[0-9a-fA-F:]+\])(?::[0-9]+)?"
_REFERENCE = re.compile(
    rf"(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
    r"(?::[\w][\w.-]{0,127})?(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?"
)


def valid_reference(image: str) -> bool:
    """Whether ``image`` parses as an image reference (a prefix check of anything else, such
    as ``registry.example.com/ml/../evil/x``, would judge a string, not the image)."""
    return _REFERENCE.fullmatch(image) is not None


def _matches(image: str, prefix: str) -> bool:
    if prefix.endswith(("/", ":")):
        return image.startswith(prefix)
    return image == prefix or image.startswith((prefix + ":", prefix + "@"))


def _canonical(image: str) -> str:
    """The reference as the container runtime reads it: Docker Hub spelt out."""
    first, slash, _ = image.partition("/")
    if not slash:
        return f"docker.io/library/{image}"
    if "." not in first and ":" not in first and first != "localhost":
        return f"docker.io/{image}"
    return image


def image_allowed(image: str, prefixes: list[str]) -> bool:
    """Whether ``image`` is under one of ``prefixes`` (``[]`` allows every image).

    A prefix ending in ``/`` or ``:`` matches by prefix; any other prefix is a
    whole repository and matches only itself with a tag or digest, so
    ``registry.example.com/ml`` never admits ``registry.example.com/ml-evil/x``.
    Docker Hub images match as written and spelt out (``docker.io/library/…``).
    """
    if not prefixes:
        return True
    forms = {image, _canonical(image)}
    return valid_reference(image) and any(_matches(f, p) for f in forms for p in prefixes)


class Policy(TrainkitModel):
    """Platform-wide rules every job and runtime must follow; at most one per platform."""

    registries: list[Registry] = []
    """Allowed image prefixes, e.g. ``"registry.example.com/ml/"``; a prefix ends with ``/`` or
    ``:``, anything else is one whole repository. Empty allows every registry."""
    max_gpus_per_job: int | None = Field(default=None, ge=0)
    """Most GPUs one job may use (nodes × GPUs per node); ``None`` means no cap."""
    burstable: bool = False
    """Whether jobs and runtimes may request less CPU or memory than their limit
    (``cpu_request``, ``memory_request``). Off: every pod is Guaranteed, never throttled or
    evicted for another pod's burst."""
    max_termination_grace_period: int = Field(default=300, ge=0)
    """Most seconds a pod may take to stop after SIGTERM (``termination_grace_period``, a
    runtime's or a patch's): a preempted or deleted pod keeps its GPUs until it has stopped, so
    a long grace period delays the jobs waiting for them."""
    package_indexes: list[PackageIndex] = []
    """Package indexes a RayJob's ``runtime_env.pip`` installs from, e.g.
    ``["https://pypi.example.com/simple/"]``: trainkit passes the first to pip as
    ``--index-url`` and the others as ``--extra-index-url`` in every RayJob that installs
    packages, so the job cannot choose another. Empty: the image's own pip configuration
    decides (PyPI unless it says otherwise)."""
    package_sources: list[PackageSource] = []
    """URL prefixes a ``runtime_env.pip`` requirement may name directly
    (``"name @ https://files.example.com/wheels/name-1.0-py3-none-any.whl"``,
    ``"name @ git+https://git.example.com/ml/name.git@v1"``), each ending in ``/``. Empty:
    packages come by name from the indexes only."""
    crd_checksums: dict[RepoPath, Sha256] = {}
    """CRD files inside the repository that ``trainkit check`` and ``validate`` may read
    (``--crds``/``TRAINKIT_CRDS`` pointing into the work tree), by path from the root, each
    with its SHA-256, e.g. ``{"crds/gpu-east.yaml": "9f86…"}``: a pull request can add or
    change any file there, so a file not listed, or with another checksum, is an error
    (files whose bytes are trainkit's pinned upstream CRDs need no entry)."""


# Multus reads its annotation as a comma-separated list of ``[namespace/]name[@interface]``,
# each name and namespace a DNS-1123 label, the interface under IFNAMSIZ (16) with no '/' or
# space (k8snetworkplumbingwg/multus-cni v4.2.4 pkg/k8sclient/k8sclient.go
# parsePodNetworkObjectName); a string with '[', '{' or '"' is read as JSON instead.
_LABEL = r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?"
_ATTACHMENT = re.compile(
    rf"(?:(?P<ns>{_LABEL})/)?(?P<name>{_LABEL})(?:@(?P<ifname>[A-Za-z0-9_.-]{{1,15}}))?"
)


def _attachment(v: str) -> str:
    if not _ATTACHMENT.fullmatch(v):
        raise ValueError(
            f"{v!r} is not a NetworkAttachmentDefinition reference as Multus reads it: "
            "'[namespace/]name[@interface]', the names DNS-1123 labels, the interface at most "
            "15 letters, digits, '-', '_' or '.' (e.g. 'ib-net', 'fabric/ib-net@net1')"
        )
    return v


NetworkAttachment = Annotated[str, AfterValidator(_attachment)]

DEVICE_VOLUME = "fabric-device-{i}"
"""The pod volume of a network profile's ``i``-th device."""

_DEVICE = re.compile(r"/dev(/[A-Za-z0-9][A-Za-z0-9_.:-]*)+")


class HostDevice(TrainkitModel):
    """A device of the node mounted into the pods at the same path, e.g.
    ``HostDevice(path="/dev/infiniband", directory=True)``. The mount makes the device node
    visible; whether the container may open it is the container runtime's device cgroup's
    decision (a device plugin or DRA driver adds the devices it allocates there, a plain
    container runtime allows only its defaults), so name what the platform's nodes permit."""

    path: str
    """The device under ``/dev/``, e.g. ``/dev/infiniband/uverbs0``."""
    directory: bool = False
    """A directory of devices (``hostPath`` type ``Directory``, e.g. ``/dev/infiniband``);
    otherwise one character device (type ``CharDevice``)."""

    @field_validator("path")
    @classmethod
    def _under_dev(cls, v: str) -> str:
        parts = v.split("/")
        if not _DEVICE.fullmatch(v) or any(p in (".", "..") for p in parts):
            raise ValueError(
                f"{v!r} is not a device path: '/dev/' and plain names, e.g. "
                "'/dev/infiniband' or '/dev/infiniband/uverbs0'"
            )
        if v == "/dev/shm" or v.startswith("/dev/shm/"):
            raise ValueError(
                f"{v!r} is the pods' shared memory, which jobs size with shm_size; it is no device"
            )
        return v

    def overlaps(self, path: str) -> bool:
        """Whether a mount at ``path`` is this device's path, below it or above it."""
        return under(path, self.path) or under(self.path, path)

    @property
    def host_path_type(self) -> str:
        return "Directory" if self.directory else "CharDevice"


class NetworkProfile(TrainkitModel):
    """What pods of the jobs and runtimes naming it (``network=``) are granted, e.g. RDMA.

    This is the only way a definition gets Linux capabilities, extra device
    resources or the host network; privileged containers cannot be asked for at
    all, host paths only where ``Team.host_paths`` grants them.
    """

    name: DNS1123Label
    """Profile name that jobs and runtimes give as ``network=``."""
    capabilities: list[Capability] = []
    """Linux capabilities added to the container, e.g. ``["IPC_LOCK"]`` to pin RDMA memory."""
    resources: dict[ResourceName, Annotated[int, Field(ge=1)]] = {}
    """Extended resources each pod requests (and is limited to), e.g. ``{"rdma/hca": 1}``."""
    host_network: bool = False
    """Run pods in the node's network namespace (with ``dnsPolicy: ClusterFirstWithHostNet``)."""
    host_ipc: bool = False
    """Share the node's IPC namespace (``hostIPC``): System V shared memory and semaphores of
    every process on the node, e.g. for a fabric manager's or MPS daemon's segments."""
    networks: list[NetworkAttachment] = []
    """Multus secondary networks each pod is attached to, by NetworkAttachmentDefinition
    (``k8s.v1.cni.cncf.io/networks``): ``"name"`` in the team's namespace,
    ``"namespace/name"`` elsewhere, ``"…@net1"`` to name the interface, e.g.
    ``["ib-net", "fabric/roce@net1"]``. The platform creates the definitions; a pod naming
    one that does not exist never starts."""
    devices: list[HostDevice] = []
    """Devices of the node mounted into the training container at the same path
    (``hostPath`` volumes of type ``CharDevice`` or ``Directory``), e.g.
    ``[HostDevice(path="/dev/infiniband", directory=True)]``."""
    claims: dict[DNS1123Label, ObjectName] = {}
    """Dynamic Resource Allocation: each pod's claims, by the name the pod gives each, on the
    ResourceClaimTemplate of the team's namespace it is made from, e.g.
    ``{"nics": "rdma-nics"}``. Each pod gets its own ResourceClaim from the template
    (``resourceClaims``), which the training container uses (``resources.claims``). The
    platform creates the templates in the namespaces of the teams it grants the profile; a
    pod naming one that does not exist never starts. Queues do not count claimed devices."""
    env: dict[EnvName, EnvValue] = {}
    """Environment of every training container using the profile: the fabric's NCCL/UCX
    settings, e.g. ``{"NCCL_IB_HCA": "mlx5_bond", "NCCL_SOCKET_IFNAME": "eth0"}``. A job or
    runtime naming the profile may not set these itself."""
    clusters: list[ClusterRef] | None = None
    """Clusters the profile exists on; ``None`` means every cluster."""

    @field_validator("networks", "devices")
    @classmethod
    def _once(cls, v: list[_T]) -> list[_T]:
        keys = [x.path if isinstance(x, HostDevice) else str(x) for x in v]
        twice = sorted({k for k in keys if keys.count(k) > 1})
        if twice:
            raise ValueError(f"{', '.join(map(str, twice))} listed twice; name each once")
        return v

    @field_validator("env")
    @classmethod
    def _no_reserved_env(cls, env: dict[str, str]) -> dict[str, str]:
        # Every kind's pods may use a profile: what any operator or launcher sets is refused.
        kinds = ("PyTorchJob", "MPIJob", "TFJob", "PaddleJob", "XGBoostJob", "JAXJob", "TrainJob")
        bad = [
            (k, why)
            for k in env
            if (why := next(filter(None, (refused_env_reason(k, kind) for kind in kinds)), None))
        ]
        if bad:
            raise ValueError(
                "; ".join(f"{k} may not be set: {why}" for k, why in bad) + " — remove it from env"
            )
        return env
