"""Kueue v0.19.2 (github.com/kubernetes-sigs/kueue, tag v0.19.2): the Workload a RayJob
becomes, from pkg/controller/jobs/rayjob/rayjob_controller_test.go (TestPodSets) and
pkg/controller/jobs/raycluster/common_test.go (TestBuildPodSets): pod sets ``head``, one per
worker group (replicas, default 1, × numOfHosts), ``submitter`` in K8sJobMode, and what each
pod requests (KubeRay's own containers included).

Upstream calls the integration on the bare job; a Workload exists only for a job naming a
LocalQueue, so the fixtures carry the label (as in ``expectations.kueue``).
"""

from __future__ import annotations

from typing import Any

from trainkit import RayJob, Resources, Script, WorkerGroup

from . import Case, Definition, Kueue, Manifest, NoGang, Source

REPO, REF = "kubernetes-sigs/kueue", "v0.19.2"
RAYJOB = "pkg/controller/jobs/rayjob/rayjob_controller_test.go"
RAYCLUSTER = "pkg/controller/jobs/raycluster/common_test.go"
LABEL = "kueue.x-k8s.io/queue-name"


def src(file: str, case: str) -> Source:
    return Source(REPO, REF, file, case)


def worker(name: str, replicas: int | None = None, hosts: int | None = None) -> dict[str, Any]:
    g: dict[str, Any] = {
        "groupName": name,
        "template": {"spec": {"containers": [{"name": f"{name}_c"}]}},
    }
    if replicas is not None:
        g["replicas"] = replicas
    if hosts is not None:
        g["numOfHosts"] = hosts
    return g


def rayjob(
    workers: list[dict[str, Any]],
    mode: str | None = None,
    submitter: dict[str, Any] | None = None,
    **cluster: Any,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "entrypoint": "python main.py",
        "rayClusterSpec": {
            "headGroupSpec": {"template": {"spec": {"containers": [{"name": "head_c"}]}}},
            "workerGroupSpecs": workers,
            **cluster,
        },
    }
    if mode is not None:
        spec["submissionMode"] = mode
    if submitter is not None:
        spec["submitterPodTemplate"] = submitter
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "rayjob", "namespace": "ns", "labels": {LABEL: "lq"}},
        "spec": spec,
    }


TWO_GROUPS = [worker("group1"), worker("group2", 3)]
DEFAULT_SUBMITTER = {"cpu": "500m", "memory": "200Mi"}
"""KubeRay's default submitter container requests 500m and 200Mi (limits 1, 1Gi):
Kueue's rayjob_controller.go defaultSubmitterResources."""

CASES = [
    Case(
        "kueue-rayjob-pod-sets",
        src(RAYJOB, "TestPodSets / no annotations"),
        Manifest(rayjob(TWO_GROUPS), namespace="ns"),
        # A group without replicas counts 1; HTTPMode (the default here) has no submitter.
        (Kueue("lq", (("head", 1), ("group1", 1), ("group2", 3))),),
    ),
    Case(
        "kueue-rayjob-num-of-hosts",
        src(RAYJOB, "TestPodSets / with NumOfHosts > 1"),
        Manifest(rayjob([worker("group1", hosts=4), worker("group2", 3, hosts=4)]), namespace="ns"),
        (Kueue("lq", (("head", 1), ("group1", 4), ("group2", 12))),),
    ),
    Case(
        "kueue-rayjob-default-submitter",
        src(RAYJOB, "TestPodSets / with default job submitter"),
        Manifest(rayjob(TWO_GROUPS, "K8sJobMode"), namespace="ns"),
        (
            Kueue(
                "lq",
                (("head", 1), ("group1", 1), ("group2", 3), ("submitter", 1)),
                requests={"submitter": DEFAULT_SUBMITTER},
            ),
        ),
    ),
    Case(
        "kueue-rayjob-submitter-template",
        src(RAYJOB, "TestPodSets / with submitter job pod template override"),
        Manifest(
            rayjob(
                TWO_GROUPS,
                "K8sJobMode",
                {
                    "spec": {
                        "containers": [
                            {
                                "name": "ray-job-submitter",
                                "resources": {"requests": {"cpu": "50m", "memory": "100Mi"}},
                            }
                        ],
                        "restartPolicy": "Never",
                    }
                },
            ),
            namespace="ns",
        ),
        (
            Kueue(
                "lq",
                (("head", 1), ("group1", 1), ("group2", 3), ("submitter", 1)),
                requests={"submitter": {"cpu": "50m", "memory": "100Mi"}},
            ),
        ),
    ),
    Case(
        "kueue-rayjob-sidecar",
        src(
            RAYJOB,
            "TestPodSets / with sidecar submission mode accounts for the injected submitter on "
            "the head podSet",
        ),
        Manifest(rayjob([worker("group1")], "SidecarMode"), namespace="ns"),
        # The submitter runs in the head pod: the head pod set counts it, no submitter set.
        (Kueue("lq", (("head", 1), ("group1", 1)), requests={"head": DEFAULT_SUBMITTER}),),
    ),
    Case(
        "kueue-raycluster-autoscaler",
        src(
            RAYCLUSTER,
            "TestBuildPodSets / autoscaler sidecar added to head podSet with default resources "
            "when in-tree autoscaling is enabled",
        ),
        Manifest(rayjob([worker("workers", 1)], enableInTreeAutoscaling=True), namespace="ns"),
        (
            Kueue(
                "lq",
                (("head", 1), ("workers", 1)),
                requests={"head": {"cpu": "500m", "memory": "512Mi"}},
            ),
        ),
    ),
    Case(
        "kueue-raycluster-autoscaler-override",
        src(
            RAYCLUSTER,
            "TestBuildPodSets / autoscaler sidecar uses AutoscalerOptions.Resources override "
            "when set",
        ),
        Manifest(
            rayjob(
                [],
                enableInTreeAutoscaling=True,
                autoscalerOptions={"resources": {"requests": {"cpu": "250m", "memory": "256Mi"}}},
            ),
            namespace="ns",
        ),
        (Kueue("lq", (("head", 1),), requests={"head": {"cpu": "250m", "memory": "256Mi"}}),),
    ),
    # What trainkit writes on a Kueue cluster.
    Case(
        "kueue-rayjob-definition",
        src(RAYJOB, "TestPodSets / with submitter job pod template override"),
        Definition(
            RayJob(
                name="rj",
                image="registry.example.com/ray:2",
                script=Script.file("train.py"),
                head=Resources(cpu=2, memory="8Gi"),
                workers=[
                    WorkerGroup(
                        name="gpu", nodes=2, resources=Resources(cpu=8, memory="64Gi", gpu=2)
                    )
                ],
            ),
            scheduler="kueue",
            operators=("kuberay",),
            cluster={"kueue_frameworks": ["ray.io/rayjob"]},
        ),
        (
            Kueue(
                "q",
                (("head", 1), ("gpu", 2), ("submitter", 1)),
                requests={
                    "head": {"cpu": "2", "memory": "8Gi"},
                    "gpu": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "2"},
                    "submitter": {"cpu": "1", "memory": "1Gi"},
                },
            ),
            NoGang(),
        ),
    ),
]
