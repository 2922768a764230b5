"""CEL ``x-kubernetes-validations`` rules from the real Trainer, Kubeflow and Kueue CRDs.

Each rule is shown both ways — a violating manifest is reported with the
rule's message and the path of the object carrying the rule, a valid one is
not — and transition (``oldSelf``) rules only run when an old object is given.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from trainkit.validate import CrdSet, load_crds
from trainkit.validate.cel import MISSING
from validate_fixtures import shared_crd_set, validate_doc

REPO = Path(__file__).parents[1]
DATA = REPO / "tests" / "data" / "validate"


@pytest.fixture(scope="module")
def crds() -> CrdSet:
    return shared_crd_set()


def manifest(name: str) -> dict[str, Any]:
    doc = yaml.safe_load((DATA / "manifests" / name).read_text())
    assert isinstance(doc, dict)
    return doc


def messages(crds: CrdSet, doc: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    return [f"{p.field}: {p.message}" for p in validate_doc(crds, doc, "x.yaml", old=old)]


def test_trainjob_managed_by_rule(crds: CrdSet) -> None:
    doc = manifest("trainjob.yaml")
    doc["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    assert messages(crds, doc) == []
    doc["spec"]["managedBy"] = "argocd"
    assert messages(crds, doc) == [
        "spec.managedBy: ManagedBy must be trainer.kubeflow.org/trainjob-controller or "
        "kueue.x-k8s.io/multikueue if set"
    ]


@pytest.mark.parametrize(
    ("uri", "ok"), [("hf://tatsu-lab/alpaca", True), ("", True), ("tatsu-lab/alpaca", False)]
)
def test_trainjob_storage_uri_rule(crds: CrdSet, uri: str, ok: bool) -> None:
    doc = manifest("trainjob.yaml")
    doc["spec"]["initializer"]["dataset"]["storageUri"] = uri
    expected = (
        []
        if ok
        else [
            "spec.initializer.dataset.storageUri: storageUri may be empty, "
            "or it must be a valid URI (scheme://...)"
        ]
    )
    assert messages(crds, doc) == expected


def test_rule_on_the_root_object_sees_metadata_name(crds: CrdSet) -> None:
    doc = manifest("trainjob.yaml")
    doc["metadata"]["name"] = "llama.sft"  # a valid subdomain, not an RFC 1035 label
    # The CRD's CEL rule at the root object sees the name ...
    out: list = []
    crds._root(("trainer.kubeflow.org", "v1alpha1", "TrainJob")).check(doc, (), MISSING, out)
    assert [f.message for f in out] == ["metadata.name must match RFC 1035 DNS label format"]
    # ... and the report says it once, with the field, by the clearer object rule.
    (found,) = messages(crds, doc)
    assert found.startswith("metadata.name: 'llama.sft' is invalid")


def test_training_runtime_allows_one_ml_policy(crds: CrdSet) -> None:
    doc = manifest("trainingruntime.yaml")
    assert messages(crds, doc) == []
    doc["spec"]["mlPolicy"]["mpi"] = {"numProcPerNode": 1}
    assert messages(crds, doc) == ["spec.mlPolicy: Only one of the policy can be configured"]


def test_rule_on_list_items_reports_the_item(crds: CrdSet) -> None:
    doc = manifest("trainingruntime.yaml")
    doc["spec"]["mlPolicy"]["torch"] = {
        "envInjection": {"targets": [{"jobName": "node", "containerNames": ["node"]}]}
    }
    [found] = messages(crds, doc)
    assert found.startswith(
        "spec.mlPolicy.torch.envInjection.targets[0].containerNames: "
        "containerNames must not include the main node container"
    )


def test_rule_failing_to_evaluate_is_reported(crds: CrdSet) -> None:
    # Kueue: `!has(self.topologyName) || self.nodeLabels.size() >= 1` — no nodeLabels at all
    flavor: dict[str, Any] = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "tas"},
        "spec": {"topologyName": "default"},
    }
    [found] = messages(crds, flavor)
    assert found.startswith("spec: at least one nodeLabel is required when topology is set")
    assert "nodeLabels" in found
    flavor["spec"]["nodeLabels"] = {"cloud.example.com/pool": "a100"}
    assert messages(crds, flavor) == []


def test_transition_rule_runs_only_with_old(crds: CrdSet) -> None:
    old = manifest("pytorchjob.yaml")
    new = copy.deepcopy(old)
    new["spec"]["runPolicy"]["schedulingPolicy"]["queue"] = "other"
    assert messages(crds, new) == []  # create: transition rules do not apply
    assert messages(crds, new, old=old) == [
        "spec.runPolicy.schedulingPolicy.queue: spec.runPolicy.schedulingPolicy.queue is immutable"
    ]
    assert messages(crds, old, old=old) == []


def test_transition_rule_skips_fields_absent_from_old(crds: CrdSet) -> None:
    old = manifest("pytorchjob.yaml")
    del old["spec"]["runPolicy"]["schedulingPolicy"]["queue"]
    assert messages(crds, manifest("pytorchjob.yaml"), old=old) == []


def test_trainjob_immutable_fields(crds: CrdSet) -> None:
    old = manifest("trainjob.yaml")
    new = copy.deepcopy(old)
    new["spec"]["runtimeRef"]["name"] = "torch-2-5-v2"
    new["spec"]["trainer"]["numNodes"] = 4
    new["spec"]["suspend"] = True  # mutable
    assert messages(crds, new, old=old) == [
        "spec.runtimeRef: field is immutable",
        "spec.trainer: field is immutable",
    ]


def test_list_map_items_are_correlated_by_key_for_transition_rules(crds: CrdSet) -> None:
    old = manifest("trainingruntime.yaml")
    jobs = old["spec"]["template"]["spec"]["replicatedJobs"]
    initializer = copy.deepcopy(jobs[0])
    initializer["name"] = "init"
    initializer["dependsOn"] = [{"name": "prepare", "status": "Ready"}]
    jobs.insert(0, initializer)
    jobs[1]["dependsOn"] = [{"name": "init", "status": "Complete"}]
    reordered = copy.deepcopy(old)
    reordered["spec"]["template"]["spec"]["replicatedJobs"].reverse()
    assert messages(crds, reordered, old=old) == []  # same entries, matched by name
    changed = copy.deepcopy(old)
    changed["spec"]["template"]["spec"]["replicatedJobs"][1]["dependsOn"][0]["status"] = "Ready"
    assert messages(crds, changed, old=old) == [
        "spec.template.spec.replicatedJobs[1].dependsOn: Value is immutable"
    ]


def test_unsupported_function_is_listed_once_and_skipped() -> None:
    widgets = load_crds(DATA / "widget-definitions", no_cache=True)
    doc = yaml.safe_load((DATA / "widget.yaml").read_text())
    doc["spec"]["memory"] = "512Mi"  # would break the quantity() rule, which cannot run
    assert validate_doc(widgets, doc, "w.yaml") == []
    assert validate_doc(widgets, doc, "w.yaml") == []
    [note] = widgets.unsupported_rules
    assert note.startswith("Widget (example.com/v1) spec: rule `quantity(self.memory)")
    assert "uses isGreaterThan(), quantity(), which cel-python lacks" in note


def test_rules_see_schema_defaults_and_report_at_field_path() -> None:
    widgets = load_crds(DATA / "widget-definitions", no_cache=True)
    doc = yaml.safe_load((DATA / "widget.yaml").read_text())
    doc["spec"]["size"] = 11  # maxSize is not set: its default 10 applies
    [problem] = validate_doc(widgets, doc, "w.yaml")
    assert (problem.field, problem.message) == ("spec.size", "size must not exceed maxSize")
    doc["spec"]["maxSize"] = 12
    assert validate_doc(widgets, doc, "w.yaml") == []


def test_added_string_helper_lower_ascii() -> None:
    widgets = load_crds(DATA / "widget-definitions", no_cache=True)
    doc = yaml.safe_load((DATA / "widget.yaml").read_text())
    doc["spec"]["tags"] = ["alpha", "Beta"]
    assert [p.message for p in validate_doc(widgets, doc, "w.yaml")] == ["tags must be lowercase"]
