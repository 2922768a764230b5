"""A TrainJob's JobSet labels and annotations (``jobset_labels``, ``jobset_annotations``): the
runtime patch's own metadata, which Trainer v2.3.0 puts on the JobSet and JobSet v0.12.0 copies
to no pod; keys a controller acts on need the Team's grant, as pod labels do."""

from __future__ import annotations

import pytest
import yaml

from conftest import TRAINJOB
from test_trainer import problems
from trainkit import DefinitionError, TrainJob
from trainkit.synth import synthesize

LABELS = 'nodes=2,\n    jobset_labels={"example.com/cost-center": "research"},'


def _patch(ws) -> dict:
    synthesize(ws.jobs, ws.out)
    tj = yaml.safe_load((ws.out / "clusters/east/vision/trainjob-tj-r1.yaml").read_text())
    (patch,) = tj["spec"]["runtimePatches"]
    return patch["trainingRuntimeSpec"]["template"]


def test_they_are_the_patch_s_own_metadata_beside_the_queue(tw) -> None:
    # examples/yaml/02-runtime-patches.yaml at Trainer v2.3.0: labels and annotations of the
    # patch's template; trainingruntime.go newRuntimeInfo merges them over the runtime's.
    tw.write(
        "jobs/vision/tj.py",
        TRAINJOB.replace(
            "nodes=2,",
            LABELS + '\n    jobset_annotations={"prometheus.io/scrape": "true"},',
        ),
    )
    template = _patch(tw)
    assert template["metadata"] == {
        "labels": {"example.com/cost-center": "research"},
        "annotations": {
            "prometheus.io/scrape": "true",
            "scheduling.volcano.sh/queue-name": "research",
        },
    }
    # Not on the pods: JobSet copies a JobSet's labels to none of its Jobs or pods
    # (jobset v0.12.0 pkg/controllers/jobset_controller.go labelAndAnnotateObject).
    (node,) = template["spec"]["replicatedJobs"]
    pod_meta = node["template"]["spec"]["template"]["metadata"]
    assert "example.com/cost-center" not in pod_meta.get("labels", {})
    assert "prometheus.io/scrape" not in pod_meta.get("annotations", {})


def test_without_them_only_the_queue_is_written(tw) -> None:
    assert _patch(tw)["metadata"] == {
        "annotations": {"scheduling.volcano.sh/queue-name": "research"}
    }


def test_a_key_a_controller_acts_on_needs_the_teams_grant(tw) -> None:
    tw.write(
        "jobs/vision/tj.py",
        TRAINJOB.replace(
            "nodes=2,",
            'nodes=2,\n    jobset_labels={"kueue.x-k8s.io/queue-name": "other"},\n'
            '    jobset_annotations={"alpha.jobset.sigs.k8s.io/exclusive-topology": "rack"},',
        ),
    )
    found = problems(tw)
    for field, key, domain in (
        ("jobset_labels", "kueue.x-k8s.io/queue-name", "kueue.x-k8s.io"),
        ("jobset_annotations", "alpha.jobset.sigs.k8s.io/exclusive-topology", "jobset.sigs.k8s.io"),
    ):
        assert any(
            f"TrainJob 'tj': {field}.{key}: {key!r} is under {domain}/, which a controller acts "
            "on; team 'vision' may set it only where Team.pod_metadata_keys" in p
            for p in found
        ), found
    # Granted, the same keys pass.
    platform = (tw.jobs / "platform/platform.py").read_text()
    tw.write(
        "jobs/platform/platform.py",
        platform.replace(
            'vision = Team(name="vision",',
            'vision = Team(pod_metadata_keys=["kueue.x-k8s.io/queue-name", '
            '"alpha.jobset.sigs.k8s.io/"], name="vision",',
        ),
    )
    template = _patch(tw)
    assert template["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": "other"}


@pytest.mark.parametrize(
    ("field", "key", "says"),
    [
        ("jobset_labels", "trainkit.dev/team", "keys under trainkit.dev/ are trainkit's own"),
        ("jobset_annotations", "x.trainkit.dev/job", "keys under trainkit.dev/ are trainkit's own"),
        (
            "jobset_annotations",
            "scheduling.volcano.sh/queue-name",
            "is the Volcano queue trainkit writes from queue= (checked against the team's "
            "queues); set queue= instead",
        ),
        ("jobset_labels", "Bad Key", "'Bad Key' is not a label key"),
        ("jobset_annotations", "Bad Key", "'Bad Key' is not a label key"),
    ],
)
def test_bad_keys_are_refused(field: str, key: str, says: str) -> None:
    with pytest.raises(DefinitionError) as e:
        TrainJob(name="tj", runtime="torch", command=["true"], **{field: {key: "x"}})
    message = str(e.value)
    assert says in message, message
    assert field in message, message


def test_a_bad_label_value_is_refused() -> None:
    with pytest.raises(DefinitionError) as e:
        TrainJob(name="tj", runtime="torch", command=["true"], jobset_labels={"a": "x y"})
    assert "jobset_labels.a: 'x y' is not a label value" in str(e.value)
