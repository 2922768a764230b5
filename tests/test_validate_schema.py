"""Structural-schema validation against the real CRDs (plus one tiny fixture CRD).

Each negative test changes one thing in a valid hand-written manifest and
asserts the exact JSON path, so a regression in path building or in the
unknown-field rule shows up as a failure, not as a vaguer message.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from trainkit.errors import Problem
from trainkit.validate import CrdSet, load_crds
from validate_fixtures import shared_crd_set, validate_doc

REPO = Path(__file__).parents[1]
DATA = REPO / "tests" / "data" / "validate"
MANIFESTS = DATA / "manifests"


@pytest.fixture(scope="module")
def crds() -> CrdSet:
    return shared_crd_set()


@pytest.fixture(scope="module")
def widgets() -> CrdSet:
    return load_crds(DATA / "widget-definitions", no_cache=True)


def manifest(name: str) -> dict[str, Any]:
    doc = yaml.safe_load((MANIFESTS / name).read_text())
    assert isinstance(doc, dict)
    return doc


def changed(name: str, change: Callable[[dict[str, Any]], object]) -> dict[str, Any]:
    doc = copy.deepcopy(manifest(name))
    change(doc)
    return doc


def fields(problems: list[Problem]) -> list[str]:
    return [p.field for p in problems]


def master(doc: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = doc["spec"]["pytorchReplicaSpecs"]["Master"]
    return spec


def worker(doc: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = doc["spec"]["pytorchReplicaSpecs"]["Worker"]
    return spec


@pytest.mark.parametrize(
    "name",
    ["pytorchjob.yaml", "queue.yaml", "trainjob.yaml", "trainingruntime.yaml", "application.yaml"],
)
def test_valid_manifests_pass(crds: CrdSet, name: str) -> None:
    assert validate_doc(crds, manifest(name), name) == []


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (
            lambda d: d["spec"].__setitem__("nprocPerNod", d["spec"].pop("nprocPerNode")),
            "spec.nprocPerNod",
        ),
        (
            lambda d: worker(d).__setitem__("replica", worker(d).pop("replicas")),
            "spec.pytorchReplicaSpecs.Worker.replica",
        ),
        (
            lambda d: master(d)["template"]["spec"]["containers"][0].__setitem__("nprocPerNod", 8),
            "spec.pytorchReplicaSpecs.Master.template.spec.containers[0].nprocPerNod",
        ),
        (
            lambda d: d["spec"]["runPolicy"]["schedulingPolicy"].__setitem__("queueName", "x"),
            "spec.runPolicy.schedulingPolicy.queueName",
        ),
        (
            lambda d: master(d)["template"]["metadata"].__setitem__("label", {}),
            "spec.pytorchReplicaSpecs.Master.template.metadata.label",
        ),
        (lambda d: d["metadata"].__setitem__("lables", {}), "metadata.lables"),
    ],
)
def test_misspelt_field_is_an_unknown_field_at_its_exact_path(
    crds: CrdSet, change: Callable[[dict[str, Any]], object], path: str
) -> None:
    problems = validate_doc(crds, changed("pytorchjob.yaml", change), "job.yaml")
    assert fields(problems) == [path]
    assert problems[0].message.startswith("unknown field; the API server would drop it silently")
    assert problems[0].obj == "PyTorchJob 'resnet50-ddp'"


def test_unknown_field_suggests_the_close_name(crds: CrdSet) -> None:
    doc = changed("pytorchjob.yaml", lambda d: worker(d).__setitem__("replica", 2))
    [problem] = validate_doc(crds, doc, "job.yaml")
    assert "did you mean 'replicas'?" in problem.message


def test_wrong_type_is_reported(crds: CrdSet) -> None:
    doc = changed("pytorchjob.yaml", lambda d: worker(d).__setitem__("replicas", "two"))
    [problem] = validate_doc(crds, doc, "job.yaml")
    assert problem.field == "spec.pytorchReplicaSpecs.Worker.replicas"
    assert problem.message == 'expected integer, got string "two"'


def test_number_for_a_string_field_is_reported(crds: CrdSet) -> None:
    doc = changed("pytorchjob.yaml", lambda d: d["spec"].__setitem__("nprocPerNode", 8))
    assert fields(validate_doc(crds, doc, "job.yaml")) == ["spec.nprocPerNode"]


def test_missing_required_field_is_reported(crds: CrdSet) -> None:
    doc = changed("pytorchjob.yaml", lambda d: d["spec"].pop("pytorchReplicaSpecs"))
    [problem] = validate_doc(crds, doc, "job.yaml")
    assert (problem.field, problem.message) == (
        "spec.pytorchReplicaSpecs",
        "required field is missing",
    )


def test_bad_quantity_is_reported_once(crds: CrdSet) -> None:
    def change(d: dict[str, Any]) -> None:
        worker(d)["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"] = "64GB"

    [problem] = validate_doc(crds, changed("pytorchjob.yaml", change), "job.yaml")
    assert problem.field == (
        "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].resources.limits.memory"
    )
    assert "invalid quantity '64GB'" in problem.message


def test_bad_label_value_is_reported(crds: CrdSet) -> None:
    doc = changed("pytorchjob.yaml", lambda d: d["metadata"]["labels"].__setitem__("team", "a b"))
    [problem] = validate_doc(crds, doc, "job.yaml")
    assert problem.field == "metadata.labels.team"
    assert "invalid label value 'a b'" in problem.message


@pytest.mark.parametrize("name", ["Bad_Name", "a" * 64, "1st-job", "job.v2"])
def test_pytorchjob_name_must_be_a_dns1035_label(crds: CrdSet, name: str) -> None:
    doc = changed("pytorchjob.yaml", lambda d: d["metadata"].__setitem__("name", name))
    [problem] = validate_doc(crds, doc, "job.yaml")
    assert problem.field == "metadata.name"
    assert "DNS-1035 label" in problem.message


@pytest.mark.parametrize(
    ("port", "ok"), [(8080, True), ("http", True), ([8080], False), (True, False), (1.5, False)]
)
def test_int_or_string_accepts_integers_and_strings_only(
    crds: CrdSet, port: object, ok: bool
) -> None:
    # probe ports are x-kubernetes-int-or-string (IntOrString) in the pod template
    def probe(d: dict[str, Any]) -> None:
        container = worker(d)["template"]["spec"]["containers"][0]
        container["livenessProbe"] = {"httpGet": {"path": "/healthz", "port": port}}

    problems = validate_doc(crds, changed("pytorchjob.yaml", probe), "job.yaml")
    if ok:
        assert problems == []
    else:
        [problem] = problems
        assert problem.field.endswith("containers[0].livenessProbe.httpGet.port")
        assert problem.message.startswith("expected integer or string, got ")


def test_fractional_number_quantity_is_rejected_in_a_custom_resource(crds: CrdSet) -> None:
    # YAML `cpu: 0.5` is a float; a CRD's int-or-string rejects it (write "500m").
    def cpu(d: dict[str, Any]) -> None:
        worker(d)["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = 0.5

    [problem] = validate_doc(crds, changed("pytorchjob.yaml", cpu), "job.yaml")
    assert problem.message == 'expected integer or string, got number 0.5; quote it: "0.5"'


def test_queue_bounds_and_quantities(crds: CrdSet) -> None:
    weight = changed("queue.yaml", lambda d: d["spec"].__setitem__("weight", 0))
    assert [(p.field, p.message) for p in validate_doc(crds, weight, "q.yaml")] == [
        ("spec.weight", "must be >= 1, got 0")
    ]
    negative = changed("queue.yaml", lambda d: d["spec"]["capability"].__setitem__("cpu", "-1"))
    assert fields(validate_doc(crds, negative, "q.yaml")) == ["spec.capability.cpu"]


def test_queue_guarantee_deserved_capability_order(crds: CrdSet) -> None:
    doc = changed("queue.yaml", lambda d: d["spec"]["deserved"].__setitem__("cpu", "256"))
    [problem] = validate_doc(crds, doc, "q.yaml")
    assert problem.field == "spec.deserved.cpu"
    assert "exceeds capability" in problem.message


def test_namespace_on_a_cluster_scoped_kind_is_reported(crds: CrdSet) -> None:
    doc = changed("queue.yaml", lambda d: d["metadata"].__setitem__("namespace", "team"))
    assert fields(validate_doc(crds, doc, "q.yaml")) == ["metadata.namespace"]


def test_preserve_unknown_fields_allows_anything_below(crds: CrdSet) -> None:
    app = manifest("application.yaml")
    assert app["spec"]["source"]["helm"]["valuesObject"]["anything"]  # the free-form part
    typo = changed(
        "application.yaml", lambda d: d["spec"]["source"]["helm"].__setitem__("valueObject", {})
    )
    assert fields(validate_doc(crds, typo, "app.yaml")) == ["spec.source.helm.valueObject"]


def test_list_map_keys_must_be_unique(crds: CrdSet) -> None:
    def twin(d: dict[str, Any]) -> None:
        containers = worker(d)["template"]["spec"]["containers"]
        containers.append(copy.deepcopy(containers[0]))

    problems = validate_doc(crds, changed("pytorchjob.yaml", twin), "job.yaml")
    assert fields(problems) == ["spec.pytorchReplicaSpecs.Worker.template.spec.containers[1]"]
    assert 'duplicate entry (name="pytorch")' in problems[0].message


def test_list_map_keys_use_defaults(crds: CrdSet) -> None:
    # ports are a list-map keyed by (containerPort, protocol); protocol defaults to TCP
    def ports(d: dict[str, Any]) -> None:
        container = worker(d)["template"]["spec"]["containers"][0]
        container["ports"] = [{"containerPort": 80}, {"containerPort": 80, "protocol": "TCP"}]

    [problem] = validate_doc(crds, changed("pytorchjob.yaml", ports), "job.yaml")
    assert problem.field.endswith("containers[0].ports[1]")
    assert problem.message.startswith('duplicate entry (containerPort=80, protocol="TCP")')


def test_embedded_resource_allows_apiversion_kind_metadata(widgets: CrdSet) -> None:
    doc = yaml.safe_load((DATA / "widget.yaml").read_text())
    assert validate_doc(widgets, doc, "w.yaml") == []
    no_kind = copy.deepcopy(doc)
    del no_kind["spec"]["object"]["kind"]
    no_kind["spec"]["object"]["metadata"]["labels"]["app"] = "-bad-"
    no_kind["spec"]["object"]["extra"] = True
    assert sorted(fields(validate_doc(widgets, no_kind, "w.yaml"))) == [
        "spec.object.extra",
        "spec.object.kind",
        "spec.object.metadata.labels.app",
    ]


def test_enum_nullable_and_set(widgets: CrdSet) -> None:
    doc = yaml.safe_load((DATA / "widget.yaml").read_text())
    doc["spec"]["color"] = "blue"
    doc["spec"]["tags"] = ["alpha", "alpha"]
    doc["spec"]["note"] = "too long for eight"
    assert sorted((p.field, p.message) for p in validate_doc(widgets, doc, "w.yaml")) == [
        ("spec.color", 'unsupported value string "blue"; allowed: "red", "green"'),
        ("spec.note", "may be at most 8 characters (is 18)"),
        ("spec.tags[1]", 'duplicate entry ("alpha"); entries must be unique'),
    ]


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ({"url": "https://x"}, None),
        ({"configMap": "x"}, None),
        (
            {"url": "https://x", "configMap": "x"},
            "must match exactly one of the allowed forms (matches 2)",
        ),
        ({}, "must match exactly one of the allowed forms (matches 0)"),
    ],
)
def test_one_of(widgets: CrdSet, source: dict[str, str], message: str | None) -> None:
    doc = yaml.safe_load((DATA / "widget.yaml").read_text())
    doc["spec"]["source"] = source
    expected = [] if message is None else [("spec.source", message)]
    assert [(p.field, p.message) for p in validate_doc(widgets, doc, "w.yaml")] == expected


def test_int32_range(crds: CrdSet) -> None:
    doc = changed("pytorchjob.yaml", lambda d: worker(d).__setitem__("replicas", 2**31))
    [problem] = validate_doc(crds, doc, "job.yaml")
    assert problem.message == "2147483648 is out of range for int32"
