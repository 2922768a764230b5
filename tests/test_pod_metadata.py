"""Pod labels and annotations: on every pod a job makes, never trainkit's own keys, and keys a
controller acts on only where the platform grants them."""

from __future__ import annotations

import pytest
import yaml

from example_edits import edit
from example_refusals import refusals
from shared_tree import SharedTree, keep_only
from trainkit import ModelError, PyTorchJob, Team
from trainkit.model.pod_metadata import STEERING_DOMAINS, steering_domain

RESNET = "jobs/vision/resnet50_ddp.py"
TEAMS = "jobs/platform/teams.py"
SFT = "jobs/llm/llama_sft_trainjob.py"


@pytest.fixture(scope="module")
def tree(module_ws, module_cli) -> SharedTree:
    """Pod labels and annotations on resnet50-ddp, a pod label on the llama-sft TrainJob:
    synthesized once, each test reads its own."""
    keep_only(module_ws, [RESNET, SFT])
    edit(
        module_ws, RESNET, 'queue="vision",',
        'queue="vision",\n    pod_labels={"example.com/cost-center": "vision", '
        '"app.kubernetes.io/name": "resnet"},\n'
        '    pod_annotations={"example.com/owner": "ml-infra: vision team"},',
    )  # fmt: skip
    edit(
        module_ws,
        SFT,
        'name="llama-sft",',
        'name="llama-sft",\n    pod_labels={"example.com/tier": "a"},',
    )
    return SharedTree.synthesized(module_ws, module_cli)


def test_labels_and_annotations_reach_every_pod_of_the_job(tree, crds) -> None:
    for job in tree.docs("pytorchjob-resnet50-ddp.yaml"):  # gpu-east and rocm-west
        for role in ("Master", "Worker"):
            meta = job["spec"]["pytorchReplicaSpecs"][role]["template"]["metadata"]
            assert meta["labels"]["example.com/cost-center"] == "vision"
            assert meta["labels"]["app.kubernetes.io/name"] == "resnet"
            assert meta["labels"]["trainkit.dev/job"] == "resnet50-ddp"  # trainkit's stay
            assert meta["annotations"] == {"example.com/owner": "ml-infra: vision team"}
    run = tree.run("check", "--crds", str(crds))
    assert run.code == 0, run.out + run.err


def test_a_trainjob_carries_them_in_its_runtime_patch(tree) -> None:
    (job,) = [
        yaml.safe_load(p.read_text(encoding="utf-8"))
        for p in tree.ws.out.rglob("trainjob-llama-sft-*.yaml")
        if "a800" in str(p)
    ]
    (patch,) = job["spec"]["runtimePatches"]
    for rj in patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]:
        labels = rj["template"]["spec"]["template"]["metadata"]["labels"]
        assert labels["example.com/tier"] == "a"
        assert labels["trainkit.dev/team"] == "llm"


@pytest.mark.parametrize(
    "key",
    ["trainkit.dev/team", "x.trainkit.dev/job", "app.kubernetes.io/managed-by"],
)
def test_trainkits_own_keys_are_refused(key: str) -> None:
    with pytest.raises(ModelError) as e:
        PyTorchJob(name="j", image="i:1", command=["true"], pod_labels={key: "x"})
    assert f"{key!r}: keys under trainkit.dev/ are trainkit's own" in str(e.value)


def test_a_key_a_controller_acts_on_needs_the_teams_grant(ws) -> None:
    edit(
        ws, RESNET, 'queue="vision",',
        'queue="vision",\n    pod_labels={"kueue.x-k8s.io/queue-name": "other"},\n'
        '    pod_annotations={"k8s.v1.cni.cncf.io/networks": "host-fabric", '
        '"app.kubernetes.io/instance": "other-app"},',
    )  # fmt: skip
    err = refusals(ws)
    for field, key, domain in (
        ("pod_labels", "kueue.x-k8s.io/queue-name", "kueue.x-k8s.io"),
        ("pod_annotations", "k8s.v1.cni.cncf.io/networks", "k8s.v1.cni.cncf.io"),
        ("pod_annotations", "app.kubernetes.io/instance", "argocd.argoproj.io"),
    ):
        assert (
            f"PyTorchJob 'resnet50-ddp': {field}.{key}: {key!r} is under {domain}/, which a "
            "controller acts on; team 'vision' may set it only where Team.pod_metadata_keys "
            f"in {TEAMS} grants it (allows none)"
        ) in err, err
    assert not ws.out.exists()
    # Granted: the exact key, or a prefix ending in '/'.
    edit(
        ws, TEAMS, 'vision = Team(name="vision",',
        'vision = Team(pod_metadata_keys=["kueue.x-k8s.io/queue-name", "k8s.v1.cni.cncf.io/", '
        '"app.kubernetes.io/instance"], name="vision",',
    )  # fmt: skip
    assert refusals(ws) == ""


@pytest.mark.parametrize("domain", STEERING_DOMAINS)
def test_every_steering_domain_and_its_subdomains_are_recognised(domain: str) -> None:
    assert steering_domain(f"{domain}/x") == domain
    assert steering_domain(f"sub.{domain}/x") == domain
    # A look-alike domain is not the controller's.
    assert steering_domain(f"{domain}x/x") is None
    assert steering_domain(f"{domain}.example.com/x") is None


def test_keys_no_controller_reads_are_free() -> None:
    for key in ("example.com/x", "team", "app.kubernetes.io/name", "app.kubernetes.io/version"):
        assert steering_domain(key) is None
    Team(name="t", pod_metadata_keys=["volcano.sh/"])  # a grant is plain data
