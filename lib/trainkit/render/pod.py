"""Pod-level pieces every job kind shares: claims, shared memory, the script volume."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..model import WORKSPACE, Cluster, NetworkProfile, SecretKey, Toleration, Volume
from ..model.env import ConfigMapKey, EnvRef, EnvSource, PodField, SecretEnv
from ..model.job import SCRIPT_VOLUME, SHM_VOLUME
from ..model.lifecycle import Hook
from ..model.placement import NodeLabel, PodAffinity, Topology
from ..model.pod_metadata import MULTUS_NETWORKS
from ..model.probes import Probe
from ..model.rules import DEVICE_VOLUME
from ..model.security import ContainerSecurityContext, SecurityContext
from ..model.volumes import (
    AnyVolume,
    ConfigMapVolume,
    EmptyDir,
    HostPath,
    SecretVolume,
    ServiceAccountToken,
    volume_name,
)

__all__ = [
    "GPU_HIDING_ENV",
    "SCRIPT_VOLUME",
    "SHM_VOLUME",
    "claim_mounts",
    "claim_volumes",
    "container_security",
    "env_list",
    "env_only",
    "env_sources",
    "fabric_annotations",
    "fabric_volumes",
    "forwarded",
    "hide_gpus",
    "hides_gpus",
    "job_ports",
    "lifecycle",
    "network_container",
    "network_pod",
    "one_per_node",
    "placement",
    "pod_access",
    "pod_affinity",
    "pod_security",
    "pod_settings",
    "pod_volumes",
    "probes",
    "rsh_port_args",
    "sshd_port",
    "tolerations",
]


def _mount(v: AnyVolume) -> dict[str, Any]:
    m: dict[str, Any] = {"mountPath": v.path, "name": volume_name(v)}
    # Secret, ConfigMap and projected volumes are read-only whatever the mount says
    # (the kubelet's atomic writer); saying so shows it.
    if getattr(v, "read_only", False) or isinstance(
        v, SecretVolume | ConfigMapVolume | ServiceAccountToken
    ):
        m["readOnly"] = True
    if v.sub_path:
        m["subPath"] = v.sub_path
    return m


def _items(items: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"key": k, "path": items[k]} for k in sorted(items)]


def _source(v: AnyVolume) -> dict[str, Any]:
    """The pod volume of ``v``."""
    out: dict[str, Any] = {"name": volume_name(v)}
    if isinstance(v, Volume):
        claim: dict[str, Any] = {"claimName": v.claim}
        if v.read_only:
            claim["readOnly"] = True
        out["persistentVolumeClaim"] = claim
    elif isinstance(v, EmptyDir):
        empty: dict[str, Any] = {"medium": "Memory"} if v.memory else {}
        out["emptyDir"] = {**empty, "sizeLimit": v.size}
    elif isinstance(v, SecretVolume | ConfigMapVolume):
        source: dict[str, Any]
        if isinstance(v, SecretVolume):
            key, source = "secret", {"secretName": v.secret}
        else:
            key, source = "configMap", {"name": v.config_map}
        if v.items:
            source["items"] = _items(v.items)
        if v.optional:
            source["optional"] = True
        out[key] = source
    elif isinstance(v, ServiceAccountToken):
        token = {"audience": v.audience, "expirationSeconds": v.expiration_seconds, "path": v.file}
        out["projected"] = {"sources": [{"serviceAccountToken": token}]}
    elif isinstance(v, HostPath):
        out["hostPath"] = {"path": v.host_path, "type": "Directory"}
    else:
        csi: dict[str, Any] = {"driver": v.driver}
        if v.fs_type is not None:
            csi["fsType"] = v.fs_type
        if v.read_only:
            csi["readOnly"] = True
        if v.attributes:
            csi["volumeAttributes"] = dict(sorted(v.attributes.items()))
        out["csi"] = csi
    return out


def claim_mounts(volumes: Sequence[AnyVolume]) -> list[dict[str, Any]]:
    """The ``volumeMounts`` of a job's volumes, in the order given."""
    return [_mount(v) for v in volumes]


