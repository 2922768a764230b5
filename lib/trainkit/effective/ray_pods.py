"""The pods KubeRay v1.7 creates for a RayJob.

Sources (ray-project/kuberay v1.7.0, ray-operator/controllers/ray/): the Ray container's env
and ``ray start`` command (common/pod.go setContainerEnvVars, generateRayStartCommand), the
submitter's env (rayjob_controller.go configureSubmitterContainer), the PodGroup
``ray-<job>-pg`` of desired (or, autoscaling, minimum) workers + the head, whose resources
include the submitter's (batchscheduler/volcano/volcano_scheduler.go handleRayJob,
calculatePodGroupParams).
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import ROUND_CEILING, Decimal
from typing import Any

from ..injected_env.kuberay_env import rayjob_env
from ..kube.quantities import parse_quantity
from ..render.kuberay import HEAD_CONTAINER, QUEUE_LABEL, SUBMITTER, WORKER_CONTAINER
from ..resolve import PlannedJob
from .admission import pod_set_workload
from .podsets import RAY, EffectiveJob, EnvVar, Gang, PodSet, Workload, env_source

__all__ = ["HEAD_GROUP", "effective_rayjob", "ray_start_resources"]

_KUBERAY = "KubeRay"
HEAD_GROUP = "headgroup"
"""KubeRay's group label of the head pod (utils/constant.go RayNodeHeadGroupLabelValue)."""
_SHM_MOUNT = {"mountPath": "/dev/shm", "name": "shared-mem"}


def effective_rayjob(pj: PlannedJob, body: dict[str, Any]) -> EffectiveJob:
    spec = body["spec"]
    cluster = spec["rayClusterSpec"]
    autoscaled = bool(cluster.get("enableInTreeAutoscaling"))
    head = _pod_set(pj, "Head", 1, cluster["headGroupSpec"]["template"], HEAD_CONTAINER, None)
    # The entrypoint's driver runs on the head (ray job submit), beside Ray's GCS.
    pod_sets = [head]
    gang_members = 1
    gang_sets = [(head, 1)]
    for g in cluster.get("workerGroupSpecs") or []:
        ps = _pod_set(pj, g["groupName"], int(g["replicas"]), g["template"], WORKER_CONTAINER, g)
        pod_sets.append(ps)
        admitted = int(g["minReplicas"]) if autoscaled else ps.count
        gang_members += admitted
        gang_sets.append((ps, admitted))
    submitter = _submitter(pj, spec)
    if submitter is not None:
        pod_sets.append(submitter)
        gang_sets.append((submitter, 1))  # in minResources, not a member
    gang = None
    queue = body["metadata"].get("labels", {}).get(QUEUE_LABEL)
    if queue is not None:
        requests: dict[str, Decimal] = {}
        for ps, count in gang_sets:
            for name, value in ps.requests().items():
                requests[name] = requests.get(name, Decimal(0)) + value * count
        gang = Gang(f"ray-{pj.object_name}-pg", queue, gang_members, requests)
    ray_nodes = sum(ps.count for ps in pod_sets if ps.runs_ranks)
    notes = [
        f"the entrypoint `{spec['entrypoint']}` runs on the head once the Ray cluster is up; "
        "ray.init() there joins the cluster (RAY_ADDRESS), and Ray places tasks and actors on "
        f"the {ray_nodes} Ray node(s) by the CPUs and GPUs each one has"
    ]
    if autoscaled:
        notes.append(
            "autoscaling: KubeRay adds its autoscaler beside the head and runs the head as the "
            "autoscaler's ServiceAccount; the gang admits each group's minReplicas"
        )
    if spec.get("shutdownAfterJobFinishes"):
        ttl = spec.get("ttlSecondsAfterFinished", 0)
        notes.append(
            f"the Ray cluster is deleted {ttl} s after the job ends; the RayJob and its "
            "submitter's logs stay"
        )
    return EffectiveJob(
        pj, tuple(pod_sets), RAY, ray_nodes, None, gang, tuple(notes), workload=_workload(body)
    )


# kueue v0.19.2 pkg/controller/jobs/raycluster/common.go (autoscalerContainer) and
# rayjob/rayjob_controller.go (defaultSubmitterResources): what Kueue counts for KubeRay's own
# containers.
_AUTOSCALER = {
    "requests": {"cpu": "500m", "memory": "512Mi"},
    "limits": {"cpu": "500m", "memory": "512Mi"},
}
_SUBMITTER = {
    "requests": {"cpu": "500m", "memory": "200Mi"},
    "limits": {"cpu": "1", "memory": "1Gi"},
}


