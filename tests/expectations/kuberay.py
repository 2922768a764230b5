"""KubeRay v1.7.0 (github.com/ray-project/kuberay, tag v1.7.0, 59d663ae): the pods and the
Volcano PodGroup of a RayJob, from ray-operator/controllers/ray/common/pod_test.go, the
Volcano scheduler's test (batchscheduler/volcano/volcano_scheduler_test.go), and what
utils/validation_test.go refuses.

The pod tests build a RayCluster's pods; a RayJob's cluster is built from its
``rayClusterSpec`` by the same functions, so the fixtures here are that spec inside a RayJob
(``kuberay_crd`` then says RayJob). The RayCluster's name is the RayJob's and a random
suffix, so values naming it are asserted as present only.
"""

from __future__ import annotations

from typing import Any

from trainkit import DeletionRule, RayJob, Resources, Script, WorkerGroup

from . import (
    ABSENT,
    PRESENT,
    Case,
    Definition,
    Env,
    FieldRef,
    Gang,
    Health,
    Manifest,
    Pods,
    Port,
    RayStart,
    Refused,
    Source,
    Volume,
)

REPO, REF = "ray-project/kuberay", "v1.7.0"
POD = "ray-operator/controllers/ray/common/pod_test.go"
VOLCANO = "ray-operator/controllers/ray/batchscheduler/volcano/volcano_scheduler_test.go"
VALIDATION = "ray-operator/controllers/ray/utils/validation_test.go"
CONTROLLER = "ray-operator/controllers/ray/rayjob_controller_unit_test.go"
HEALTH = "resource.customizations.health.ray.io_RayJob"
KIND = "RayJob"
GIB = "1073741824"


def src(file: str, case: str) -> Source:
    return Source(REPO, REF, file, case)


def ray_container(
    name: str,
    requests: dict[str, str] | None = None,
    limits: dict[str, str] | None = None,
    env: dict[str, str] | None = None,
    ports: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "image": "repo/image:custom"}
    resources = {k: v for k, v in (("requests", requests), ("limits", limits)) if v}
    if resources:
        c["resources"] = resources
    if env:
        c["env"] = [{"name": k, "value": v} for k, v in env.items()]
    if ports is not None:
        c["ports"] = ports
    return c


def rayjob(
    name: str,
    head: dict[str, Any],
    workers: list[dict[str, Any]],
    *,
    mode: str = "HTTPMode",
    labels: dict[str, str] | None = None,
    autoscaling: bool = False,
    head_params: dict[str, str] | None = None,
) -> dict[str, Any]:
    cluster: dict[str, Any] = {
        "headGroupSpec": {
            "rayStartParams": head_params or {},
            "template": {"spec": {"containers": [head]}},
        },
        "workerGroupSpecs": workers,
    }
    if autoscaling:
        cluster["enableInTreeAutoscaling"] = True
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name, "namespace": "default", "labels": labels or {}},
        "spec": {
            "entrypoint": "python main.py",
            "submissionMode": mode,
            "rayClusterSpec": cluster,
        },
    }


def group(
    name: str,
    container: dict[str, Any],
    replicas: int,
    *,
    hosts: int = 1,
    low: int = 0,
    high: int = 10000,
    params: dict[str, str] | None = None,
) -> dict[str, Any]:
    return {
        "groupName": name,
        "replicas": replicas,
        "minReplicas": low,
        "maxReplicas": high,
        "numOfHosts": hosts,
        "rayStartParams": params or {},
        "template": {"spec": {"containers": [container]}},
    }


# --- the Volcano scheduler's fixtures (createTestRayJob, createTestRayCluster) ------------
VOLCANO_LABELS = {
    "volcano.sh/queue-name": "test-queue",
    "ray.io/priority-class-name": "test-priority",
}
SMALL = {"cpu": "256m", "memory": "256Mi"}
CAP = {"cpu": "500m", "memory": "512Mi"}