def claim_volumes(volumes: Sequence[AnyVolume]) -> list[dict[str, Any]]:
    """The pod ``volumes`` of a job's volumes, in the order given."""
    return [_source(v) for v in volumes]


def network_container(container: dict[str, Any], profile: NetworkProfile | None) -> None:
    """Add what a network profile gives a container: its env, resources and capabilities.

    The profile's variables follow the container's own; the plan refuses a job or
    runtime that sets one of them, so no name is written twice."""
    if profile is None:
        return
    if profile.env:
        container["env"] = [*container.get("env", []), *env_list(dict(sorted(profile.env.items())))]
    if profile.resources:
        res = container.setdefault("resources", {"limits": {}, "requests": {}})
        for name in sorted(profile.resources):
            if name in res["limits"]:
                continue  # the job's own count (Resources.extended) replaces the profile's
            # Extended resources are never overcommitted: requests equal limits.
            res["limits"][name] = res["requests"][name] = str(profile.resources[name])
    if profile.claims:
        # Every name must be one of the pod's resourceClaims (kubernetes
        # pkg/apis/core/validation/validation.go validateResourceClaimNames); fabric_pod adds them.
        res = container.setdefault("resources", {"limits": {}, "requests": {}})
        res["claims"] = [{"name": name} for name in sorted(profile.claims)]
    if profile.capabilities:
        # Added after the job's dropped ones (a container may drop ALL and keep IPC_LOCK).
        context = container.setdefault("securityContext", {})
        context.setdefault("capabilities", {})["add"] = sorted(set(profile.capabilities))


def container_security(container: dict[str, Any], job: object) -> None:
    """The job's ``container_security_context`` on ``container`` (before a network profile
    adds its capabilities)."""
    context: ContainerSecurityContext | None = getattr(job, "container_security_context", None)
    if context is not None and (rendered := context.render()):
        container["securityContext"] = rendered


def pod_security(spec: dict[str, Any], job: object) -> None:
    """The job's ``security_context`` as the pod's."""
    context: SecurityContext | None = getattr(job, "security_context", None)
    if context is not None and (rendered := context.render()):
        spec["securityContext"] = rendered


# The NVIDIA container runtime exposes the GPUs the image's NVIDIA_VISIBLE_DEVICES names (CUDA
# images say "all") to a container that requests none, unless the pod's env blanks it:
# mpi-operator does so for its launcher (pkg/controller/mpi_job_controller.go
# nvidiaDisableEnvVars), trainkit for every container without a GPU. After the device
# plugin's variables, the container's own win, so a container with GPUs must not get them.
GPU_HIDING_ENV = {"NVIDIA_VISIBLE_DEVICES": "", "NVIDIA_DRIVER_CAPABILITIES": ""}


def hides_gpus(cluster: Cluster, gpus: int) -> bool:
    """Whether a container with ``gpus`` GPUs on ``cluster`` gets the blank NVIDIA variables:
    without GPUs, except where the stack is ROCm (which exposes only requested devices)."""
    return gpus == 0 and cluster.accelerator != "rocm"


def hide_gpus(container: dict[str, Any], cluster: Cluster) -> None:
    """Blank the NVIDIA variables of ``container`` when its limits hold no GPU of the
    cluster's resource (see ``GPU_HIDING_ENV``)."""
    limits = (container.get("resources") or {}).get("limits") or {}
    gpus = str(limits.get(cluster.gpu_resource, "0"))
    if hides_gpus(cluster, 0 if gpus in ("0", "") else 1):
        container["env"] = [*container.get("env", []), *env_list(GPU_HIDING_ENV)]


def env_only(profile: NetworkProfile | None) -> NetworkProfile | None:
    """The profile's env without its fabric (devices, resources, capabilities, host network
    and IPC, Multus networks): what a pod that only starts ranks over ssh (an MPI launcher
    that is no host) gets, to forward the env."""
    if profile is None:
        return None
    return profile.model_copy(
        update={
            "resources": {},
            "capabilities": [],
            "host_network": False,
            "host_ipc": False,
            "networks": [],
            "devices": [],
            "claims": {},
        }
    )


