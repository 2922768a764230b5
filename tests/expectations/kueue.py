"""Kueue v0.19.2 (github.com/kubernetes-sigs/kueue, tag v0.19.2): the Workload each job kind
becomes, from the integrations' own tests (pkg/controller/jobs/): its pod sets in order with
their counts, and its priority class.

A Workload exists only for a job that names a LocalQueue (``kueue.x-k8s.io/queue-name``);
upstream's pod-set tests call the integration on the bare job, so the fixtures here carry the
label. Topology-aware scheduling (the TAS feature gate) is not something trainkit writes:
the cases with TAS annotations keep their pod sets and counts only.
"""

from __future__ import annotations

from typing import Any

from trainkit import MPIJob, PaddleJob, PyTorchJob, Resources, Role, Script, TFJob

from . import Case, Definition, Kueue, Manifest, NoGang, Source

REPO, REF = "kubernetes-sigs/kueue", "v0.19.2"
PYTORCH = "pkg/controller/jobs/kubeflow/jobs/pytorchjob/pytorchjob_controller_test.go"
TFJOB = "pkg/controller/jobs/kubeflow/jobs/tfjob/tfjob_controller_test.go"
PADDLE = "pkg/controller/jobs/kubeflow/jobs/paddlejob/paddlejob_controller_test.go"
MPIJOB = "pkg/controller/jobs/mpijob/mpijob_controller_test.go"
LABEL = "kueue.x-k8s.io/queue-name"
CONTAINERS = {
    "PyTorchJob": "pytorch",
    "TFJob": "tensorflow",
    "PaddleJob": "paddle",
    "MPIJob": "mpi",
}


def src(file: str, case: str) -> Source:
    return Source(REPO, REF, file, case)


def kubeflow(
    kind: str,
    field: str,
    replicas: dict[str, int | None],
    priorities: dict[str, str] | None = None,
    scheduling: str | None = None,
) -> dict[str, Any]:
    """A kubeflow.org job with one container per replica type, named as the operator's
    webhook wants it (``None`` replicas: left out, Kueue counts 1), the given pod priority
    classes and schedulingPolicy.priorityClass."""
    specs: dict[str, Any] = {}
    for role, count in replicas.items():
        pod: dict[str, Any] = {
            "containers": [
                {
                    "name": CONTAINERS[kind],
                    "image": "pause",
                    "resources": {"requests": {"cpu": "1"}},
                }
            ]
        }
        if role in (priorities or {}):
            pod["priorityClassName"] = (priorities or {})[role]
        specs[role] = {"template": {"spec": pod}}
        if count is not None:
            specs[role]["replicas"] = count
    spec: dict[str, Any] = {field: specs}
    if scheduling is not None:
        spec["runPolicy"] = {"schedulingPolicy": {"priorityClass": scheduling}}
    api = "kubeflow.org/v2beta1" if kind == "MPIJob" else "kubeflow.org/v1"
    return {
        "apiVersion": api,
        "kind": kind,
        "metadata": {"name": kind.lower(), "namespace": "ns", "labels": {LABEL: "lq"}},
        "spec": spec,
    }


FRAMEWORKS = {
    "kueue_frameworks": [
        "kubeflow.org/pytorchjob",
        "kubeflow.org/tfjob",
        "kubeflow.org/paddlejob",
        "kubeflow.org/mpijob",
    ]
}
KUEUE_OPERATORS = ("training-operator", "mpi-operator", "trainer")
RES = Resources(cpu=8, memory="32Gi", gpu=2)
IMAGE = "registry.example.com/img:1"


def on_kueue(job: Any) -> Definition:
    return Definition(
        job,
        scheduler="kueue",
        operators=KUEUE_OPERATORS,
        cluster=FRAMEWORKS,
        team={"priority_classes": ["high"]},
    )


