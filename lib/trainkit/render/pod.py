"""Pod-level pieces every job kind shares: claims, shared memory, the script volume."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..model import WORKSPACE, NetworkProfile, Toleration, Volume

__all__ = [
    "SCRIPT_VOLUME",
    "SHM_VOLUME",
    "claim_mounts",
    "claim_volumes",
    "env_list",
    "network_container",
    "network_pod",
    "script_mount",
    "script_volume",
    "shm_mount",
    "shm_volume",
    "tolerations",
]

SCRIPT_VOLUME = "script"
SHM_VOLUME = "dshm"


def claim_mounts(volumes: Sequence[Volume]) -> list[dict[str, Any]]:
    out = []
    for v in volumes:
        m: dict[str, Any] = {"mountPath": v.path, "name": v.claim}
        if v.read_only:
            m["readOnly"] = True
        if v.sub_path:
            m["subPath"] = v.sub_path
        out.append(m)
    return out


def claim_volumes(volumes: Sequence[Volume]) -> list[dict[str, Any]]:
    out = []
    for v in volumes:
        claim: dict[str, Any] = {"claimName": v.claim}
        if v.read_only:
            claim["readOnly"] = True
        out.append({"name": v.claim, "persistentVolumeClaim": claim})
    return out


def network_container(container: dict[str, Any], profile: NetworkProfile | None) -> None:
    """Add what a network profile grants to a container: its resources and capabilities."""
    if profile is None:
        return
    if profile.resources:
        res = container.setdefault("resources", {"limits": {}, "requests": {}})
        for name in sorted(profile.resources):
            # Extended resources are never overcommitted: requests equal limits.
            res["limits"][name] = res["requests"][name] = str(profile.resources[name])
    if profile.capabilities:
        container["securityContext"] = {"capabilities": {"add": sorted(set(profile.capabilities))}}


def network_pod(spec: dict[str, Any], profile: NetworkProfile | None) -> None:
    """The host network, when the profile grants it, with cluster DNS kept working."""
    if profile is not None and profile.host_network:
        spec["hostNetwork"] = True
        # The default policy would fall back to the node's resolv.conf and lose
        # the cluster's Service names, which the operator's master address is.
        spec["dnsPolicy"] = "ClusterFirstWithHostNet"


def env_list(env: dict[str, str]) -> list[dict[str, str]]:
    return [{"name": k, "value": v} for k, v in env.items()]


def script_mount() -> dict[str, Any]:
    return {"mountPath": WORKSPACE, "name": SCRIPT_VOLUME}


def script_volume(configmap: str) -> dict[str, Any]:
    return {"configMap": {"name": configmap}, "name": SCRIPT_VOLUME}


def shm_mount() -> dict[str, Any]:
    return {"mountPath": "/dev/shm", "name": SHM_VOLUME}


def shm_volume(size: str) -> dict[str, Any]:
    # A memory-backed emptyDir: the container runtime's default /dev/shm is 64 MiB,
    # too small for data loader workers and NCCL.
    return {"emptyDir": {"medium": "Memory", "sizeLimit": size}, "name": SHM_VOLUME}


def tolerations(items: Sequence[Toleration]) -> list[dict[str, Any]]:
    return [t.model_dump(exclude_none=True) for t in items]
