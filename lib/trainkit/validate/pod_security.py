"""Pod security of manifests: what a hand-written or overlaid pod template may not have.

trainkit never generates privileged containers or the host's process namespace, a host
path only below a directory a Team grants (``Team.host_paths``), and Linux
capabilities, the host network or IPC namespace and device paths only through a platform
``NetworkProfile``. An overlay or a hand-written manifest could add
them anyway, and nothing in the CRD schemas refuses them: these rules do.

Pod specs are found by shape, wherever a kind nests them (``trainkit.kube.pods``).
What a pod may be granted is an argument, a ``PodAllowance``: the caller builds
it from the platform's NetworkProfiles, or uses ``BASELINE``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from trainkit.kube.paths import under
from trainkit.kube.pods import containers
from trainkit.validate.findings import Finding, JsonPath

__all__ = ["BASELINE", "PodAllowance", "check_pod_security"]

_NEVER = {"hostPID": "shares the node's process namespace"}


@runtime_checkable
class GrantsPods(Protocol):
    """What a network profile grants (``trainkit.NetworkProfile`` is one)."""

    @property
    def name(self) -> str: ...
    @property
    def capabilities(self) -> Sequence[str]: ...
    @property
    def host_network(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class PodAllowance:
    """What a pod may have beyond a plain pod: added capabilities, the host network."""

    capabilities: frozenset[str]
    host_network: bool
    source: str
    """Who grants it, for messages."""
    host_paths: frozenset[str] = frozenset()
    """Directories of the nodes some Team grants (``Team.host_paths``): a hostPath volume
    below one is allowed, any other never."""
    host_ipc: bool = False
    """Whether some profile grants the node's IPC namespace (``hostIPC``)."""
    devices: frozenset[tuple[str, str]] = frozenset()
    """``(path, hostPath type)`` of the devices some profile mounts: such a hostPath volume,
    exactly, is allowed."""

    @classmethod
    def from_profiles(
        cls, profiles: Iterable[GrantsPods], host_paths: Iterable[str] = ()
    ) -> PodAllowance:
        """The union of what the platform's network profiles grant, and the node directories
        its Teams grant."""
        profiles = sorted(profiles, key=lambda p: p.name)
        names = ", ".join(repr(p.name) for p in profiles)
        return cls(
            capabilities=frozenset(_cap(c) for p in profiles for c in p.capabilities),
            host_network=any(p.host_network for p in profiles),
            source=f"NetworkProfiles {names}" if profiles else "no NetworkProfile is declared",
            host_paths=frozenset(host_paths),
            host_ipc=any(getattr(p, "host_ipc", False) for p in profiles),
            devices=frozenset(
                (d.path, d.host_path_type) for p in profiles for d in getattr(p, "devices", ())
            ),
        )

    @classmethod
    def from_platform(cls, objects: Iterable[object]) -> PodAllowance:
        """What the platform's objects grant (its NetworkProfiles, and its Teams' node
        directories), as ``trainkit check`` takes them from the plan."""
        objects = list(objects)
        paths = [
            p
            for o in objects
            if not isinstance(o, GrantsPods)
            for p in getattr(o, "host_paths", None) or ()
            if isinstance(p, str)
        ]
        return cls.from_profiles((o for o in objects if isinstance(o, GrantsPods)), paths)


BASELINE = PodAllowance(
    frozenset({"IPC_LOCK"}),
    host_network=False,
    source="the default: IPC_LOCK only, what an RDMA network profile grants",
)
"""Without the platform's profiles: IPC_LOCK for RDMA, no host network."""


def _cap(name: str) -> str:
    # The kubelet passes capabilities to the runtime with or without CAP_.
    return name.upper().removeprefix("CAP_")


def check_pod_security(
    pods: list[tuple[JsonPath, dict[str, Any]]], out: list[Finding], allow: PodAllowance
) -> None:
    """Findings for the pod specs of one manifest (``kube.pods.pod_specs``), against ``allow``."""
    for path, spec in pods:
        _check_pod(spec, path, allow, out)


def _check_pod(
    spec: dict[str, Any], path: JsonPath, allow: PodAllowance, out: list[Finding]
) -> None:
    if spec.get("hostNetwork") is True and not allow.host_network:
        out.append(
            Finding(
                (*path, "hostNetwork"),
                f"pod security: the host network is not allowed ({allow.source}); remove "
                "hostNetwork, or ask the platform team for a NetworkProfile with "
                "host_network=True",
            )
        )
    if spec.get("hostIPC") is True and not allow.host_ipc:
        out.append(
            Finding(
                (*path, "hostIPC"),
                f"pod security: hostIPC shares the node's IPC namespace and is not allowed "
                f"({allow.source}); remove it, or ask the platform team for a NetworkProfile "
                "with host_ipc=True",
            )
        )
    for key, why in _NEVER.items():
        if spec.get(key) is True:
            out.append(
                Finding((*path, key), f"pod security: {key} {why} and is never allowed; remove it")
            )
    volumes = spec.get("volumes")
    for i, volume in enumerate(volumes if isinstance(volumes, list) else []):
        if isinstance(volume, dict) and volume.get("hostPath") is not None:
            source = volume["hostPath"]
            node_dir = source.get("path") if isinstance(source, dict) else None
            if isinstance(node_dir, str) and any(under(node_dir, g) for g in allow.host_paths):
                continue  # a directory a Team grants (the plan checked it was this team's)
            kind = source.get("type") if isinstance(source, dict) else None
            if (node_dir, kind) in allow.devices:
                continue  # a device a NetworkProfile mounts (the plan checked the grant)
            granted = ", ".join(sorted(allow.host_paths))
            why = (
                f"which is not below a directory the platform grants (Team.host_paths: {granted})"
                if granted
                else "which is never allowed without a Team.host_paths grant"
            )
            out.append(
                Finding(
                    (*path, "volumes", i, "hostPath"),
                    f"pod security: volume {volume.get('name')!r} mounts a directory of the "
                    f"node (hostPath), {why}; use a PersistentVolumeClaim or an emptyDir",
                )
            )
    for where, c in containers(spec, path):
        if isinstance(c.get("securityContext"), dict):
            _check_container(c, (*where, "securityContext"), allow, out)


def _check_container(
    c: dict[str, Any], path: JsonPath, allow: PodAllowance, out: list[Finding]
) -> None:
    sc = c["securityContext"]
    name = c.get("name")
    if sc.get("privileged") is True:
        out.append(
            Finding(
                (*path, "privileged"),
                f"pod security: container {name!r} is privileged, which is never allowed; "
                "remove privileged (a NetworkProfile grants the capabilities RDMA needs)",
            )
        )
    caps = sc.get("capabilities")
    added = caps.get("add") if isinstance(caps, dict) else None
    allowed = ", ".join(repr(c) for c in sorted(allow.capabilities)) or "none"
    for i, cap in enumerate(added if isinstance(added, list) else []):
        if not isinstance(cap, str) or _cap(cap) not in allow.capabilities:
            out.append(
                Finding(
                    (*path, "capabilities", "add", i),
                    f"pod security: capability {cap!r} of container {name!r} is not allowed; "
                    f"allowed: {allowed} ({allow.source}); remove it",
                )
            )