def volcano_job(
    hosts: int, mode: str, *, gpu: bool = False, autoscaling: bool = False
) -> dict[str, Any]:
    """createTestRayJob: a head and one group of 2 replicas (min 1, max 4) of ``hosts`` hosts,
    each container requesting 256m/256Mi under 500m/512Mi limits. The upstream group has no
    name, which the CRD requires: here ``workers``. ``gpu`` adds createTestRayCluster's
    nvidia.com/gpu limit of 1 on the workers."""
    worker_limits = {**CAP, "nvidia.com/gpu": "1"} if gpu else CAP
    return rayjob(
        "rayjob-sample",
        ray_container("ray-head", SMALL, CAP),
        [
            group(
                "workers",
                ray_container("ray-worker", SMALL, worker_limits),
                2,
                hosts=hosts,
                low=1,
                high=4,
            )
        ],
        mode=mode,
        labels=VOLCANO_LABELS,
        autoscaling=autoscaling,
    )


def pg(members: int, cpu: str, memory: str, **more: str) -> Gang:
    return Gang(
        "ray-rayjob-sample-pg",
        members,
        "test-queue",
        {"cpu": cpu, "memory": memory, **more},
        "test-priority",
    )


def volcano_cases() -> list[Case]:
    out = []
    for hosts, test, base_cpu, base_mem in (
        (1, "TestCreatePodGroupForRayJob", "768m", "768Mi"),
        (2, "TestCreatePodGroupForRayJob_NumOfHosts2", "1280m", "1280Mi"),
    ):
        members = 1 + 2 * hosts
        for mode, sub, label in (
            ("HTTPMode", "No submitter pod resources", "http"),
            ("K8sJobMode", "K8sJobMode includes submitter pod resources", "k8sjob"),
            ("SidecarMode", "SidecarMode includes submitter pod resources", "sidecar"),
        ):
            # The submitter (KubeRay's default: 500m/200Mi requested) counts in minResources,
            # not in minMember.
            submitter = mode != "HTTPMode"
            cpu = f"{int(base_cpu[:-1]) + (500 if submitter else 0)}m"
            memory = f"{int(base_mem[:-2]) + (200 if submitter else 0)}Mi"
            pods = {"Head": 1, "workers": 2 * hosts}
            if mode == "K8sJobMode":
                pods["Submitter"] = 1
            out.append(
                Case(
                    f"kuberay-volcano-hosts{hosts}-{label}",
                    src(VOLCANO, f"{test} / {sub}"),
                    Manifest(volcano_job(hosts, mode)),
                    (pg(members, cpu, memory), Pods(pods)),
                )
            )
    return out


# --- the pod tests' fixture (instance) ------------------------------------------------------
def instance(
    head_resources: dict[str, Any] | None = None,
    worker_resources: dict[str, Any] | None = None,
    head_params: dict[str, str] | None = None,
    head_ports: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """pod_test.go's ``instance``: head 1 CPU/1Gi (requests = limits), group ``small-group``
    of 3 replicas limited to 1 CPU, 1Gi and 3 GPUs, rayStartParams port 6379; both set
    TEST_ENV_NAME."""
    head_res = head_resources or {
        "requests": {"cpu": "1", "memory": "1Gi"},
        "limits": {"cpu": "1", "memory": "1Gi"},
    }
    worker_res = worker_resources or {
        "limits": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "3"}
    }
    env = {"TEST_ENV_NAME": "TEST_ENV_VALUE"}
    head = ray_container(
        "ray-head", head_res.get("requests"), head_res.get("limits"), env, head_ports
    )
    worker = ray_container("ray-worker", worker_res.get("requests"), worker_res.get("limits"), env)
    return rayjob(
        "raycluster-sample",
        head,
        [group("small-group", worker, 3, params={"port": "6379"})],
        head_params=head_params,
    )


def generated(**limits: str) -> dict[str, Any]:
    """TestGenerateRayStartCommand's input: a worker whose only resources are ``limits``."""
    return rayjob(
        "rayjob",
        ray_container("ray-head"),
        [group("workers", ray_container("ray-worker", limits=dict(limits)), 1)],
    )


