"""``webhook_validation=False``: a runtime labelled ``trainer.kubeflow.org/webhook-validation:
disabled`` skips Trainer v2.3.0's runtime webhooks (manifests/base/webhook/
patch_validating.yaml objectSelector), as Trainer's own runtimes do. That is safe only because
what those webhooks check, ``validateReplicatedJobs`` (pkg/webhooks/trainingruntime_webhook.go),
holds for every runtime trainkit renders: checked here with a port of it, itself held to
trainingruntime_webhook_test.go's cases."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from trainkit import ClusterTrainingRuntime, ModelError
from trainkit.load import load_jobs
from trainkit.resolve import build_plan
from trainkit.synth import render_groups, rendered_runtimes

REPO = Path(__file__).resolve().parents[1]
ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
# trainingruntime_webhook.go expectedContainerNames
CONTAINER = {"trainer": "node", "model-initializer": "model-initializer",
             "dataset-initializer": "dataset-initializer"}  # fmt: skip


def webhook_errors(body: dict[str, Any]) -> list[str]:
    """validateReplicatedJobs: each replicated job labelled as one of the three ancestors has
    one replica and the ancestor's container; a job without labels, or another ancestor, is
    not checked."""
    errors = []
    for i, rjob in enumerate(body["spec"]["template"]["spec"]["replicatedJobs"]):
        labels = (rjob["template"].get("metadata") or {}).get("labels")
        if not labels or labels.get(ANCESTOR) not in CONTAINER:
            continue
        ancestor = labels[ANCESTOR]
        if rjob.get("replicas", 1) != 1:  # JobSet defaults replicas to 1
            errors.append(f"replicatedJobs[{i}].replicas")
        names = [c["name"] for c in rjob["template"]["spec"]["template"]["spec"]["containers"]]
        if CONTAINER[ancestor] not in names:
            errors.append(f"replicatedJobs[{i}].template.spec.template.spec.containers")
    return errors


def example_runtimes() -> list[dict[str, Any]]:
    plan = build_plan(load_jobs(REPO / "jobs", REPO).definitions)
    return [body for _, body in rendered_runtimes(render_groups(plan))]


def test_every_example_runtime_passes_what_the_webhook_checks() -> None:
    bodies = example_runtimes()
    # Torch, data (initializers), MPI, JAX, Flux runtimes: each trainer job and step checked.
    assert {b["metadata"]["labels"]["trainer.kubeflow.org/framework"] for b in bodies} >= {
        "torch", "mpi", "jax", "flux",
    }  # fmt: skip
    for body in bodies:
        assert webhook_errors(body) == [], body["metadata"]["name"]


def test_the_port_finds_what_trainer_s_tests_find() -> None:
    # trainingruntime_webhook_test.go "invalid replicas", "missing required container in
    # replicatedJobs" and "valid replicatedJobs with unknown user-specified ancestor".
    body = next(b for b in example_runtimes() if len(b["spec"]["template"]["spec"]
                ["replicatedJobs"]) > 1 and webhook_errors(b) == [])  # fmt: skip
    jobs = body["spec"]["template"]["spec"]["replicatedJobs"]
    checked = [i for i, j in enumerate(jobs) if (j["template"].get("metadata") or {}).get("labels")]
    many = copy.deepcopy(body)
    for i in checked:
        many["spec"]["template"]["spec"]["replicatedJobs"][i]["replicas"] = 2
    assert webhook_errors(many) == [f"replicatedJobs[{i}].replicas" for i in checked]
    renamed = copy.deepcopy(body)
    for i in checked:
        pod = renamed["spec"]["template"]["spec"]["replicatedJobs"][i]["template"]["spec"]
        pod["template"]["spec"]["containers"][0]["name"] = "test"
    assert webhook_errors(renamed) == [
        f"replicatedJobs[{i}].template.spec.template.spec.containers" for i in checked
    ]
    for i in checked:
        renamed["spec"]["template"]["spec"]["replicatedJobs"][i]["template"]["metadata"]["labels"][
            ANCESTOR
        ] = "user-specified"
    assert webhook_errors(renamed) == []


def test_the_label_is_written_only_when_asked() -> None:
    bodies = {b["metadata"]["name"]: b for b in example_runtimes()}
    assert bodies["flux-jammy"]["metadata"]["labels"][
        "trainer.kubeflow.org/webhook-validation"
    ] == "disabled"  # fmt: skip
    assert all(
        "trainer.kubeflow.org/webhook-validation" not in b["metadata"]["labels"]
        for name, b in bodies.items()
        if name != "flux-jammy"
    )


@pytest.mark.parametrize("value", ["maybe", 0.5, None, 2])
def test_a_bad_value_is_refused(value: object) -> None:
    with pytest.raises(ModelError) as e:
        ClusterTrainingRuntime(name="r", image="i:1", webhook_validation=value)
    assert str(e.value).endswith(
        "ClusterTrainingRuntime 'r': webhook_validation: must be True or False"
    )
