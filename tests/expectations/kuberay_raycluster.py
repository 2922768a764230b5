"""A long-lived RayCluster, from KubeRay v1.7.0's own tests (github.com/ray-project/kuberay, tag
v1.7.0, 59d663ae) and Kueue v0.19.2's RayCluster integration (github.com/kubernetes-sigs/kueue,
tag v0.19.2): the Volcano PodGroup of a RayCluster
(batchscheduler/volcano/volcano_scheduler_test.go), the pods KubeRay builds for it
(common/pod_test.go builds a RayCluster's pods; here ``kuberay_crd`` says RayCluster), its
conditions (raycluster_controller_unit_test.go) through trainkit's Argo CD health check, what
utils/validation_test.go refuses, and Kueue's pod sets and webhook (pkg/controller/jobs/
raycluster/common_test.go, raycluster_webhook_test.go).
"""

from __future__ import annotations

from typing import Any

from trainkit import RayCluster, Resources, WorkerGroup

from . import PRESENT, Case, Definition, Env, Gang, Health, Kueue, Manifest, Pods, Refused, Source

KUBERAY, KUBERAY_REF = "ray-project/kuberay", "v1.7.0"
KUEUE, KUEUE_REF = "kubernetes-sigs/kueue", "v0.19.2"
VOLCANO = "ray-operator/controllers/ray/batchscheduler/volcano/volcano_scheduler_test.go"
POD = "ray-operator/controllers/ray/common/pod_test.go"
STATUS = "ray-operator/controllers/ray/raycluster_controller_unit_test.go"
VALIDATION = "ray-operator/controllers/ray/utils/validation_test.go"
PODSETS = "pkg/controller/jobs/raycluster/common_test.go"
WEBHOOK = "pkg/controller/jobs/raycluster/raycluster_webhook_test.go"
HEALTH = "resource.customizations.health.ray.io_RayCluster"
KIND = "RayCluster"


def kuberay(file: str, case: str) -> Source:
    return Source(KUBERAY, KUBERAY_REF, file, case)


def kueue(file: str, case: str) -> Source:
    return Source(KUEUE, KUEUE_REF, file, case)


SMALL = {"cpu": "256m", "memory": "256Mi"}
CAP = {"cpu": "500m", "memory": "512Mi"}


def container(name: str, limits: dict[str, str]) -> dict[str, Any]:
    return {
        "name": name,
        "image": "rayproject/ray:2.9.0",
        "resources": {"requests": dict(SMALL), "limits": dict(limits)},
    }


def test_cluster(hosts: int) -> dict[str, Any]:
    """createTestRayCluster(numOfHosts): a head and one group of 2 replicas (min 1, max 4) of
    ``hosts`` hosts, 256m/256Mi requested under 500m/512Mi limits, the workers 1 GPU each.
    Upstream calls createPodGroup on it directly; the queue label stands for the plugin's
    input (volcano_scheduler.go handleRayCluster reads it from the RayCluster)."""
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {
            "name": "raycluster-sample",
            "namespace": "default",
            "labels": {"volcano.sh/queue-name": "test-queue"},
        },
        "spec": {
            "headGroupSpec": {
                "rayStartParams": {},
                "template": {"spec": {"containers": [container("ray-head", CAP)]}},
            },
            "workerGroupSpecs": [
                {
                    "groupName": "workers",
                    "replicas": 2,
                    "minReplicas": 1,
                    "maxReplicas": 4,
                    "numOfHosts": hosts,
                    "rayStartParams": {},
                    "template": {
                        "spec": {
                            "containers": [container("ray-worker", {**CAP, "nvidia.com/gpu": "1"})]
                        }
                    },
                }
            ],
        },
    }


def kueue_cluster(*groups: tuple[str, int | None, int | None]) -> dict[str, Any]:
    """TestBuildPodSets' specs: a head container ``head`` and groups (name, replicas,
    numOfHosts), with a LocalQueue label (a Workload exists only for a queued RayCluster)."""
    workers = []
    for name, replicas, hosts in groups:
        g: dict[str, Any] = {
            "groupName": name,
            "template": {"spec": {"containers": [{"name": "worker"}]}},
        }
        if replicas is not None:
            g["replicas"] = replicas
        if hosts is not None:
            g["numOfHosts"] = hosts
        workers.append(g)
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {
            "name": "raycluster",
            "namespace": "ns",
            "labels": {"kueue.x-k8s.io/queue-name": "lq"},
        },
        "spec": {
            "headGroupSpec": {"template": {"spec": {"containers": [{"name": "head"}]}}},
            "workerGroupSpecs": workers,
        },
    }


def pool(**fields: Any) -> Definition:
    """A trainkit RayCluster, made when the case runs (the model may refuse it)."""
    base: dict[str, Any] = {
        "name": "pool",
        "image": "registry.example.com/ray:2",
        "head": Resources(cpu=2, memory="8Gi"),
        "workers": [WorkerGroup(resources=Resources(cpu=4, memory="16Gi", gpu=1), nodes=2)],
    }

    def make() -> RayCluster:
        return RayCluster(**(base | fields))

    return Definition(make, operators=("kuberay",), team={"ray_autoscaling": True})


def conditions(**given: str) -> dict[str, Any]:
    return {
        "conditions": [
            {"type": t, "status": s, "reason": f"{t}Reason", "message": ""}
            for t, s in given.items()
        ]
    }


