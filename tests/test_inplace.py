"""A deployed TrainJob never changes in place: an edit needs a new run number."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

from conftest import RUNTIMES, TRAINJOB
from trainkit import serialize

GIT_ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
}


def git(root, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, env=GIT_ENV, check=True, capture_output=True)


def test_editing_a_deployed_trainjob_asks_for_a_new_run(tw, bare_cli):
    assert bare_cli("synth").code == 0
    before = tw.snapshot()
    tw.write("jobs/vision/tj.py", TRAINJOB.replace('"1"]', '"2"]'))
    for command in ("synth", "check"):
        r = bare_cli(command, "--against", "disk")
        assert r.code == 1, r
        assert (
            "error: jobs/vision/tj.py:3: TrainJob 'tj': run: TrainJob 'tj-r1' on cluster 'east' "
            "is deployed from generated/ on disk "
        ) in r.err
        assert (
            "would change in place (spec.trainer.args), but a TrainJob cannot change once "
            "created (Argo CD's sync would fail: field is immutable); set run=2 to start the "
            "edited job as tj-r2 (Argo CD prunes 'tj-r1'), or revert the change"
        ) in r.err
        assert tw.snapshot() == before

    tw.write("jobs/vision/tj.py", TRAINJOB.replace('"1"]', '"2"]').replace("nodes=2,", "run=2,"))
    assert bare_cli("synth").code == 0
    after = tw.snapshot()
    assert "clusters/east/vision/trainjob-tj-r2.yaml" in after
    assert "clusters/east/vision/trainjob-tj-r1.yaml" not in after


def test_an_edited_script_is_a_new_run_too(tw, bare_cli):
    assert bare_cli("synth").code == 0
    tw.write("jobs/vision/scripts/train.py", "print('training harder')\n")
    r = bare_cli("synth", "--against", "disk")
    assert r.code == 1
    assert "would change in place (spec.runtimePatches; its script changed: train.py)" in r.err


def test_an_edited_pytorchjob_script_is_named_once_for_all_its_clusters(bare, bare_cli):
    assert bare_cli("synth").code == 0
    bare.write("jobs/vision/scripts/train.py", "print('training harder')\n")
    r = bare_cli("synth", "--against", "disk")
    assert r.code == 1
    (line,) = [x for x in r.err.splitlines() if x.startswith("error:")]
    assert (
        "error: jobs/vision/ddp.py:3: PyTorchJob 'ddp': run: PyTorchJob 'ddp' on clusters "
        "'east', 'west' is deployed from generated/ on disk and would change in place "
    ) in line
    assert "its script changed: train.py)" in line
    assert line.count("set run=") == 1


def test_a_job_over_a_cap_that_also_changes_in_place_gets_both_errors_in_one_run(
    bare, bare_cli, monkeypatch
):
    bare.write(
        "jobs/platform/policy.py",
        "from trainkit import Policy\npolicy = Policy(max_gpus_per_job=8)\n",
    )
    assert bare_cli("synth").code == 0
    job = (bare.jobs / "vision/ddp.py").read_text()
    bare.write("jobs/vision/ddp.py", job.replace("nodes=2,", "nodes=3,"))
    sent: list[dict[str, Any]] = []
    real = serialize._synth
    monkeypatch.setattr(
        serialize, "_synth", lambda objects: sent.extend(map(json.loads, objects)) or real(objects)
    )
    r = bare_cli("synth", "--against", "disk")
    assert r.code == 1
    assert "exceed the per-job cap of 8" in r.err
    assert "would change in place" in r.err and "set run=1" in r.err
    # The render that finds the in-place change takes the unchanged objects' YAML from the
    # cache, as a passing run does: only the edited job's objects go to cdk8s.
    assert {(o["kind"], o["metadata"]["name"]) for o in sent} <= {("PyTorchJob", "ddp")}, sent


def test_runtime_edits_are_not_in_place_changes(tw, bare_cli):
    assert bare_cli("synth").code == 0
    # The TrainJob keeps only what it says; Trainer snapshots the runtime at creation.
    tw.write("jobs/platform/runtimes.py", RUNTIMES.replace("pytorch:2", "pytorch:3"))
    r = bare_cli("synth", "--against", "disk")
    assert r.code == 0, r.err
    assert "2 changed" in r.out  # the runtime on east and on plain


def test_a_pytorchjob_is_never_changed_in_place(bare, bare_cli):
    bare.write(
        "jobs/platform/more.py",
        "from trainkit import Queue\nother = Queue(name='other')\n",
    )
    platform = (bare.jobs / "platform/platform.py").read_text()
    bare.write(
        "jobs/platform/platform.py",
        platform.replace('queues=["research"]', 'queues=["research", "other"]'),
    )
    assert bare_cli("synth").code == 0
    job = (bare.jobs / "vision/ddp.py").read_text()
    bare.write("jobs/vision/ddp.py", job.replace("nodes=2,", "nodes=2, queue='other',"))
    r = bare_cli("synth", "--against", "disk")
    assert r.code == 1
    assert "PyTorchJob 'ddp' on clusters 'east', 'west' is deployed from" in r.err
    assert r.err.count("set run=1") == 1  # one edit of the job, whatever its clusters
    assert "(spec.runPolicy.schedulingPolicy)" in r.err
    assert "set run=1 to start the edited job as ddp-r1 (Argo CD prunes 'ddp')" in r.err


def test_the_deployed_tree_is_the_committed_one(tw, bare_cli):
    git(tw.root, "init", "-q", "-b", "main")
    assert bare_cli("synth").code == 0
    git(tw.root, "add", "-A")
    git(tw.root, "commit", "-q", "-m", "deploy r1")
    edited = TRAINJOB.replace('"1"]', '"2"]')
    tw.write("jobs/vision/tj.py", edited)
    r = bare_cli("synth")
    assert r.code == 1
    assert "is deployed from main (" in r.err

    # On a branch not yet merged, iterating on a new run never trips over itself:
    # only what main deploys counts.
    tw.write("jobs/vision/tj.py", edited.replace("nodes=2,", "run=2,"))
    assert bare_cli("synth").code == 0
    tw.write("jobs/vision/tj.py", edited.replace("nodes=2,", "run=2,").replace('"2"]', '"3"]'))
    assert bare_cli("synth").code == 0
    # The disk baseline would refuse that second edit of run 2.
    tw.write("jobs/vision/tj.py", edited.replace("nodes=2,", "run=2,"))
    r = bare_cli("synth", "--against", "disk")
    assert r.code == 1
    assert "TrainJob 'tj-r2'" in r.err


def test_an_unknown_revision_is_an_error(tw, bare_cli):
    git(tw.root, "init", "-q", "-b", "main")
    r = bare_cli("synth", "--against", "origin/nope")
    assert r.code == 1
    assert "git revision 'origin/nope' does not exist" in r.err