def fabric_annotations(profile: NetworkProfile | None) -> dict[str, str]:
    """The pod annotations of a profile's Multus networks (none without any). Multus splits
    the value at commas and trims each item (multus-cni v4.2.4 pkg/k8sclient/k8sclient.go
    parsePodNetworkAnnotation)."""
    if profile is None or not profile.networks:
        return {}
    return {MULTUS_NETWORKS: ",".join(profile.networks)}


def fabric_volumes(
    profile: NetworkProfile | None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(volumes, volumeMounts)`` of a profile's devices: each a ``hostPath`` of its type
    (the kubelet refuses to start the pod when the path is not one: pkg/volume/hostpath
    host_path.go checkType), mounted at the same path."""
    if profile is None:
        return [], []
    volumes, mounts = [], []
    for i, device in enumerate(profile.devices):
        name = DEVICE_VOLUME.format(i=i)
        volumes.append(
            {"hostPath": {"path": device.path, "type": device.host_path_type}, "name": name}
        )
        mounts.append({"mountPath": device.path, "name": name})
    return volumes, mounts


def forwarded(names: Iterable[str], profile: NetworkProfile | None) -> list[str]:
    """The variables an MPI launcher passes to the ranks (``mpirun -x NAME``): ``names``, then
    the network profile's; sshd gives a rank none of the worker pod's env."""
    all_names = [*names, *(sorted(profile.env) if profile is not None else ())]
    return list(dict.fromkeys(all_names))


def network_pod(spec: dict[str, Any], profile: NetworkProfile | None) -> None:
    """The host network, when the profile grants it, with cluster DNS kept working; the
    host's IPC namespace, when it grants that."""
    if profile is not None and profile.host_network:
        spec["hostNetwork"] = True
        # The default policy would fall back to the node's resolv.conf and lose
        # the cluster's Service names, which the operator's master address is.
        spec["dnsPolicy"] = "ClusterFirstWithHostNet"
    if profile is not None and profile.host_ipc:
        spec["hostIPC"] = True
    if profile is not None and profile.claims:
        # One ResourceClaim per pod from each template, named by the pod's claim name (a
        # DNS-1123 label, unique in the pod: validation.go validatePodResourceClaims). The
        # pinned CRDs embed the 1.32+ shape, resourceClaimTemplateName directly on the entry.
        spec["resourceClaims"] = [
            {"name": name, "resourceClaimTemplateName": profile.claims[name]}
            for name in sorted(profile.claims)
        ]


def sshd_port(container: dict[str, Any], port: int) -> None:
    """Declare the port sshd listens on in a host-network pod as a host port: the scheduler
    (its NodePorts filter) then places no second pod using the port, of any job, on the node.
    For a host-network pod the API server makes every containerPort a hostPort anyway."""
    container["ports"] = [
        {"name": "ssh", "containerPort": port, "hostPort": port, "protocol": "TCP"}
    ]


def one_per_node(spec: dict[str, Any], labels: Mapping[str, str]) -> None:
    """At most one pod that ``labels`` select per node: a required pod anti-affinity on the
    node's hostname (the MPI hosts of a job on the host network, each one node's sshd)."""
    term = {"labelSelector": {"matchLabels": dict(labels)}, "topologyKey": "kubernetes.io/hostname"}
    anti = spec.setdefault("affinity", {}).setdefault("podAntiAffinity", {})
    required = anti.setdefault("requiredDuringSchedulingIgnoredDuringExecution", [])
    required.insert(0, term)  # before the job's own pod_affinity terms


def rsh_port_args(port: int | None) -> list[str]:
    """mpirun's arguments that make its ssh reach sshd on ``port`` (none for the image's).

    On the command line, not in the env: the operators set OMPI_MCA_plm_rsh_args themselves,
    after the pod's own variables, and Open MPI 5 reads only the command line's (its prterun
    passes ``--mca plm_rsh_args`` on as ``plm_ssh_args``). ``-p N`` holds no ``=``, which
    prterun would cut when it forwards the value to the daemons it spawns in a tree."""
    return [] if port is None else ["--mca", "plm_rsh_args", f"-p {port}"]


def pod_access(
    spec: dict[str, Any],
    *,
    service_account: str | None,
    pull_secrets: Sequence[str],
    priority_class: str | None = None,
) -> None:
    """Who the pod runs as, how it pulls its image and its PriorityClass, when given (the
    plan checked each name against the team's grants)."""
    if service_account is not None:
        spec["serviceAccountName"] = service_account
    if pull_secrets:
        spec["imagePullSecrets"] = [{"name": name} for name in pull_secrets]
    if priority_class is not None:
        spec["priorityClassName"] = priority_class


def job_ports(job: object, profile: NetworkProfile | None) -> list[dict[str, Any]]:
    """The ``ports`` of the job's container that the job declares, after the operator's; on
    the host network each is the node's port too, as the API server would make it."""
    host = profile is not None and profile.host_network
    out = []
    for name, port in getattr(job, "ports", {}).items():
        entry: dict[str, Any] = {"containerPort": port, "name": name, "protocol": "TCP"}
        if host:
            entry["hostPort"] = port
        out.append(entry)
    return out


def probes(container: dict[str, Any], job: object) -> None:
    """The job's readiness, liveness and startup probes on its container."""
    for field, key in (
        ("readiness_probe", "readinessProbe"),
        ("liveness_probe", "livenessProbe"),
        ("startup_probe", "startupProbe"),
    ):
        probe: Probe | None = getattr(job, field, None)
        if probe is not None:
            container[key] = probe.render()


def lifecycle(container: dict[str, Any], job: object) -> None:
    """The job's ``post_start`` and ``pre_stop`` hooks on its container."""
    hooks: dict[str, Any] = {}
    for field, key in (("post_start", "postStart"), ("pre_stop", "preStop")):
        hook: Hook | None = getattr(job, field, None)
        if hook is not None:
            hooks[key] = hook.render()
    if hooks:
        container["lifecycle"] = hooks


def pod_settings(spec: dict[str, Any], job: object) -> None:
    """The job's grace period and ``/etc/hosts`` lines, when it gives them."""
    grace: int | None = getattr(job, "termination_grace_period", None)
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    aliases: Mapping[str, Sequence[str]] = getattr(job, "host_aliases", {})
    if aliases:
        spec["hostAliases"] = [
            {"ip": ip, "hostnames": list(names)} for ip, names in aliases.items()
        ]


def placement(
    spec: dict[str, Any],
    rules: Sequence[NodeLabel],
    topology: Topology | None = None,
    selector: Mapping[str, str] | None = None,
) -> None:
    """Node affinity from ``rules`` (the required ones ANDed in one term, each preferred one
    with its weight) and the layout of the pods ``selector`` picks across ``topology``."""
    affinity: dict[str, Any] = {}
    node: dict[str, Any] = {}
    required = [r.requirement() for r in rules if r.weight is None]
    if required:
        node["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [{"matchExpressions": required}]
        }
    preferred = [
        {"preference": {"matchExpressions": [r.requirement()]}, "weight": r.weight}
        for r in rules
        if r.weight is not None
    ]
    if preferred:
        node["preferredDuringSchedulingIgnoredDuringExecution"] = preferred
    if node:
        affinity["nodeAffinity"] = node
    if topology is not None and selector:
        match = {"matchLabels": dict(selector)}
        if topology.layout == "pack":
            term = {"labelSelector": match, "topologyKey": topology.key}
            affinity["podAffinity"] = {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"podAffinityTerm": term, "weight": 100}
                ]
            }
        else:
            spec["topologySpreadConstraints"] = [
                {
                    "labelSelector": match,
                    "maxSkew": topology.max_skew,
                    "topologyKey": topology.key,
                    "whenUnsatisfiable": "DoNotSchedule" if topology.required else "ScheduleAnyway",
                }
            ]
    if affinity:
        spec["affinity"] = affinity


