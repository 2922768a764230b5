"""The pods KubeRay v1.7 creates for a RayJob.

Sources (ray-project/kuberay v1.7.0, ray-operator/controllers/ray/): the Ray container's env
and ``ray start`` command (common/pod.go setContainerEnvVars, generateRayStartCommand), the
submitter's env (rayjob_controller.go configureSubmitterContainer), the PodGroup
``ray-<job>-pg`` of desired (or, autoscaling, minimum) workers + the head, whose resources
include the submitter's (batchscheduler/volcano/volcano_scheduler.go handleRayJob,
calculatePodGroupParams).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import ROUND_CEILING, Decimal
from typing import Any

from ..injected_env.kuberay_env import RAY_GCS_PORT, rayjob_env
from ..kube.quantities import parse_quantity
from ..render.kuberay import (
    CLUSTER_SELECTOR_KEY,
    HEAD_CONTAINER,
    PRIORITY_LABEL,
    QUEUE_LABEL,
    SUBMITTER,
    WORKER_CONTAINER,
    job_entrypoint,
)
from ..resolve import PlannedJob
from .admission import pod_set_workload
from .podsets import RAY, EffectiveJob, EnvVar, Gang, PodSet, Workload, env_source, pod_requests

__all__ = [
    "HEAD_GROUP",
    "effective_raycluster",
    "effective_rayjob",
    "ray_start_resources",
    "starting_pods",
]

_KUBERAY = "KubeRay"
HEAD_GROUP = "headgroup"
"""KubeRay's group label of the head pod (utils/constant.go RayNodeHeadGroupLabelValue)."""
_SHM_MOUNT = {"mountPath": "/dev/shm", "name": "shared-mem"}


def effective_rayjob(pj: PlannedJob, body: dict[str, Any]) -> EffectiveJob:
    spec = body["spec"]
    submitter = _submitter(pj, spec)
    # A submitter with its own command takes the entrypoint as arguments (no spec field).
    submitted = job_entrypoint(pj)
    selector = spec.get("clusterSelector")
    if selector:
        # No Ray pods of its own (rayjob_controller.go getOrCreateRayClusterInstance looks the
        # cluster up); Kueue leaves it alone (kueue rayjob_controller.go Skip) and Volcano
        # makes no PodGroup for it: only the submitter Job, outside every queue.
        name = selector[CLUSTER_SELECTOR_KEY]
        told = (
            f"runs on RayCluster {name!r}: the entrypoint `{submitted}` is submitted "
            "to its head and runs in its image; its pods, queue and quota are the RayCluster's "
            "(see `trainkit explain` of it). KubeRay never deletes that cluster after the job",
        )
        sets = (submitter,) if submitter is not None else ()
        return EffectiveJob(pj, sets, RAY, 0, None, None, told)
    pod_sets, gang = _cluster_pods(
        pj, body, spec["rayClusterSpec"], submitter, _submitter_resources(spec)
    )
    ray_nodes = sum(ps.count for ps in pod_sets if ps.runs_ranks)
    autoscaled = bool(spec["rayClusterSpec"].get("enableInTreeAutoscaling"))
    notes = [
        f"the entrypoint `{submitted}` runs on the head once the Ray cluster is up; "
        "ray.init() there joins the cluster (RAY_ADDRESS), and Ray places tasks and actors on "
        f"the {'up to ' if autoscaled else ''}{ray_nodes} Ray node(s) by the CPUs and GPUs each "
        "one has"
    ]
    notes += _head_service(spec["rayClusterSpec"], f"{body['metadata']['name']}-head-svc")
    if autoscaled:
        notes.append(
            "autoscaling: KubeRay adds its autoscaler beside the head and runs the head as the "
            "autoscaler's ServiceAccount; the gang admits each group's minReplicas; quota, "
            "caps and the plan count its maxReplicas, all the autoscaler may start"
        )
    if spec.get("shutdownAfterJobFinishes"):
        ttl = spec.get("ttlSecondsAfterFinished", 0)
        notes.append(
            f"the Ray cluster is deleted {ttl} s after the job ends; the RayJob and its "
            "submitter's logs stay"
        )
    return EffectiveJob(
        pj, pod_sets, RAY, ray_nodes, None, gang, tuple(notes), workload=_workload(body)
    )


