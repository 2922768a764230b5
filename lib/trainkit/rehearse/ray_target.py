"""The rehearsal target of a RayJob: its Ray cluster (the head and each worker group, with what
KubeRay's generated ``ray start`` gives each node) and the entrypoint KubeRay submits, read
from the effective pods like every other kind's (see ``target``)."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import yaml

from ..effective import EffectiveJob, PodSet
from ..effective.ray_pods import HEAD_GROUP, ray_start_resources, starting_pods
from ..injected_env.kuberay_env import rayjob_env
from ..model import RayJob
from ..render.kuberay import WORKING_DIR_VOLUME, runtime_env_data
from ..render.kuberay import entrypoint as submitted_entrypoint
from .target import Target, env_source_name, from_definitions, pod_mounts, text_or_none

__all__ = ["HEAD_GROUP", "RayGroup", "RayJobTarget", "ray_target"]


# What KubeRay sets on every Ray container, head or worker (common/pod.go setContainerEnvVars).
_KUBERAY_ENV = {
    *rayjob_env(head=True, group="", start=""),
    *rayjob_env(head=False, group="", start=""),
}


@dataclass(frozen=True)
class RayGroup:
    """The head (group ``headgroup``) or one worker group of a RayJob's Ray cluster."""

    name: str
    nodes: int
    """Pods the group starts with."""
    cpus: int
    """KubeRay's ``ray start --num-cpus``: the CPU limit rounded up."""
    gpus: int
    memory: str | None
    """The memory limit, as written."""
    memory_bytes: int | None
    """KubeRay's ``ray start --memory``: the memory limit in bytes."""
    scaling: tuple[int, int] | None = None
    """``(minReplicas, maxReplicas)`` of a worker group Ray's autoscaler scales."""

    @property
    def head(self) -> bool:
        return self.name == HEAD_GROUP


@dataclass(frozen=True)
class RayJobTarget(Target):
    """A RayJob: a Ray cluster of a head and worker groups, and the entrypoint KubeRay submits
    to it, which runs on the head."""

    operator: ClassVar[str] = "KubeRay"
    master_vars: ClassVar[tuple[str, str]] = ("RAY_ADDRESS", "RAY_PORT")
    entrypoint: str = ""
    """``spec.entrypoint``: the shell command ``ray job submit`` runs on the head."""
    groups: tuple[RayGroup, ...] = ()
    """The head first, then the worker groups in the RayJob's order."""
    runtime_env_vars: Mapping[str, str] = field(default_factory=dict)
    """``runtimeEnvYAML``'s ``env_vars``: set for the entrypoint and every task of the job."""
    working_dir: Mapping[str, str] = field(default_factory=dict)
    """A repository ``working_dir``: path in it → text, from the ConfigMap the submitter
    mounts (render/kuberay.py), which ``ray job submit`` uploads."""
    working_dir_uri: str | None = None
    """An archive ``working_dir``, which Ray downloads on every node."""
    runtime_pip: tuple[str, ...] = ()
    """``runtimeEnvYAML``'s ``pip``: what Ray installs for the job on each node."""
    backoff_limit: int = 0

    @property
    def ray_cluster(self) -> str:
        """The RayCluster's name, as a rehearsal names it (KubeRay appends 5 random
        characters to the RayJob's: rayjob_controller.go, utils.GenerateRayClusterName)."""
        return f"{self.name}-local"

    def node_pod(self, group: str, index: int) -> str:
        """KubeRay's pod name prefix of a node (utils/util.go PodName; the pod's own name
        adds 5 random characters), with the node's index in its group."""
        if group == HEAD_GROUP:
            return f"{self.ray_cluster}-head"
        return f"{self.ray_cluster}-{group}-worker-{index}"

    def node(self, node_rank: int) -> tuple[str, int]:
        """``(group, index in the group)`` of a node: 0 is the head, then every group's
        workers in order."""
        rank = node_rank
        for g in self.groups[1:] if node_rank else ():
            if rank <= g.nodes:
                return g.name, rank - 1
            rank -= g.nodes
        return HEAD_GROUP, 0

    def pod(self, node_rank: int) -> str:
        return self.node_pod(*self.node(node_rank))

    def ray_env(self, group: str, pod: str, gcs_port: int, start: str) -> dict[str, str]:
        """KubeRay's env of one Ray container, for a Ray cluster on this machine: the head's
        GCS on 127.0.0.1 at ``gcs_port`` (common/pod.go setContainerEnvVars: RAY_ADDRESS is
        127.0.0.1:<port> on the head, the head Service's name on the workers)."""
        head = group == HEAD_GROUP
        env = rayjob_env(head=head, group=group, start=start)
        env |= {
            "RAY_CLUSTER_NAME": self.ray_cluster,
            "RAY_CLUSTER_NAMESPACE": self.effective.planned.namespace,
            "RAY_CLOUD_INSTANCE_ID": pod,
            "RAY_PORT": str(gcs_port),
            "RAY_ADDRESS": f"127.0.0.1:{gcs_port}",
        }
        if not head:
            env["FQ_RAY_IP"] = env["RAY_IP"] = "127.0.0.1"
        return env

    def injected_env(
        self, *, nodes: int, procs_per_node: int, node_rank: int, master_addr: str, master_port: int
    ) -> dict[str, str]:
        group, _ = self.node(node_rank)
        return self.ray_env(group, self.pod(node_rank), master_port, "ray start …")

    def sets(self, name: str) -> bool:
        return name in _KUBERAY_ENV