def _workload(body: dict[str, Any]) -> Workload | None:
    """Kueue v0.19.2's pod sets of a RayJob (pkg/controller/jobs/raycluster/common.go
    BuildPodSets, rayjob/rayjob_controller.go PodSets): ``head`` (with the autoscaler
    container when autoscaling, with a submitter container in SidecarMode), one per worker
    group named after it counting replicas × numOfHosts, ``submitter`` in K8sJobMode."""
    spec = body["spec"]
    cluster = spec["rayClusterSpec"]
    head = dict(cluster["headGroupSpec"]["template"]["spec"])
    extra = []
    if cluster.get("enableInTreeAutoscaling"):
        options = cluster.get("autoscalerOptions") or {}
        extra.append({"name": "autoscaler", "resources": options.get("resources") or _AUTOSCALER})
    if spec.get("submissionMode") == "SidecarMode":
        extra.append({"name": "ray-job-submitter", "resources": _SUBMITTER})
    head["containers"] = [*head.get("containers", []), *extra]
    sets: list[tuple[str, int, dict[str, Any]]] = [("head", 1, head)]
    for g in cluster.get("workerGroupSpecs") or []:
        count = int(g.get("replicas", 1)) * max(1, int(g.get("numOfHosts", 1)))
        sets.append((str(g["groupName"]), count, g["template"]["spec"]))
    if spec.get("submissionMode") == "K8sJobMode":
        template = (spec.get("submitterPodTemplate") or {}).get("spec") or {
            "containers": [{"name": "ray-job-submitter", "resources": _SUBMITTER}]
        }
        sets.append(("submitter", 1, template))
    return pod_set_workload(body, sets)


def _pod_set(
    pj: PlannedJob,
    role: str,
    count: int,
    template: dict[str, Any],
    container: str,
    group: dict[str, Any] | None,
) -> PodSet:
    spec = dict(template["spec"])
    own = next(c for c in spec["containers"] if c["name"] == container)
    env = [EnvVar.of(e, env_source(pj, e["name"], "job")) for e in own.get("env") or []]
    names = {e.name for e in env}
    injected = rayjob_env(
        head=group is None,
        group=HEAD_GROUP if group is None else group["groupName"],
        start=_start_command(own, head=group is None, pj=pj),
    )
    env += [EnvVar(k, v, _KUBERAY) for k, v in injected.items() if k not in names]
    if not any(m.get("mountPath") == "/dev/shm" for m in own.get("volumeMounts") or []):
        # common/pod.go BuildPod: a memory-backed /dev/shm for Ray's object store, sized to
        # the container's memory, unless the pod mounts one already.
        res = own.get("resources") or {}
        size = (res.get("requests") or {}).get("memory") or (res.get("limits") or {}).get("memory")
        empty: dict[str, Any] = {"medium": "Memory"}
        if size:
            empty["sizeLimit"] = size
        spec["volumes"] = [*(spec.get("volumes") or []), {"name": "shared-mem", "emptyDir": empty}]
        own = {**own, "volumeMounts": [*(own.get("volumeMounts") or []), _SHM_MOUNT]}
    spec["containers"] = [
        {**own, "env": [e.entry() for e in env]} if c["name"] == container else c
        for c in spec["containers"]
    ]
    duty = "runs the entrypoint and Ray's GCS" if group is None else "Ray workers"
    return PodSet(role, count, 0, spec, container, tuple(env), duty=duty)


def ray_start_resources(limits: Mapping[str, str], gpu_resource: str) -> tuple[int, int, int]:
    """``(num-cpus, memory bytes, num-gpus)`` of KubeRay's generated ``ray start`` for a Ray
    container's limits (common/pod.go generateRayStartCommand: CPUs rounded up, memory in
    bytes, GPUs from the GPU resource); 0 where there is no limit."""

    def amount(name: str) -> Decimal:
        return parse_quantity(str(limits.get(name, "0"))) or Decimal(0)

    cpus = int(amount("cpu").to_integral_value(rounding=ROUND_CEILING))
    return cpus, int(amount("memory")), int(amount(gpu_resource))


def _start_command(container: dict[str, Any], *, head: bool, pj: PlannedJob) -> str:
    """What KubeRay's generated ``ray start`` says of the node's resources."""
    limits = (container.get("resources") or {}).get("limits") or {}
    cpus, memory, gpus = ray_start_resources(limits, pj.cluster.gpu_resource)
    parts = [
        "ray start --head" if head else "ray start",
        f"--num-cpus={cpus}",
        f"--memory={memory}",
    ]
    if gpus:
        parts.append(f"--num-gpus={gpus}")
    return " ".join(parts) + " …"


def _submitter(pj: PlannedJob, spec: dict[str, Any]) -> PodSet | None:
    if spec.get("submissionMode") != "K8sJobMode":
        return None
    pod = dict(spec["submitterPodTemplate"]["spec"])
    own = next(c for c in pod["containers"] if c["name"] == SUBMITTER)
    env = (
        *(EnvVar.of(e, "job") for e in own.get("env") or []),
        EnvVar("PYTHONUNBUFFERED", "1", _KUBERAY),
        EnvVar("RAY_DASHBOARD_ADDRESS", "<the head's dashboard, port 8265>", _KUBERAY),
        EnvVar("RAY_JOB_SUBMISSION_ID", "<the RayJob's name and 5 random characters>", _KUBERAY),
    )
    pod["containers"] = [
        {**c, "env": [e.entry() for e in env]} if c["name"] == SUBMITTER else c
        for c in pod["containers"]
    ]
    return PodSet(
        "Submitter", 1, 0, pod, SUBMITTER, env, runs_ranks=False, duty="submits the entrypoint"
    )