def effective_raycluster(pj: PlannedJob, body: dict[str, Any]) -> EffectiveJob:
    """A long-lived RayCluster's pods: the head and its groups, no submitter; its gang
    (Volcano PodGroup ``ray-<cluster>-pg``, volcano_scheduler.go handleRayCluster) and its
    Kueue Workload (kueue v0.19.2 pkg/controller/jobs/raycluster/common.go BuildPodSets)."""
    spec = body["spec"]
    pod_sets, gang = _cluster_pods(pj, body, spec, None, {})
    ray_nodes = sum(ps.count for ps in pod_sets if ps.runs_ranks)
    autoscaled = bool(spec.get("enableInTreeAutoscaling"))
    notes = [
        f"a long-lived Ray cluster of {'up to ' if autoscaled else ''}{ray_nodes} Ray node(s): "
        "its pods hold their CPUs, "
        "memory and GPUs until the definition is removed; RayJobs naming it "
        "(ray_cluster=) submit their entrypoints to its head"
    ]
    notes += _head_service(spec, None)
    if autoscaled:
        notes.append(
            "autoscaling: KubeRay adds its autoscaler beside the head and runs the head as the "
            "autoscaler's ServiceAccount; an autoscaled group starts at minReplicas and the "
            "autoscaler owns its count (git carries none); the gang admits each group's "
            "minReplicas; quota, caps and the plan count its maxReplicas"
        )
    return EffectiveJob(
        pj,
        pod_sets,
        RAY,
        ray_nodes,
        None,
        gang,
        tuple(notes),
        workload=pod_set_workload(body, _cluster_pod_sets(spec)),
    )


def _head_service(cluster: Mapping[str, Any], job_service: str | None) -> list[str]:
    """What the head Service says, when the definition shapes it (KubeRay v1.7.0
    common/service.go BuildServiceForHeadPod: its type from ``serviceType``, its name from
    ``headService``, Ray's ports; common/job.go BuildHeadServiceForRayJob: a RayJob's own
    ``<job>-head-svc`` of the same type)."""
    head = cluster["headGroupSpec"]
    kind = head.get("serviceType")
    name = (head.get("headService") or {}).get("metadata", {}).get("name")
    if kind is None and name is None:
        return []
    ports = [str(p.get("name")) for p in head["template"]["spec"]["containers"][0].get("ports", [])]
    carries = ", ".join(ports or ["client", "dashboard", "gcs-server", "serve"]) + ", metrics"
    svc = f"Service {name}" if name else "Service <cluster>-head-svc"
    also = f" (and the RayJob's own {job_service})" if job_service else ""
    if kind is None:
        return [
            f"the head's {svc}{also} is a ClusterIP one with a cluster IP (ports {carries}): "
            "reachable inside the cluster; its dashboard runs any job submitted to it"
        ]
    where = "on every node's address" if kind == "NodePort" else "at the load balancer's address"
    notes = [
        f"the head's {svc}{also} is a {kind} one: its ports ({carries}) are reachable {where}, "
        "and its dashboard runs any job submitted to it as this job (Team grant "
        "ray_head_service_types)"
    ]
    annotations = (head.get("headService") or {}).get("metadata", {}).get("annotations") or {}
    if annotations:
        pairs = ", ".join(f"{k}={v}" for k, v in annotations.items())
        notes.append(
            f"the head's {svc}{also} is annotated {pairs} (Team grant ray_head_service_annotations)"
        )
    return notes


