"""Which field changes the API server would refuse on an existing object."""

from __future__ import annotations

import copy
from typing import Any

from trainkit.deployed.immutable import IMMUTABLE_KINDS, in_place_changes

TRAINJOB: dict[str, Any] = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainJob",
    "metadata": {"name": "x-r1", "namespace": "ns", "labels": {"a": "1"}},
    "spec": {
        "runtimeRef": {"name": "torch"},
        "trainer": {"image": "a:1", "args": ["--lr", "0.1"], "numNodes": 2},
        "suspend": False,
    },
}

PYTORCHJOB: dict[str, Any] = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "PyTorchJob",
    "metadata": {"name": "ddp", "namespace": "ns"},
    "spec": {
        "runPolicy": {"schedulingPolicy": {"queue": "research", "minAvailable": 2}},
        "pytorchReplicaSpecs": {"Worker": {"replicas": 2}},
    },
}

RUNTIME: dict[str, Any] = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "ClusterTrainingRuntime",
    "metadata": {"name": "torch"},
    "spec": {
        "mlPolicy": {"numNodes": 1, "torch": {}},
        "template": {
            "spec": {
                "network": {"publishNotReadyAddresses": True},
                "failurePolicy": {"maxRestarts": 3},
                "replicatedJobs": [
                    {"name": "init", "template": {"spec": {}}},
                    {
                        "name": "node",
                        "dependsOn": [{"name": "init", "status": "Complete"}],
                        "template": {"spec": {"parallelism": 1}},
                    },
                ],
            }
        },
    },
}


def changed(obj: dict[str, Any], *edits: tuple[tuple[str | int, ...], Any]) -> dict[str, Any]:
    """A deep copy of ``obj`` with each (path, value) set; value ``...`` deletes the key."""
    out = copy.deepcopy(obj)
    for path, value in edits:
        parent: Any = out
        for key in path[:-1]:
            parent = parent[key]
        if value is ...:
            del parent[path[-1]]
        else:
            parent[path[-1]] = value
    return out


def test_kinds_with_rules() -> None:
    assert frozenset(
        {
            "ClusterTrainingRuntime",
            "JAXJob",
            "MPIJob",
            "PaddleJob",
            "PyTorchJob",
            "RayCluster",
            "RayJob",
            "TFJob",
            "TrainJob",
            "TrainingRuntime",
            "XGBoostJob",
        }
    ) == (IMMUTABLE_KINDS)


def test_identical_objects_have_no_changes() -> None:
    for obj in (TRAINJOB, PYTORCHJOB, RUNTIME):
        assert in_place_changes(obj, copy.deepcopy(obj)) == []


def test_trainjob_reports_each_changed_trainer_field_sorted() -> None:
    new = changed(
        TRAINJOB,
        (("spec", "trainer", "image"), "a:2"),
        (("spec", "trainer", "args"), ["--lr", "0.2"]),
    )
    assert in_place_changes(TRAINJOB, new) == ["spec.trainer.args", "spec.trainer.image"]


def test_trainjob_added_and_removed_fields_count() -> None:
    new = changed(
        TRAINJOB,
        (("spec", "trainer", "numNodes"), ...),
        (("spec", "trainer", "env"), [{"name": "A", "value": "1"}]),
        (("spec", "initializer"), {"model": {"storageUri": "hf://m"}}),
        (("spec", "activeDeadlineSeconds"), 60),
    )
    assert in_place_changes(TRAINJOB, new) == [
        "spec.activeDeadlineSeconds",
        "spec.initializer",
        "spec.trainer.env",
        "spec.trainer.numNodes",
    ]
    assert in_place_changes(new, TRAINJOB) == in_place_changes(TRAINJOB, new)


def test_trainjob_runtime_ref_and_runtime_patches() -> None:
    patches = [{"manager": "trainkit.io/queue", "trainingRuntimeSpec": {"template": {}}}]
    new = changed(
        TRAINJOB,
        (("spec", "runtimeRef", "name"), "torch-v2"),
        (("spec", "runtimePatches"), patches),
    )
    assert in_place_changes(TRAINJOB, new) == ["spec.runtimePatches", "spec.runtimeRef.name"]


def test_trainjob_suspend_and_metadata_are_mutable() -> None:
    new = changed(
        TRAINJOB,
        (("spec", "suspend"), True),
        (("metadata", "labels"), {"a": "2"}),
        (("metadata", "annotations"), {"b": "1"}),
    )
    assert in_place_changes(TRAINJOB, new) == []
    assert in_place_changes(TRAINJOB, changed(TRAINJOB, (("spec", "suspend"), ...))) == []


def test_trainjob_explicit_null_is_absent() -> None:
    new = changed(TRAINJOB, (("spec", "initializer"), None))
    assert in_place_changes(TRAINJOB, new) == []