CLUSTER_ENV = {
    "RAY_CLUSTER_NAME": FieldRef("metadata.labels['ray.io/cluster']"),
    "RAY_CLUSTER_NAMESPACE": FieldRef("metadata.namespace"),
    "RAY_NODE_TYPE_NAME": FieldRef("metadata.labels['ray.io/group']"),
    "RAY_CLOUD_INSTANCE_ID": FieldRef("metadata.name"),
    "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE": "1",
    "RAY_USAGE_STATS_KUBERAY_IN_USE": "1",
    "KUBERAY_GEN_RAY_START_CMD": PRESENT,
    "TEST_ENV_NAME": "TEST_ENV_VALUE",
}
SHM = {"emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}

H = Resources(cpu=2, memory="8Gi")
W = Resources(cpu=4, memory="16Gi", gpu=1)


def ray_definition(**fields: Any) -> Definition:
    """A trainkit RayJob on a Volcano cluster, made when the case runs (the model may refuse
    it; a field given as a function is made then too)."""
    base: dict[str, Any] = {
        "name": "rj",
        "image": "registry.example.com/ray:2",
        "script": Script.file("train.py"),
        "head": H,
        "workers": [WorkerGroup(resources=W, nodes=2)],
    }

    def make() -> RayJob:
        given = {k: v() if callable(v) else v for k, v in fields.items()}
        return RayJob(**(base | given))

    return Definition(make, operators=("kuberay",), team={"priority_classes": ["high"]})


def rule(delete: str, when: str, after: int) -> DeletionRule:
    return DeletionRule(delete=delete, when=when, after_seconds=after)  # type: ignore[arg-type]


CASES = [
    *volcano_cases(),
    Case(
        "kuberay-volcano-params-autoscaling-off",
        src(VOLCANO, "TestCalculatePodGroupParams / Autoscaling disabled"),
        Manifest(volcano_job(1, "HTTPMode", gpu=True)),
        # 1 head + 2 desired workers; requests, a limit standing in for a missing request.
        (pg(3, "768m", "768Mi", **{"nvidia.com/gpu": "2"}),),
    ),
    Case(
        "kuberay-volcano-params-autoscaling-on",
        src(VOLCANO, "TestCalculatePodGroupParams / Autoscaling enabled"),
        Manifest(volcano_job(1, "HTTPMode", gpu=True, autoscaling=True)),
        # 1 head + 1 worker (minReplicas).
        (pg(2, "512m", "512Mi", **{"nvidia.com/gpu": "1"}),),
    ),
    Case(
        "kuberay-volcano-podgroup-name",
        src(VOLCANO, "TestGetAppPodGroupName"),
        Manifest(volcano_job(1, "HTTPMode")),
        (Gang("ray-rayjob-sample-pg", 3, "test-queue"),),
    ),
    Case(
        "kuberay-pod-head",
        src(POD, "TestBuildPod (head)"),
        Manifest(instance()),
        (
            Pods({"Head": 1, "small-group": 3}),
            Env("Head", 0, {**CLUSTER_ENV, "RAY_ADDRESS": "127.0.0.1:6379"}),
            # The head gets no FQ_RAY_IP (only its init containers, with TLS).
            Env("Head", 0, {"FQ_RAY_IP": ABSENT, "RAY_IP": ABSENT}),
            Volume("Head", "/dev/shm", SHM),
            Port("Head", 8080, "metrics"),
            RayStart("Head", {"num-cpus": "1", "memory": GIB, "num-gpus": ABSENT}),
        ),
    ),
    Case(
        "kuberay-pod-worker",
        src(POD, "TestBuildPod (worker)"),
        Manifest(instance()),
        (
            Env(
                "small-group",
                0,
                {**CLUSTER_ENV, "RAY_ADDRESS": PRESENT, "FQ_RAY_IP": PRESENT, "RAY_IP": PRESENT},
            ),
            # --memory=1073741824 --num-cpus=1 --num-gpus=3 --port=6379 (and the address).
            RayStart(
                "small-group", {"num-cpus": "1", "memory": GIB, "num-gpus": "3", "port": "6379"}
            ),
            Volume("small-group", "/dev/shm", SHM),
            Port("small-group", 8080, "metrics"),
        ),
    ),
    Case(
        "kuberay-pod-no-cpu-limits",
        src(POD, "TestBuildPod_WithNoCPULimits"),
        Manifest(
            instance(
                {"requests": {"cpu": "2", "memory": "1Gi"}, "limits": {"memory": "1Gi"}},
                {
                    "requests": {"cpu": "2", "memory": "1Gi"},
                    "limits": {"memory": "1Gi", "nvidia.com/gpu": "3"},
                },
            )
        ),
        (
            # Without a CPU limit, the CPU request.
            RayStart("Head", {"num-cpus": "2", "memory": GIB}),
            RayStart("small-group", {"num-cpus": "2", "memory": GIB, "num-gpus": "3"}),
        ),
    ),
    Case(
        "kuberay-start-worker-gpu",
        src(POD, "TestGenerateRayStartCommand / WorkerNode with GPU"),
        Manifest(generated(**{"nvidia.com/gpu": "1"})),
        # Only a GPU limit: no --num-cpus, no --memory.
        (RayStart("workers", {"num-gpus": "1", "num-cpus": ABSENT, "memory": ABSENT}),),
    ),
    Case(
        "kuberay-start-worker-mig",
        src(POD, "TestGenerateRayStartCommand / WorkerNode with MIG GPU"),
        Manifest(generated(**{"nvidia.com/mig-2g.32gb": "1"})),
        (RayStart("workers", {"num-gpus": "1"}),),
    ),
    Case(
        "kuberay-start-head-log-monitor",
        src(POD, "TestGenerateRayStartCommand / HeadNode with include-log-monitor=false"),
        Manifest(instance(head_params={"include-log-monitor": "false"})),
        (RayStart("Head", {"include-log-monitor": "false"}),),
    ),
    Case(
        "kuberay-start-params-win",
        src(POD, "TestGenerateRayStartCommand / HeadNode with existing neuron_cores resources"),
        # A value given in rayStartParams is kept over the one from the limits (the same
        # rule for num-cpus, memory, num-gpus and resources: generateRayStartCommand).
        Manifest(instance(head_params={"num-cpus": "0"})),
        (RayStart("Head", {"num-cpus": "0", "memory": GIB}),),
    ),
    Case(
        "kuberay-head-port",
        src(POD, "TestGetHeadPort"),
        Manifest(instance(head_params={"port": "9999"})),
        (
            Env("Head", 0, {"RAY_ADDRESS": "127.0.0.1:9999", "RAY_PORT": "9999"}),
            Env("small-group", 0, {"RAY_PORT": "9999"}),
        ),
    ),
    Case(
        "kuberay-metrics-port-kept",
        src(POD, "TestDefaultHeadPodTemplateWithConfigurablePorts"),
        Manifest(instance(head_ports=[{"name": "metrics", "containerPort": 8081}])),
        (Port("Head", 8081, "metrics"),),
    ),
    # --- what trainkit writes ----------------------------------------------------------------
    Case(
        "kuberay-definition-sidecar",
        src(VOLCANO, "TestCreatePodGroupForRayJob / SidecarMode includes submitter pod resources"),
        ray_definition(submission_mode="SidecarMode", priority_class="high"),
        (
            Pods({"Head": 1, "workers": 2}),
            # Head 2 CPU/8Gi, two workers 4 CPU/16Gi/1 GPU, KubeRay's submitter 500m/200Mi.
            Gang(
                "ray-rj-pg",
                3,
                "q",
                {"cpu": "10500m", "memory": "41160Mi", "nvidia.com/gpu": "2"},
                "high",
            ),
        ),
        kind=KIND,
    ),
    Case(
        "kuberay-definition-k8sjob",
        src(VOLCANO, "TestCreatePodGroupForRayJob / K8sJobMode includes submitter pod resources"),
        ray_definition(),
        (
            Pods({"Head": 1, "workers": 2, "Submitter": 1}),
            Gang("ray-rj-pg", 3, "q"),
            RayStart("Head", {"num-cpus": "2", "num-gpus": "0"}),
            RayStart("workers", {"num-cpus": "4", "num-gpus": "1"}),
        ),
        kind=KIND,
    ),
    # --- what KubeRay refuses, which trainkit refuses first ------------------------------------
    Case(
        "kuberay-refuses-ttl-without-shutdown",
        src(
            VALIDATION,
            "TestValidateRayJobSpec / ShutdownAfterJobFinishes is false and "
            "TTLSecondsAfterFinished is not zero",
        ),
        ray_definition(shutdown_after_finish=False, ttl_seconds=10),
        (Refused("ttl_seconds keeps the Ray cluster after the job ends"),),
        kind=KIND,
    ),
    Case(
        "kuberay-refuses-rules-and-shutdown",
        src(
            VALIDATION,
            "TestValidateRayJobSpecWithFeatureGate / deletionRules and ShutdownAfterJobFinishes "
            "both set",
        ),
        ray_definition(
            shutdown_after_finish=True, deletion_rules=[rule("cluster", "succeeded", 0)]
        ),
        (Refused("deletion_rules replace shutdown_after_finish"),),
        kind=KIND,
    ),
    Case(
        "kuberay-refuses-delete-workers-autoscaling",
        src(
            VALIDATION,
            "TestValidateRayJobSpecWithFeatureGate / deletionRules with autoscaling and "
            "DeleteWorkers policy",
        ),
        ray_definition(
            workers=[WorkerGroup(resources=W, nodes=2, min_nodes=1, max_nodes=4)],
            deletion_rules=[rule("workers", "succeeded", 10)],
        ),
        (Refused("delete='workers' is refused by KubeRay when a group autoscales"),),
        kind=KIND,
    ),
    Case(
        "kuberay-refuses-cluster-before-workers",
        src(
            VALIDATION,
            "TestValidateRayJobSpecWithFeatureGate / inconsistent TTLs in deletionRules "
            "(DeleteCluster < DeleteWorkers)",
        ),
        ray_definition(
            deletion_rules=[rule("workers", "succeeded", 20), rule("cluster", "succeeded", 10)]
        ),
        (Refused("the cluster would be deleted (10 s) before its workers (20 s)"),),
        kind=KIND,
    ),
    Case(
        "kuberay-refuses-duplicate-rule",
        src(VALIDATION, "TestValidateRayJobSpecWithFeatureGate / duplicate rule in deletionRules"),
        ray_definition(
            deletion_rules=[rule("cluster", "succeeded", 20), rule("cluster", "succeeded", 10)]
        ),
        (Refused("two deletion rules delete 'cluster' when 'succeeded'"),),
        kind=KIND,
    ),
    Case(
        "kuberay-refuses-min-over-max",
        src(
            VALIDATION,
            "TestValidateRayClusterSpec_WorkerGroupReplicaValidation / minReplicas greater than "
            "maxReplicas",
        ),
        ray_definition(
            workers=lambda: [WorkerGroup(resources=W, nodes=2, min_nodes=5, max_nodes=4)]
        ),
        (Refused("min_nodes 5 is greater than max_nodes 4"),),
        kind=KIND,
    ),
    # --- the statuses the RayJob controller reports, as the health check reads them --------
    Case(
        "kuberay-status-suspending",
        src(
            CONTROLLER,
            "TestUpdateStatusToSuspendingIfNeeded / Suspend is true, and the status is allowed "
            "to transition to suspending",
        ),
        None,
        (Health(HEALTH, {"jobDeploymentStatus": "Suspending"}, "Suspended", "being suspended"),),
        kind=KIND,
    ),
    Case(
        "kuberay-status-running",
        src(CONTROLLER, "TestUpdateRayJobStatus / JobDeploymentStatus is not changed"),
        None,
        (
            Health(
                HEALTH,
                {"jobDeploymentStatus": "Running", "jobStatus": "RUNNING"},
                "Progressing",
            ),
        ),
        kind=KIND,
    ),
    Case(
        "kuberay-status-failed",
        src(
            CONTROLLER,
            "TestBatchSchedulerOnCompletionCalledWhenRayJobComplete / Failed status - cleanup "
            "performed successfully",
        ),
        None,
        # Failed is terminal (a retry shows as Retrying first): stored, it is final.
        (Health(HEALTH, {"jobDeploymentStatus": "Failed"}, "Degraded", "RayJob failed"),),
        kind=KIND,
    ),
]