def _cluster_pods(
    pj: PlannedJob,
    body: dict[str, Any],
    cluster: dict[str, Any],
    submitter: PodSet | None,
    submitter_pod: dict[str, Decimal],
) -> tuple[tuple[PodSet, ...], Gang | None]:
    """The pods of a Ray cluster (``RayClusterSpec``) and, with a queue label, its gang."""
    autoscaled = bool(cluster.get("enableInTreeAutoscaling"))
    head_group = cluster["headGroupSpec"]
    port = str((head_group.get("rayStartParams") or {}).get("port", RAY_GCS_PORT))
    head = _pod_set(pj, "Head", 1, head_group, HEAD_CONTAINER, None, port)
    # The entrypoint's driver runs on the head (ray job submit), beside Ray's GCS.
    pod_sets = [head]
    # KubeRay v1.7.0 batchscheduler/volcano/volcano_scheduler.go calculatePodGroupParams
    # (utils/util.go): minMember is the head and each group's desired pods (replicas within
    # min and max, × numOfHosts), its minReplicas × numOfHosts when autoscaling; minResources
    # counts the same pods but the replicas as given, and the submitter's requests
    # (handleRayJob getSubmitterResource), which is no member.
    # An autoscaled group's pods are counted at the most the autoscaler may start (utils/util.go
    # CalculateMaxReplicas: maxReplicas × numOfHosts), as quota, caps and the plan must; the
    # gang stays at minReplicas, the rest join the PodGroup later (Gang.at_most).
    gang_members = 1
    gang_pods: list[tuple[dict[str, Decimal], int]] = [(_volcano_pod(head.spec), 1)]
    most_pods = list(gang_pods)
    for g in cluster.get("workerGroupSpecs") or []:
        hosts = int(g.get("numOfHosts", 1))
        count = (_most(g) if autoscaled else _desired(g)) * hosts
        ps = _pod_set(pj, g["groupName"], count, g, WORKER_CONTAINER, g, port)
        pod_sets.append(ps)
        if g.get("suspend"):
            continue
        most_pods.append((_volcano_pod(ps.spec), ps.count))
        if autoscaled:
            gang_members += int(g.get("minReplicas", 0)) * hosts
            gang_pods.append((_volcano_pod(ps.spec), int(g.get("minReplicas", 0)) * hosts))
        else:
            gang_members += ps.count
            gang_pods.append((_volcano_pod(ps.spec), int(g.get("replicas", 0)) * hosts))
    if submitter is not None:
        pod_sets.append(submitter)
    if submitter_pod:
        gang_pods.append((submitter_pod, 1))
        most_pods.append((submitter_pod, 1))
    gang = None
    labels = body["metadata"].get("labels") or {}
    queue = labels.get(QUEUE_LABEL)
    if queue is not None:
        requests = _summed(gang_pods)
        gang = Gang(
            f"ray-{pj.object_name}-pg",
            queue,
            gang_members,
            requests,
            priority_class=labels.get(PRIORITY_LABEL),
            at_most=_summed(most_pods) if autoscaled else None,
        )
    return tuple(pod_sets), gang


def _summed(pods: list[tuple[dict[str, Decimal], int]]) -> dict[str, Decimal]:
    """What ``count`` pods of each of these requests together."""
    total: dict[str, Decimal] = {}
    for amounts, count in pods:
        for name, value in amounts.items():
            total[name] = total.get(name, Decimal(0)) + value * count
    return total


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
    sidecar = spec.get("submissionMode") == "SidecarMode"
    sets = _cluster_pod_sets(spec["rayClusterSpec"], sidecar_submitter=sidecar)
    if spec.get("submissionMode") == "K8sJobMode":
        template = (spec.get("submitterPodTemplate") or {}).get("spec") or {
            "containers": [{"name": "ray-job-submitter", "resources": _SUBMITTER}]
        }
        sets.append(("submitter", 1, template))
    return pod_set_workload(body, sets)


def _cluster_pod_sets(
    cluster: dict[str, Any], *, sidecar_submitter: bool = False
) -> list[tuple[str, int, dict[str, Any]]]:
    """Kueue's pod sets of a RayClusterSpec (raycluster/common.go BuildPodSets): ``head``
    (with the autoscaler container when autoscaling, and the submitter's in SidecarMode), then
    one per worker group counting replicas × numOfHosts."""
    head = dict(cluster["headGroupSpec"]["template"]["spec"])
    extra = []
    if cluster.get("enableInTreeAutoscaling"):
        options = cluster.get("autoscalerOptions") or {}
        extra.append({"name": "autoscaler", "resources": options.get("resources") or _AUTOSCALER})
    if sidecar_submitter:
        extra.append({"name": "ray-job-submitter", "resources": _SUBMITTER})
    head["containers"] = [*head.get("containers", []), *extra]
    sets: list[tuple[str, int, dict[str, Any]]] = [("head", 1, head)]
    for g in cluster.get("workerGroupSpecs") or []:
        count = int(g.get("replicas", 1)) * max(1, int(g.get("numOfHosts", 1)))
        sets.append((str(g["groupName"]), count, g["template"]["spec"]))
    return sets