CASES = [
    Case(
        "kuberay-raycluster-volcano-podgroup",
        kuberay(VOLCANO, "TestCreatePodGroupForRayCluster"),
        Manifest(test_cluster(1)),
        (
            # 1 head + 2 workers (desired, not min); requests, not limits; 2 GPUs.
            Gang(
                "ray-raycluster-sample-pg",
                3,
                "test-queue",
                {"cpu": "768m", "memory": "768Mi", "nvidia.com/gpu": "2"},
            ),
            Pods({"Head": 1, "workers": 2}),
        ),
    ),
    Case(
        "kuberay-raycluster-volcano-podgroup-hosts2",
        kuberay(VOLCANO, "TestCreatePodGroupForRayCluster_NumOfHosts2"),
        Manifest(test_cluster(2)),
        (
            Gang(
                "ray-raycluster-sample-pg",
                5,
                "test-queue",
                {"cpu": "1280m", "memory": "1280Mi", "nvidia.com/gpu": "4"},
            ),
            Pods({"Head": 1, "workers": 4}),
        ),
    ),
    Case(
        "kuberay-raycluster-pod-env",
        kuberay(POD, "TestBuildPod (head), on a RayCluster"),
        Manifest(test_cluster(1)),
        (
            Env(
                "Head",
                0,
                {
                    "RAY_ADDRESS": "127.0.0.1:6379",
                    "KUBERAY_GEN_RAY_START_CMD": PRESENT,
                    # common/pod.go: the creator CRD type, RayCluster when made directly.
                    "RAY_USAGE_STATS_EXTRA_TAGS": "kuberay_version=v1.7.0;kuberay_crd=RayCluster",
                },
            ),
        ),
    ),
    Case(
        "kuberay-raycluster-refuses-long-name",
        kuberay(
            VALIDATION,
            "TestValidateRayClusterSpecNames / RayCluster name is too long "
            "(> MaxRayClusterNameLength characters)",
        ),
        pool(name="a" * 54),
        (Refused("KubeRay takes at most 53 for a RayCluster"),),
        kind=KIND,
    ),
    Case(
        "kuberay-raycluster-refuses-dns1035",
        kuberay(
            VALIDATION, "TestValidateRayClusterSpecNames / RayCluster name is not a DNS1035 label"
        ),
        pool(name="1" * 53),
        (Refused("name"),),
        kind=KIND,
    ),
    Case(
        "kuberay-raycluster-provisioning",
        kuberay(
            STATUS,
            "TestRayClusterProvisionedCondition / neither head Pod nor worker Pod are ready",
        ),
        None,
        (
            Health(
                HEALTH,
                conditions(RayClusterProvisioned="False", HeadPodReady="False"),
                "Progressing",
                "waiting for every Ray pod",
            ),
        ),
        kind=KIND,
    ),
    Case(
        "kuberay-raycluster-provisioned",
        kuberay(STATUS, "TestRayClusterProvisionedCondition / all Ray Pods are ready"),
        None,
        (
            Health(
                HEALTH,
                conditions(RayClusterProvisioned="True", HeadPodReady="True"),
                "Healthy",
            ),
        ),
        kind=KIND,
    ),
    Case(
        "kuberay-raycluster-worker-unready-stays-provisioned",
        kuberay(STATUS, "TestRayClusterProvisionedCondition / worker Pod fails readiness"),
        None,
        # Provisioned stays True, the head is ready: the cluster still serves jobs.
        (
            Health(
                HEALTH,
                conditions(RayClusterProvisioned="True", HeadPodReady="True"),
                "Healthy",
            ),
        ),
        kind=KIND,
    ),
    Case(
        "kuberay-raycluster-head-unready",
        kuberay(STATUS, "TestCalculateStatus / head pod not ready"),
        None,
        (
            Health(
                HEALTH,
                conditions(RayClusterProvisioned="True", HeadPodReady="False"),
                "Degraded",
                "head pod is not ready",
            ),
        ),
        kind=KIND,
    ),
    Case(
        "kuberay-raycluster-replica-failure",
        kuberay(STATUS, "TestCalculateStatus / reconcilePodsErr with the feature gate enabled"),
        None,
        (
            Health(
                HEALTH,
                conditions(HeadPodReady="True", ReplicaFailure="True"),
                "Degraded",
                "failed to create or delete a Ray pod",
            ),
        ),
        kind=KIND,
    ),
    Case(
        "kueue-raycluster-pod-sets",
        kueue(PODSETS, "TestBuildPodSets / basic spec with head and single worker group"),
        Manifest(kueue_cluster(("workers", 3, None)), namespace="ns"),
        (Kueue("lq", (("head", 1), ("workers", 3))),),
    ),
    Case(
        "kueue-raycluster-pod-sets-groups",
        kueue(PODSETS, "TestBuildPodSets / spec with multiple worker groups"),
        Manifest(kueue_cluster(("group1", 2, None), ("group2", 5, None)), namespace="ns"),
        (Kueue("lq", (("head", 1), ("group1", 2), ("group2", 5))),),
    ),
    Case(
        "kueue-raycluster-refuses-autoscaling",
        kueue(WEBHOOK, "TestValidateCreate / invalid managed - has auto scaler"),
        Definition(
            pool(
                workers=[
                    WorkerGroup(resources=Resources(cpu=4, memory="16Gi"), min_nodes=1, max_nodes=3)
                ]
            ).job,
            scheduler="kueue",
            operators=("kuberay",),
            team={"ray_autoscaling": True},
        ),
        (Refused("Kueue refuses a queued RayCluster that autoscales"),),
        kind=KIND,
    ),
]