def _priority_cases(
    prefix: str,
    file: str,
    kind: str,
    field: str,
    order: tuple[str, str],
) -> list[Case]:
    first, second = order
    return [
        Case(
            f"{prefix}-priority-{label}",
            src(file, f"TestPriorityClass / {name}"),
            Manifest(kubeflow(kind, field, dict.fromkeys(order, 1), priorities, scheduling)),
            (Kueue("lq", ((first.lower(), 1), (second.lower(), 1)), priority_class=want),),
        )
        for label, name, priorities, scheduling, want in (
            ("none", "none priority class name specified", {}, None, ""),
            (
                "run-policy",
                "priority specified at runPolicy and replicas; use priority in runPolicy",
                {first: f"{first.lower()}-priority", second: f"{second.lower()}-priority"},
                "scheduling-priority",
                "scheduling-priority",
            ),
            (
                "first-type",
                f"specified on {first.lower()} takes precedence over {second.lower()}",
                {first: f"{first.lower()}-priority", second: f"{second.lower()}-priority"},
                None,
                f"{first.lower()}-priority",
            ),
            (
                "second-type",
                f"{first.lower()} present, but without priority; fallback to {second.lower()}",
                {second: f"{second.lower()}-priority"},
                None,
                f"{second.lower()}-priority",
            ),
        )
    ]