def _desired(group: dict[str, Any]) -> int:
    """A group's replicas within its minReplicas and maxReplicas, 0 when suspended (KubeRay
    v1.7.0 utils/util.go GetWorkerGroupDesiredReplicas)."""
    if group.get("suspend"):
        return 0
    low = int(group.get("minReplicas", 0))
    high = int(group.get("maxReplicas", 2**31 - 1))
    replicas = group.get("replicas")
    if replicas is None or int(replicas) < low:
        return low
    return min(int(replicas), high)


def _most(group: dict[str, Any]) -> int:
    """The most workers Ray's autoscaler may give a group: its maxReplicas (never fewer than
    it starts with), 0 when suspended (utils/util.go CalculateMaxReplicas)."""
    if group.get("suspend"):
        return 0
    return max(_desired(group), int(group.get("maxReplicas", 2**31 - 1)))


def starting_pods(group: Mapping[str, Any]) -> int:
    """Pods a worker group starts with: its desired workers × numOfHosts, whatever the
    autoscaler later makes of it (utils/util.go GetWorkerGroupDesiredReplicas)."""
    return _desired(dict(group)) * int(group.get("numOfHosts", 1))


def _volcano_pod(spec: dict[str, Any]) -> dict[str, Decimal]:
    """A pod's resources as KubeRay's Volcano scheduler counts them: its containers' requests,
    a limit standing in for a missing request, init containers left out (utils/util.go
    CalculatePodResource)."""
    return pod_requests(spec.get("containers") or [])


def _submitter_resources(spec: dict[str, Any]) -> dict[str, Decimal]:
    """What the submitter adds to the PodGroup's minResources: its template's pod in
    K8sJobMode (KubeRay's default container without one), the default container in
    SidecarMode, nothing in HTTPMode (volcano_scheduler.go getSubmitterResource,
    common/job.go GetSubmitterTemplate, GetDefaultSubmitterContainer)."""
    mode = spec.get("submissionMode")
    template = (spec.get("submitterPodTemplate") or {}).get("spec")
    if mode == "K8sJobMode" and template is not None:
        return _volcano_pod(template)
    if mode in ("K8sJobMode", "SidecarMode"):
        return pod_requests([{"resources": _SUBMITTER}])
    return {}


# common/pod.go setContainerEnvVars: read by the pod from its own fields.
_FIELD_REFS = {
    "RAY_CLUSTER_NAME": "metadata.labels['ray.io/cluster']",
    "RAY_CLUSTER_NAMESPACE": "metadata.namespace",
    "RAY_CLOUD_INSTANCE_ID": "metadata.name",
    "RAY_NODE_TYPE_NAME": "metadata.labels['ray.io/group']",
}
_METRICS_PORT = {"name": "metrics", "containerPort": 8080}
"""common/pod.go DefaultHeadPodTemplate, DefaultWorkerPodTemplate: Prometheus' port on the
Ray container unless it has a port named ``metrics`` (utils/constant.go DefaultMetricsPort)."""


def _pod_set(
    pj: PlannedJob,
    role: str,
    count: int,
    group_spec: dict[str, Any],
    container: str,
    group: dict[str, Any] | None,
    port: str,
) -> PodSet:
    spec = dict(group_spec["template"]["spec"])
    # The Ray container is the pod's first, whatever its name (utils/constant.go
    # RayContainerIndex).
    own = spec["containers"][0]
    container = str(own.get("name", container))
    env = [EnvVar.of(e, env_source(pj, e["name"], "job")) for e in own.get("env") or []]
    names = {e.name for e in env}
    start = _start_command(own, group_spec.get("rayStartParams") or {}, head=group is None)
    injected = rayjob_env(
        head=group is None,
        group=HEAD_GROUP if group is None else group["groupName"],
        start=start,
        cluster=pj.object_name if pj.kind == "RayCluster" else None,
        head_service=getattr(getattr(pj.job, "head_service", None), "name", None),
    )
    # The head's GCS port, rayStartParams' ``port`` if given (common/pod.go GetHeadPort).
    injected["RAY_PORT"] = port
    host = injected["RAY_ADDRESS"].rsplit(":", 1)[0]
    injected["RAY_ADDRESS"] = f"{host}:{port}"
    for k, v in injected.items():
        if k in names:
            continue
        ref = _FIELD_REFS.get(k)
        env.append(
            EnvVar(k, v, _KUBERAY, value_from={"fieldRef": {"fieldPath": ref}} if ref else None)
        )
    if not any(p.get("name") == "metrics" for p in own.get("ports") or []):
        own = {**own, "ports": [*(own.get("ports") or []), dict(_METRICS_PORT)]}
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
    spec["containers"] = [{**own, "env": [e.entry() for e in env]}, *spec["containers"][1:]]
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