def pod_affinity(spec: dict[str, Any], rules: Sequence[PodAffinity]) -> None:
    """The job's ``pod_affinity`` rules after placement's (a ``pack`` topology's preferred
    term comes first)."""
    for rule in rules:
        kind = "podAntiAffinity" if rule.anti else "podAffinity"
        group = spec.setdefault("affinity", {}).setdefault(kind, {})
        if rule.weight is None:
            group.setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).append(
                rule.term()
            )
        else:
            group.setdefault("preferredDuringSchedulingIgnoredDuringExecution", []).append(
                {"podAffinityTerm": rule.term(), "weight": rule.weight}
            )


def env_list(
    env: Mapping[str, str], refs: Mapping[str, EnvRef] | None = None
) -> list[dict[str, Any]]:
    """Plain variables, then those read from a Secret or ConfigMap key when the pod starts."""
    out: list[dict[str, Any]] = [{"name": k, "value": v} for k, v in env.items()]
    for name, ref in (refs or {}).items():
        out.append({"name": name, "valueFrom": _value_from(ref)})
    return out


def _value_from(ref: EnvRef) -> dict[str, Any]:
    """The ``valueFrom`` of a variable read when the pod starts."""
    if isinstance(ref, SecretKey | ConfigMapKey):
        selector: dict[str, Any] = {"key": ref.key}
        if isinstance(ref, SecretKey):
            kind, selector["name"] = "secretKeyRef", ref.secret
        else:
            kind, selector["name"] = "configMapKeyRef", ref.config_map
        if ref.optional:
            selector["optional"] = True
        return {kind: selector}
    if isinstance(ref, PodField):
        return {"fieldRef": {"fieldPath": ref.path}}
    # No containerName: in a container's env it is the container itself.
    resource: dict[str, Any] = {"resource": ref.resource}
    if ref.divisor is not None:
        resource["divisor"] = ref.divisor
    return {"resourceFieldRef": resource}


