"""The platform's escape hatch: JSON patches (PlatformPatch) of planned objects, applied before
the effective pods, policy and the in-place checks, and never a way for a team to widen its
power."""

from __future__ import annotations

import pytest
import yaml

from trainkit import ModelError, PatchOp, PlatformPatch

PATCHES = "jobs/platform/patches.py"
RESNET = "clusters/gpu-east/vision/pytorchjob-resnet50-ddp.yaml"


def _patch_file(body: str) -> str:
    return f"from trainkit import PatchOp, PlatformPatch\n\n{body}"


def _object(ws, rel: str) -> dict:
    return yaml.safe_load((ws.out / rel).read_text(encoding="utf-8"))


def test_a_patch_changes_the_targeted_object_and_says_so(ws, cli) -> None:
    ws.write(
        PATCHES,
        _patch_file(
            'ttl = PlatformPatch(\n    name="admission-hint",\n    object_kind="PyTorchJob",\n'
            '    object_name="resnet50-ddp",\n    team="vision",\n    clusters=["gpu-east"],\n'
            '    ops=[PatchOp(op="add", path="/metadata/annotations/example.com~1admission",'
            ' value="fast-lane")],\n)\n'
        ),
    )
    before_run = cli("synth")
    assert before_run.code == 0, before_run.err
    obj = _object(ws, RESNET)
    annotations = obj["metadata"]["annotations"]
    assert annotations["example.com/admission"] == "fast-lane"
    assert annotations["trainkit.dev/patched-by"] == "admission-hint"
    # Only the targeted cluster's copy changed.
    other = _object(ws, "clusters/rocm-west/vision/pytorchjob-resnet50-ddp.yaml")
    assert "example.com/admission" not in other["metadata"]["annotations"]
    assert "trainkit.dev/patched-by" not in other["metadata"]["annotations"]
    # The definition hash covers the patch: an object whose patch changed is a changed object.
    assert (
        annotations["trainkit.dev/definition"]
        != other["metadata"]["annotations"]["trainkit.dev/definition"]
    )
    assert cli("check").code == 0


def test_a_patch_that_matches_nothing_is_an_error_naming_it(ws, cli) -> None:
    ws.write(
        PATCHES,
        _patch_file(
            'typo = PlatformPatch(name="typo", object_kind="PyTorchJob", object_name="resnet-50",\n'
            '    ops=[PatchOp(op="remove", path="/spec/runPolicy")])\n'
        ),
    )
    run = cli("synth")
    assert run.code == 1
    assert (
        f"error: {PATCHES}:3: PlatformPatch 'typo': object_kind: matches no planned object "
        "(object_kind 'PyTorchJob', object_name 'resnet-50'); a patch that changes nothing is "
        "a leftover or a typo: fix the target or remove the patch"
    ) in run.err
    assert not ws.out.exists()


def test_unknown_team_and_cluster_are_named(ws, cli) -> None:
    ws.write(
        PATCHES,
        _patch_file(
            'p = PlatformPatch(name="p", object_kind="TFJob", team="visoin", clusters=["gpu-est"],\n'
            '    ops=[PatchOp(op="remove", path="/spec/runPolicy")])\n'
        ),
    )
    run = cli("synth")
    assert run.code == 1
    assert "team: unknown team 'visoin'; defined teams: 'llm', 'vision'" in run.err
    assert "clusters: unknown cluster 'gpu-est'; defined clusters: 'a800-north'" in run.err
    assert "matches no planned object" not in run.err


def test_an_operation_that_fails_names_the_patch_and_the_object(ws, cli) -> None:
    ws.write(
        PATCHES,
        _patch_file(
            'p = PlatformPatch(name="guard", object_kind="PyTorchJob", object_name="resnet50-ddp",\n'
            '    ops=[PatchOp(op="test", path="/spec/runPolicy/backoffLimit", value=7)])\n'
        ),
    )
    run = cli("synth")
    assert run.code == 1
    assert (
        f"error: {PATCHES}:4: PlatformPatch 'guard': ops: cannot apply to PyTorchJob "
        "'resnet50-ddp' on cluster 'gpu-east' (clusters/gpu-east/vision/"
        "pytorchjob-resnet50-ddp.yaml): "
    ) in run.err
    assert "fix the operation or narrow the target" in run.err


def test_a_patched_object_is_judged_by_policy(ws, cli) -> None:
    # The platform's own patch may not take a job past what policy allows either: the GPUs
    # counted are the patched pods'.
    ws.write(
        PATCHES,
        _patch_file(
            'p = PlatformPatch(name="more-gpus", object_kind="PyTorchJob", '
            'object_name="resnet50-ddp",\n    clusters=["gpu-east"],\n'
            '    ops=[PatchOp(op="replace", path="/spec/pytorchReplicaSpecs/Worker/template/'
            'spec/containers/0/resources/limits/nvidia.com~1gpu", value=64),\n'
            '         PatchOp(op="replace", path="/spec/pytorchReplicaSpecs/Worker/template/'
            'spec/containers/0/resources/requests/nvidia.com~1gpu", value=64)])\n'
        ),
    )
    run = cli("synth")
    assert run.code == 1, run.out
    assert "resnet50-ddp" in run.err and "64" in run.err
    assert "PlatformPatch 'more-gpus'" in run.err


@pytest.mark.parametrize(
    "path",
    ["/metadata/namespace", "/metadata/name", "/kind", "/apiVersion", "/metadata", "/"],
)
def test_a_patch_cannot_move_an_object(path: str) -> None:
    with pytest.raises(ModelError) as e:
        PatchOp(op="add", path=path, value="x")
    assert "which places the object (its file, namespace and kind)" in str(e.value)


def test_operations_say_what_they_need() -> None:
    with pytest.raises(ModelError, match="op 'move' needs from_path"):
        PatchOp(op="move", path="/spec/a")
    with pytest.raises(ModelError, match="op 'replace' needs a value"):
        PatchOp(op="replace", path="/spec/a")
    with pytest.raises(ModelError, match="from_path is only for move and copy"):
        PatchOp(op="remove", path="/spec/a", from_path="/spec/b")
    assert PatchOp(op="add", path="/spec/a", value=None).as_rfc6902() == {
        "op": "add",
        "path": "/spec/a",
        "value": None,
    }
    assert PatchOp(op="copy", path="/spec/b", from_path="/spec/a").as_rfc6902() == {
        "op": "copy",
        "path": "/spec/b",
        "from": "/spec/a",
    }
    with pytest.raises(ModelError):
        PlatformPatch(name="empty", object_kind="PyTorchJob", ops=[])


def test_teams_cannot_write_patches(ws, cli) -> None:
    ws.write(
        "jobs/vision/patch.py",
        _patch_file(
            'p = PlatformPatch(name="mine", object_kind="PyTorchJob",\n'
            '    ops=[PatchOp(op="add", path="/spec/runPolicy/x", value=1)])\n'
        ),
    )
    run = cli("synth")
    assert run.code == 1
    assert (
        "error: jobs/vision/patch.py:3: PlatformPatch 'mine': platform objects belong in "
        "jobs/platform/; move it there"
    ) in run.err