def test_a_pytorchjob_spec_never_changes_in_place() -> None:
    # The API server would accept these, but the operator would build replacement pods
    # of a running job from the new template (and never rerun a finished one).
    new = changed(
        PYTORCHJOB,
        (("spec", "pytorchReplicaSpecs", "Worker", "replicas"), 4),
        (("spec", "runPolicy", "schedulingPolicy", "minAvailable"), 4),
    )
    assert in_place_changes(PYTORCHJOB, new) == [
        "spec.pytorchReplicaSpecs.Worker",
        "spec.runPolicy.schedulingPolicy",
    ]
    new = changed(PYTORCHJOB, (("spec", "runPolicy", "schedulingPolicy", "queue"), "gold"))
    assert in_place_changes(PYTORCHJOB, new) == ["spec.runPolicy.schedulingPolicy"]


def test_pytorchjob_suspend_is_kueues_and_not_a_change() -> None:
    suspended = changed(PYTORCHJOB, (("spec", "runPolicy", "suspend"), True))
    assert in_place_changes(PYTORCHJOB, suspended) == []


def test_runtime_policies_by_child_field() -> None:
    spec = ("spec", "template", "spec")
    new = changed(
        RUNTIME,
        ((*spec, "failurePolicy", "maxRestarts"), 5),
        ((*spec, "failurePolicy", "restartStrategy"), "Recreate"),
        ((*spec, "network"), {"publishNotReadyAddresses": False}),
    )
    assert in_place_changes(RUNTIME, new) == [
        "spec.template.spec.failurePolicy.maxRestarts",
        "spec.template.spec.failurePolicy.restartStrategy",
        "spec.template.spec.network.publishNotReadyAddresses",
    ]


def test_runtime_scalar_or_list_policies_are_reported_whole() -> None:
    spec = ("spec", "template", "spec")
    old = changed(
        RUNTIME,
        ((*spec, "startupPolicy"), {"startupPolicyOrder": "AnyOrder"}),
        ((*spec, "volumeClaimPolicies"), [{"templates": []}]),
        ((*spec, "successPolicy"), {"operator": "All"}),
    )
    new = changed(
        old,
        ((*spec, "startupPolicy", "startupPolicyOrder"), "InOrder"),
        ((*spec, "volumeClaimPolicies"), [{"templates": [{"metadata": {"name": "d"}}]}]),
        ((*spec, "successPolicy", "targetReplicatedJobs"), ["node"]),
    )
    assert in_place_changes(old, new) == [
        "spec.template.spec.startupPolicy.startupPolicyOrder",
        "spec.template.spec.successPolicy.targetReplicatedJobs",
        "spec.template.spec.volumeClaimPolicies",
    ]


def test_runtime_depends_on_is_keyed_by_job_name() -> None:
    jobs = ("spec", "template", "spec", "replicatedJobs")
    reordered = changed(
        RUNTIME, (jobs, list(reversed(RUNTIME["spec"]["template"]["spec"][jobs[-1]])))
    )
    assert in_place_changes(RUNTIME, reordered) == []
    new = changed(reordered, ((*jobs, 0, "dependsOn", 0, "status"), "Ready"))
    assert in_place_changes(RUNTIME, new) == ["spec.template.spec.replicatedJobs[node].dependsOn"]


def test_runtime_mutable_parts_and_policies_set_for_the_first_time() -> None:
    spec = ("spec", "template", "spec")
    new = changed(
        RUNTIME,
        (("spec", "mlPolicy", "numNodes"), 4),
        ((*spec, "replicatedJobs", 1, "template", "spec", "parallelism"), 2),
        ((*spec, "replicatedJobs", 0, "dependsOn"), [{"name": "node", "status": "Ready"}]),
        ((*spec, "successPolicy"), {"operator": "Any"}),
        ((*spec, "network"), ...),
    )
    # a new replicated job has no old version to compare its dependsOn with
    new["spec"]["template"]["spec"]["replicatedJobs"].append({"name": "extra", "dependsOn": []})
    assert in_place_changes(RUNTIME, new) == []


def test_training_runtime_follows_the_same_rules() -> None:
    old = changed(RUNTIME, (("kind",), "TrainingRuntime"), (("metadata", "namespace"), "ns"))
    new = changed(old, (("spec", "template", "spec", "failurePolicy"), {"maxRestarts": 0}))
    assert in_place_changes(old, new) == ["spec.template.spec.failurePolicy.maxRestarts"]


def test_kind_must_be_in_the_right_group() -> None:
    new = changed(TRAINJOB, (("spec", "trainer", "image"), "a:2"))
    for api_version in ("kubeflow.org/v1", "example.com/v1alpha1"):
        old2 = changed(TRAINJOB, (("apiVersion",), api_version))
        new2 = changed(new, (("apiVersion",), api_version))
        assert in_place_changes(old2, new2) == []
    queue = changed(PYTORCHJOB, (("spec", "runPolicy", "schedulingPolicy", "queue"), "gold"))
    as_trainer = (("apiVersion",), "trainer.kubeflow.org/v1alpha1")
    assert in_place_changes(changed(PYTORCHJOB, as_trainer), changed(queue, as_trainer)) == []


def test_other_kinds_are_mutable() -> None:
    old = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}
    new = changed(old, (("data", "a"), "2"))
    assert in_place_changes(old, new) == []
    queue = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "spec": {"weight": 1}}
    assert in_place_changes(queue, changed(queue, (("spec", "weight"), 2))) == []