def env_sources(sources: Sequence[EnvSource]) -> list[dict[str, Any]]:
    """``envFrom``: every key of each Secret or ConfigMap as a variable."""
    return [
        {"secretRef": {"name": s.secret}}
        if isinstance(s, SecretEnv)
        else {"configMapRef": {"name": s.config_map}}
        for s in sources
    ]


def pod_volumes(
    *,
    configmap: str | None = None,
    scripts: Sequence[str] = (),
    shm_size: str | None = None,
    claims: Sequence[AnyVolume] = (),
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(volumes, volumeMounts)``: scripts, shared memory and claims, in that order.

    Each script file is mounted read-only at ``/workspace/<file>`` (``subPath``), never
    a volume over ``/workspace`` itself: the directory stays the image's, writable, so a
    script that saves to a relative path works. The ConfigMap's name carries the
    scripts' hash, so subPath's lack of live updates never matters.
    """
    volumes: list[dict[str, Any]] = []
    mounts: list[dict[str, Any]] = []
    if configmap is not None and scripts:
        volumes.append({"configMap": {"name": configmap}, "name": SCRIPT_VOLUME})
        mounts += [
            {"mountPath": f"{WORKSPACE}/{name}", "name": SCRIPT_VOLUME, "readOnly": True,
             "subPath": name}
            for name in sorted(scripts)
        ]  # fmt: skip
    if shm_size is not None:
        # A memory-backed emptyDir: the container runtime's default /dev/shm is 64 MiB,
        # too small for data loader workers and NCCL.
        volumes.append(
            {"emptyDir": {"medium": "Memory", "sizeLimit": shm_size}, "name": SHM_VOLUME}
        )
        mounts.append({"mountPath": "/dev/shm", "name": SHM_VOLUME})
    volumes += claim_volumes(claims)
    mounts += claim_mounts(claims)
    return volumes, mounts


def tolerations(items: Sequence[Toleration]) -> list[dict[str, Any]]:
    return [t.model_dump(exclude_none=True) for t in items]