CASES = [
    Case(
        "kueue-pytorchjob-pod-sets",
        src(PYTORCH, "TestPodSets / no annotations"),
        Manifest(kubeflow("PyTorchJob", "pytorchReplicaSpecs", {"Master": 1, "Worker": 1})),
        (Kueue("lq", (("master", 1), ("worker", 1)), requests={"master": {"cpu": "1"}}),),
    ),
    Case(
        "kueue-pytorchjob-pod-sets-tas-off",
        src(
            PYTORCH,
            "TestPodSets / without required and preferred topology annotation if TAS is disabled",
        ),
        Manifest(kubeflow("PyTorchJob", "pytorchReplicaSpecs", {"Worker": 3, "Master": 1})),
        # Master first whatever the map's order.
        (Kueue("lq", (("master", 1), ("worker", 3))),),
    ),
    *_priority_cases(
        "kueue-pytorchjob", PYTORCH, "PyTorchJob", "pytorchReplicaSpecs", ("Master", "Worker")
    ),
    Case(
        "kueue-tfjob-pod-sets",
        src(TFJOB, "TestPodSets / no annotations"),
        Manifest(kubeflow("TFJob", "tfReplicaSpecs", {"Worker": 1, "PS": 1, "Chief": 1})),
        (Kueue("lq", (("chief", 1), ("ps", 1), ("worker", 1))),),
    ),
    Case(
        "kueue-tfjob-ordered-replica-types",
        src(TFJOB, "TestOrderedReplicaTypes / job has all replicas"),
        Manifest(
            kubeflow(
                "TFJob",
                "tfReplicaSpecs",
                {"PS": 2, "Evaluator": 1, "Worker": 4, "Chief": 1, "Master": 1},
            )
        ),
        (
            Kueue(
                "lq",
                (("chief", 1), ("master", 1), ("ps", 2), ("worker", 4), ("evaluator", 1)),
            ),
        ),
    ),
    Case(
        "kueue-tfjob-only-workers",
        src(TFJOB, "TestOrderedReplicaTypes / job has only worker replicas"),
        Manifest(kubeflow("TFJob", "tfReplicaSpecs", {"Worker": None})),
        # A replica count left out counts 1 (podsCount: ptr.Deref(replicas, 1)).
        (Kueue("lq", (("worker", 1),)),),
    ),
    Case(
        "kueue-tfjob-priority-run-policy",
        src(
            TFJOB,
            "TestPriorityClass / priority specified at runPolicy and replicas; use priority in runPolicy",
        ),
        Manifest(
            kubeflow(
                "TFJob",
                "tfReplicaSpecs",
                {"Chief": 1, "Worker": 1},
                {"Chief": "chief-priority", "Worker": "worker-priority"},
                "scheduling-priority",
            )
        ),
        (Kueue("lq", (("chief", 1), ("worker", 1)), priority_class="scheduling-priority"),),
    ),
    Case(
        "kueue-tfjob-priority-fallback-to-evaluator",
        src(
            TFJOB, "TestPriorityClass / chief present, but without priority; fallback to evaluator"
        ),
        Manifest(
            kubeflow(
                "TFJob",
                "tfReplicaSpecs",
                {"Chief": 1, "Evaluator": 1},
                {"Evaluator": "eval-priority"},
            )
        ),
        (Kueue("lq", (("chief", 1), ("evaluator", 1)), priority_class="eval-priority"),),
    ),
    Case(
        "kueue-paddlejob-pod-sets",
        src(PADDLE, "TestPodSets / no annotations"),
        Manifest(kubeflow("PaddleJob", "paddleReplicaSpecs", {"Worker": 1, "Master": 1})),
        (Kueue("lq", (("master", 1), ("worker", 1))),),
    ),
    Case(
        "kueue-paddlejob-only-workers",
        src(PADDLE, "TestOrderedReplicaTypes / job only has the worker replica"),
        Manifest(kubeflow("PaddleJob", "paddleReplicaSpecs", {"Worker": 2})),
        (Kueue("lq", (("worker", 2),)),),
    ),
    *_priority_cases(
        "kueue-paddlejob", PADDLE, "PaddleJob", "paddleReplicaSpecs", ("Master", "Worker")
    ),
    Case(
        "kueue-mpijob-pod-sets",
        src(MPIJOB, "TestPodSets / no annotations"),
        Manifest(kubeflow("MPIJob", "mpiReplicaSpecs", {"Launcher": 1, "Worker": 3})),
        (Kueue("lq", (("launcher", 1), ("worker", 3))),),
    ),
    *_priority_cases("kueue-mpijob", MPIJOB, "MPIJob", "mpiReplicaSpecs", ("Launcher", "Worker")),
    # What trainkit writes on a Kueue cluster becomes the same Workload.
    Case(
        "kueue-pytorchjob-definition",
        src(PYTORCH, "TestPodSets / no annotations"),
        on_kueue(
            PyTorchJob(
                name="pt", image=IMAGE, script=Script.file("train.py"), nodes=3, resources=RES
            )
        ),
        (
            Kueue(
                "q",
                (("master", 1), ("worker", 2)),
                requests={"worker": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "2"}},
            ),
            # Kueue, not Volcano, admits the job: no PodGroup.
            NoGang(),
        ),
    ),
    Case(
        "kueue-tfjob-definition",
        src(TFJOB, "TestPodSets / no annotations"),
        on_kueue(
            TFJob(
                name="tf",
                image=IMAGE,
                script=Script.file("train.py"),
                nodes=2,
                resources=RES,
                ps=Role(replicas=1),
                chief=Role(),
            )
        ),
        (Kueue("q", (("chief", 1), ("ps", 1), ("worker", 2))), NoGang()),
    ),
    Case(
        "kueue-paddlejob-definition",
        src(PADDLE, "TestPodSets / no annotations"),
        on_kueue(
            PaddleJob(
                name="pd",
                image=IMAGE,
                script=Script.file("train.py"),
                nodes=2,
                resources=RES,
                mode="ps",
                ps=Role(replicas=2),
            )
        ),
        (Kueue("q", (("master", 2), ("worker", 2))), NoGang()),
    ),
    Case(
        "kueue-mpijob-definition",
        src(MPIJOB, "TestPodSets / no annotations"),
        on_kueue(
            MPIJob(name="mpi", image=IMAGE, script=Script.file("train.py"), nodes=3, resources=RES)
        ),
        (Kueue("q", (("launcher", 1), ("worker", 3))), NoGang()),
    ),
    Case(
        "kueue-pytorchjob-definition-priority",
        src(
            PYTORCH,
            "TestPriorityClass / priority specified at runPolicy and replicas; use priority in runPolicy",
        ),
        on_kueue(
            PyTorchJob(
                name="pt",
                image=IMAGE,
                script=Script.file("train.py"),
                nodes=2,
                resources=RES,
                priority_class="high",
            )
        ),
        (Kueue("q", (("master", 1), ("worker", 1)), priority_class="high"),),
    ),
]