def ray_target(
    ej: EffectiveJob, body: Mapping[str, Any], configmaps: Mapping[str, Mapping[str, Any]]
) -> RayJobTarget:
    """The head's container and every group's pods; the entrypoint and runtime env from the
    RayJob's spec (the submitter only submits, and is not rehearsed)."""
    pj = ej.planned
    spec = body["spec"]
    cluster = spec["rayClusterSpec"]
    scaled = {
        g["groupName"]: (int(g["minReplicas"]), int(g["maxReplicas"]))
        for g in cluster.get("workerGroupSpecs") or []
        if cluster.get("enableInTreeAutoscaling") and g["minReplicas"] != g["maxReplicas"]
    }
    # The pods each group starts with; the effective pods count an autoscaled group's most.
    starts = {g["groupName"]: starting_pods(g) for g in cluster.get("workerGroupSpecs") or []}
    ray_pods = [ps for ps in ej.pod_sets if ps.runs_ranks]  # the head, then each group
    head = ray_pods[0]
    groups = tuple(
        _ray_group(
            ps, HEAD_GROUP if ps is head else ps.role, pj.cluster.gpu_resource, scaled, starts
        )
        for ps in ray_pods
    )
    main = head.main
    resources = main.get("resources") or {}
    amounts = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    gpu_resource = pj.cluster.gpu_resource
    files, shm, claims = pod_mounts(head, main, configmaps)
    # A submitter with its own command takes both as arguments, not as spec fields.
    job = pj.job
    if "entrypoint" not in spec and isinstance(job, RayJob):
        runtime_env = runtime_env_data(job, pj.package_indexes)
        entrypoint = submitted_entrypoint(job)
    else:
        runtime_env = yaml.safe_load(spec.get("runtimeEnvYAML") or "") or {}
        entrypoint = str(spec["entrypoint"])
    return RayJobTarget(
        effective=ej,
        nodes=sum(g.nodes for g in groups),
        procs_per_node=1,
        procs_auto=False,
        nodes_label="nodes",
        procs_label="num-cpus",
        image=str(main.get("image") or ""),
        # The submitter runs `ray job submit -- <entrypoint>`; Ray's job supervisor runs it on
        # the head with a shell (dashboard/modules/job/job_supervisor.py _exec_entrypoint).
        command=tuple(shlex.split(entrypoint)),
        args=(),
        env={e.name: e.value for e in head.env if from_definitions(e.source) and not e.ref},
        cluster_env={e.name: e.ref for e in head.env if e.ref},
        operator_env={e.name: e.value for e in head.env if not from_definitions(e.source)},
        gpus=max(g.gpus for g in groups),
        cpu=text_or_none(amounts.get("cpu")),
        memory=text_or_none(amounts.get("memory")),
        extra_resources={
            str(k): str(v)
            for k, v in sorted(amounts.items())
            if k not in ("cpu", "memory", gpu_resource)
        },
        files=files,
        shm_size=shm,
        claims=claims,
        env_sources=tuple(env_source_name(s) for s in main.get("envFrom") or []),
        entrypoint=entrypoint,
        groups=groups,
        runtime_env_vars={str(k): str(v) for k, v in (runtime_env.get("env_vars") or {}).items()},
        runtime_pip=tuple(str(p) for p in _pip_packages(runtime_env.get("pip"))),
        working_dir=_working_dir(spec, configmaps),
        working_dir_uri=(
            str(runtime_env["working_dir"])
            if "://" in str(runtime_env.get("working_dir") or "")
            else None
        ),
        backoff_limit=int(spec.get("backoffLimit") or 0),
    )


def _working_dir(
    spec: Mapping[str, Any], configmaps: Mapping[str, Mapping[str, Any]]
) -> dict[str, str]:
    """The files of the submitter's ``working_dir`` volume, at their paths (``items``)."""
    pod = (spec.get("submitterPodTemplate") or {}).get("spec") or {}
    for v in pod.get("volumes") or []:
        if v.get("name") == WORKING_DIR_VOLUME and "configMap" in v:
            data = configmaps.get(v["configMap"]["name"], {}).get("data") or {}
            return {
                str(i["path"]): str(data.get(i["key"], ""))
                for i in v["configMap"].get("items") or []
            }
    return {}


def _ray_group(
    ps: PodSet,
    name: str,
    gpu_resource: str,
    scaled: Mapping[str, tuple[int, int]],
    starts: Mapping[str, int],
) -> RayGroup:
    # What KubeRay's generated `ray start` passes, as the effective pods describe it.
    cpus, memory_bytes, gpus = ray_start_resources(ps.limits(), gpu_resource)
    return RayGroup(
        name=name,
        nodes=starts.get(name, ps.count),
        cpus=cpus,
        gpus=gpus,
        memory=ps.limits().get("memory"),
        memory_bytes=memory_bytes or None,  # no limit: Ray counts the node's
        scaling=scaled.get(name),
    )


def _pip_packages(pip: object) -> list[object]:
    """The packages of a runtime env's ``pip``: a list, or a dict whose ``packages`` it is
    when trainkit also writes pip's options (the platform's indexes)."""
    if isinstance(pip, dict):
        return list(pip.get("packages") or ())
    return list(pip) if isinstance(pip, list) else []
