"""Kueue v0.19.2 (github.com/kubernetes-sigs/kueue, tag v0.19.2): the Workload a TrainJob
becomes, from pkg/controller/jobs/trainjob/trainjob_controller_test.go. Kueue builds the
TrainJob's JobSet as Trainer would (its runtime's info, the TrainJob's overrides) and makes
one pod set per replicated job, in the JobSet's order, counting replicas × parallelism
(jobset/jobset_controller.go PodSets).

Upstream manages the job without a queue name; a Workload exists only for a job naming a
LocalQueue, so the fixtures carry the label (as in ``expectations.kueue``).
"""

from __future__ import annotations

from typing import Any

from trainkit import ClusterTrainingRuntime, Resources, RuntimeMPI, TrainJob

from . import Case, Definition, Kueue, Manifest, NoGang, Source

REPO, REF = "kubernetes-sigs/kueue", "v0.19.2"
TRAINJOB = "pkg/controller/jobs/trainjob/trainjob_controller_test.go"
LABEL = "kueue.x-k8s.io/queue-name"
ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"


def src(case: str) -> Source:
    return Source(REPO, REF, TRAINJOB, case)


def rjob(name: str, trainer: bool = False) -> dict[str, Any]:
    template: dict[str, Any] = {
        "spec": {
            "parallelism": 1,
            "completions": 1,
            "template": {"spec": {"containers": [{"name": "node", "image": "img"}]}},
        }
    }
    if trainer:
        template["metadata"] = {"labels": {ANCESTOR: "trainer"}}
    return {"name": name, "replicas": 1, "template": template}


# The test's ClusterTrainingRuntime ``test``: replicated jobs ``node`` (the trainer's) and
# ``foo``, one pod each, and no mlPolicy.
RUNTIME = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "ClusterTrainingRuntime",
    "metadata": {"name": "test"},
    "spec": {"template": {"spec": {"replicatedJobs": [rjob("node", True), rjob("foo")]}}},
}


def trainjob(trainer: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "runtimeRef": {
            "apiGroup": "trainer.kubeflow.org",
            "kind": "ClusterTrainingRuntime",
            "name": "test",
        }
    }
    if trainer is not None:
        spec["trainer"] = trainer
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "trainjob", "namespace": "ns", "labels": {LABEL: "lq"}},
        "spec": spec,
    }


IMAGE = "registry.example.com/torch:2.5"
FRAMEWORKS = {"kueue_frameworks": ["trainer.kubeflow.org/trainjob"]}


def on_kueue(job: TrainJob, runtime: ClusterTrainingRuntime) -> Definition:
    return Definition(
        job, scheduler="kueue", operators=("trainer",), platform=(runtime,), cluster=FRAMEWORKS
    )


CASES = [
    Case(
        "kueue-trainjob-pod-sets",
        src("TestReconciler / workload is created with the corresponding podsets"),
        Manifest(trainjob(), RUNTIME, namespace="ns"),
        (Kueue("lq", (("node", 1), ("foo", 1))),),
    ),
    Case(
        "kueue-trainjob-num-nodes",
        src("TestReconciler / podset count for the trainer job is set to .Spec.Trainer.NumNodes"),
        Manifest(trainjob({"numNodes": 2}), RUNTIME, namespace="ns"),
        (Kueue("lq", (("node", 2), ("foo", 1))),),
    ),
    # What trainkit writes on a Kueue cluster: the same pod sets, in the JobSet's order.
    Case(
        "kueue-trainjob-definition-torch",
        src("TestReconciler / podset count for the trainer job is set to .Spec.Trainer.NumNodes"),
        on_kueue(
            TrainJob(name="ft", runtime="torch", nodes=3, command=["torchrun", "t.py"]),
            ClusterTrainingRuntime(
                name="torch", image=IMAGE, resources=Resources(cpu=8, memory="32Gi", gpu=4)
            ),
        ),
        (
            Kueue(
                "q",
                (("node", 3),),
                requests={"node": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "4"}},
            ),
            NoGang(),
        ),
    ),
    Case(
        "kueue-trainjob-definition-mpi",
        src("TestReconciler / podset count for the trainer job is set to .Spec.Trainer.NumNodes"),
        # trainkit's MPI runtime lists ``node`` before ``launcher``; the launcher is the
        # trainer's job, counting mlPolicy.numNodes (1), the nodes the TrainJob's numNodes.
        on_kueue(
            TrainJob(name="mpi", runtime="mpi", nodes=2, command=["mpirun", "x"]),
            ClusterTrainingRuntime(
                name="mpi",
                image=IMAGE,
                resources=Resources(cpu=8, memory="32Gi", gpu=4),
                mpi=RuntimeMPI(ssh_dir="/home/mpiuser/.ssh"),
                run_as_user=1000,
                fs_group=1000,
            ),
        ),
        (Kueue("q", (("node", 2), ("launcher", 1))), NoGang()),
    ),
]