# convertParamMap: ``false`` drops a flag, except these, which take it as a value.
_FALSE_KEPT = ("log-color", "include-dashboard", "include-log-monitor")
_MIG = re.compile(r"nvidia\.com/mig-\d+g\.\d+gb$")


def _is_gpu(name: str) -> bool:
    """utils/resources.go IsGPUResourceKey: a name ending in ``gpu``, or an NVIDIA MIG slice."""
    return name.endswith("gpu") or _MIG.search(name) is not None


def _start_command(container: dict[str, Any], given: Mapping[str, Any], *, head: bool) -> str:
    """KubeRay's generated ``ray start`` (common/pod.go generateRayStartCommand): the group's
    rayStartParams, then what they leave out: ``num-cpus`` from the CPU limit (else the
    request), ``memory`` from the memory limit, in bytes, ``num-gpus`` from the first GPU
    resource of the limits, each only when not zero; flags sorted by name (convertParamMap).
    The rest KubeRay adds (address, block, ports) is left out: ``…``."""
    res = container.get("resources") or {}
    limits = {str(k): str(v) for k, v in (res.get("limits") or {}).items()}
    requests = {str(k): str(v) for k, v in (res.get("requests") or {}).items()}

    def whole(value: str | None) -> int:
        q = parse_quantity(value) if value is not None else None
        return int((q or Decimal(0)).to_integral_value(rounding=ROUND_CEILING))

    params = {str(k): str(v) for k, v in given.items()}
    if "num-cpus" not in params:
        cpus = whole(limits.get("cpu")) or whole(requests.get("cpu"))
        if cpus:
            params["num-cpus"] = str(cpus)
    if "memory" not in params and whole(limits.get("memory")):
        params["memory"] = str(whole(limits.get("memory")))
    if "num-gpus" not in params:
        for name in sorted(limits):
            if _is_gpu(name) and whole(limits[name]):
                params["num-gpus"] = str(whole(limits[name]))
                break
    parts = ["ray start --head" if head else "ray start"]
    for name in sorted(params):
        value = params[name]
        if value.lower() == "true" and name not in _FALSE_KEPT:
            parts.append(f"--{name}")
        elif value.lower() != "false" or name in _FALSE_KEPT:
            parts.append(f"--{name}={value}")
    return " ".join(parts) + " …"


def _submitter(pj: PlannedJob, spec: dict[str, Any]) -> PodSet | None:
    if spec.get("submissionMode") != "K8sJobMode":
        return None
    # Without a template, KubeRay's default submitter (common/job.go GetSubmitterTemplate).
    default = {"containers": [{"name": SUBMITTER, "resources": _SUBMITTER}]}
    pod = dict((spec.get("submitterPodTemplate") or {}).get("spec") or default)
    # rayjob_controller.go configures the template's first container, whatever its name.
    own = pod["containers"][0]
    env = (
        *(EnvVar.of(e, "job") for e in own.get("env") or []),
        EnvVar("PYTHONUNBUFFERED", "1", _KUBERAY),
        EnvVar("RAY_DASHBOARD_ADDRESS", "<the head's dashboard, port 8265>", _KUBERAY),
        EnvVar("RAY_JOB_SUBMISSION_ID", "<the RayJob's name and 5 random characters>", _KUBERAY),
    )
    pod["containers"] = [{**own, "env": [e.entry() for e in env]}, *pod["containers"][1:]]
    name = str(own.get("name", SUBMITTER))
    return PodSet(
        "Submitter", 1, 0, pod, name, env, runs_ranks=False, duty="submits the entrypoint"
    )
