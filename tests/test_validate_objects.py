"""Kubernetes object rules that hold without any CRD: names, labels, annotations, quantities."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from trainkit.validate import validate_text


def problems(doc: dict[str, Any]) -> list[tuple[str, str]]:
    return [(p.field, p.message) for p in validate_text(yaml.safe_dump(doc), "x.yaml", None)]


def obj(kind: str, name: object, api_version: str = "v1", **meta: Any) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name, **meta}}


def pod_job(resources: dict[str, Any], labels: dict[str, Any] | None = None) -> dict[str, Any]:
    template: dict[str, Any] = {
        "spec": {"containers": [{"name": "pytorch", "image": "x", "resources": resources}]}
    }
    if labels is not None:
        template["metadata"] = {"labels": labels}
    doc = obj("PyTorchJob", "job", "kubeflow.org/v1")
    doc["spec"] = {"pytorchReplicaSpecs": {"Worker": {"replicas": 1, "template": template}}}
    return doc


WORKER = "spec.pytorchReplicaSpecs.Worker.template"


@pytest.mark.parametrize(
    ("kind", "api_version", "name", "ok"),
    [
        ("ConfigMap", "v1", "team.vision-settings", True),  # subdomain: dots allowed
        ("ConfigMap", "v1", "a" * 253, True),
        ("ConfigMap", "v1", "a" * 254, False),
        ("ConfigMap", "v1", "Settings", False),
        ("Namespace", "v1", "team-vision", True),
        ("Namespace", "v1", "team.vision", False),  # label: no dots
        ("Namespace", "v1", "a" * 64, False),
        ("Service", "v1", "9lives", False),  # DNS-1035: must start with a letter
        ("PyTorchJob", "kubeflow.org/v1", "resnet50-ddp", True),
        ("PyTorchJob", "kubeflow.org/v1", "Bad_Name", False),
        ("PyTorchJob", "kubeflow.org/v1", "a" * 64, False),
        ("PyTorchJob", "kubeflow.org/v1", "a" * 63, True),
        ("TrainJob", "trainer.kubeflow.org/v1alpha1", "llama.sft", False),
        ("Queue", "scheduling.volcano.sh/v1beta1", "team.vision", True),
    ],
)
def test_name_rules_by_kind(kind: str, api_version: str, name: str, ok: bool) -> None:
    found = problems(obj(kind, name, api_version))
    assert (found == []) is ok, found
    assert all(field == "metadata.name" for field, _ in found)


def test_name_is_required() -> None:
    assert problems({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}) == [
        ("metadata.name", "metadata.name is required; give the object a name")
    ]
    assert problems({"apiVersion": "v1", "kind": "ConfigMap"})[0][0] == "metadata.name"


@pytest.mark.parametrize(
    ("key", "value", "ok"),
    [
        ("app.kubernetes.io/name", "resnet50", True),
        ("team", "", True),  # empty values are fine
        ("team", "a" * 63, True),
        ("team", "a" * 64, False),
        ("team", "-vision", False),
        ("team", "vision team", False),
        ("Team_1.x", "v", True),
        ("UPPER.example.com/x", "v", False),  # prefix must be a lowercase subdomain
        ("example.com/" + "a" * 64, "v", False),
        ("/name", "v", False),
        ("a/b/c", "v", False),
    ],
)
def test_label_keys_and_values(key: str, value: str, ok: bool) -> None:
    found = problems(obj("ConfigMap", "cm", labels={key: value}))
    assert (found == []) is ok, found


def test_non_string_label_value_must_be_quoted() -> None:
    [(field, message)] = problems(obj("ConfigMap", "cm", labels={"gpu": True}))
    assert field == "metadata.labels.gpu"
    assert "must be a string; quote it" in message


def test_annotation_keys_are_checked_but_values_are_free() -> None:
    ok = obj("ConfigMap", "cm", annotations={"example.com/notes": "any text: at all\n"})
    bad = obj("ConfigMap", "cm", annotations={"bad key": "x"})
    assert problems(ok) == []
    assert [f for f, _ in problems(bad)] == ['metadata.annotations["bad key"]']


def test_unknown_and_server_set_metadata_fields() -> None:
    doc = obj("ConfigMap", "cm", lables={"a": "b"}, resourceVersion="123")
    assert sorted(f for f, _ in problems(doc)) == ["metadata.lables", "metadata.resourceVersion"]


@pytest.mark.parametrize(
    ("quantity", "ok"),
    [
        ("500m", True), ("16Gi", True), ("1.5", True), (".5", True), ("1e3", True), ("2E-3", True),
        (4, True), ("+4", True), ("100n", True),
        ("-1", False), (-1, False), ("64GB", False), ("1.5.0", False), ("", False), ("Gi", False),
        ("1 Gi", False), (True, False),
    ],
)  # fmt: skip
def test_quantity_syntax(quantity: object, ok: bool) -> None:
    found = problems(pod_job({"requests": {"memory": quantity}}))
    assert (found == []) is ok, found
    if not ok:
        assert found[0][0] == f"{WORKER}.spec.containers[0].resources.requests.memory"


def test_requests_above_limits_are_reported() -> None:
    [(field, message)] = problems(pod_job({"requests": {"cpu": "4"}, "limits": {"cpu": "3500m"}}))
    assert field == f"{WORKER}.spec.containers[0].resources.requests.cpu"
    assert message == "request '4' is greater than the limit '3500m'"


def test_extended_resources_need_equal_whole_limits() -> None:
    no_limit = problems(pod_job({"requests": {"nvidia.com/gpu": 8}}))
    unequal = problems(
        pod_job({"requests": {"nvidia.com/gpu": 4}, "limits": {"nvidia.com/gpu": 8}})
    )
    fraction = problems(pod_job({"limits": {"nvidia.com/gpu": "500m"}}))
    assert [m for _, m in no_limit] == [
        "nvidia.com/gpu is an extended resource: set limits.nvidia.com/gpu too"
    ]
    assert [m for _, m in unequal] == ["nvidia.com/gpu requests must equal limits (no overcommit)"]
    assert [m for _, m in fraction] == ["nvidia.com/gpu must be a whole number, not '500m'"]
    assert problems(pod_job({"limits": {"nvidia.com/gpu": 8}})) == []


def test_misspelt_resource_name_is_reported() -> None:
    [(field, message)] = problems(pod_job({"limits": {"memeory": "1Gi"}}))
    assert field.endswith("resources.limits.memeory")
    assert message.startswith("unknown resource name 'memeory'")


def test_pod_template_labels_are_checked() -> None:
    [(field, _)] = problems(pod_job({}, labels={"role": "master node"}))
    assert field == f"{WORKER}.metadata.labels.role"


def test_queue_resource_names_and_order() -> None:
    queue = obj("Queue", "vision", "scheduling.volcano.sh/v1beta1")
    queue["spec"] = {
        "guarantee": {"resource": {"cpu": "8"}},
        "deserved": {"cpu": "4", "memeory": "1Gi"},
        "capability": {"cpu": "16", "pods": 100},
    }
    assert sorted(problems(queue)) == [
        (
            "spec.deserved.memeory",
            "unknown resource name 'memeory'; use cpu, memory, ephemeral-storage, "
            "hugepages-<size> or a domain-qualified extended resource such as nvidia.com/gpu",
        ),
        (
            "spec.guarantee.resource.cpu",
            "guarantee.resource '8' exceeds deserved '4'; "
            "Volcano requires guarantee ≤ deserved ≤ capability",
        ),
    ]


def test_node_selector_and_node_affinity_labels_are_checked() -> None:
    doc = pod_job({})
    spec = doc["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]
    spec["nodeSelector"] = {"gpu product": "a100", "zone": "a/b", "ok.example.com/rack": "r1"}
    spec["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "-bad", "operator": "Exists"}]}]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 1,
                    "preference": {
                        "matchExpressions": [{"key": "gpu", "operator": "In", "values": ["A 100"]}]
                    },
                }
            ],
        }
    }
    node = f"{WORKER}.spec.affinity.nodeAffinity"
    assert sorted(field for field, _ in problems(doc)) == sorted(
        [
            f'{WORKER}.spec.nodeSelector["gpu product"]',
            f"{WORKER}.spec.nodeSelector.zone",
            f"{node}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
            ".matchExpressions[0].key",
            f"{node}.preferredDuringSchedulingIgnoredDuringExecution[0].preference"
            ".matchExpressions[0].values[0]",
        ]
    )
    messages = " | ".join(m for _, m in problems(doc))
    assert "invalid node label key 'gpu product'" in messages
    assert "invalid node label value 'A 100'" in messages
