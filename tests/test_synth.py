import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from trainkit import SetupError
from trainkit import serialize as serialize_mod
from trainkit.cli import main
from trainkit.synth import synthesize
from trainkit.write import HEADER_PREFIX

REPO = Path(__file__).resolve().parents[1]


def synth(ws, **kw):
    return synthesize(ws.jobs, ws.out, **kw)


def test_layout_headers_and_kustomization(bare):
    out = synth(bare)
    files = sorted(out.files)
    assert "clusters/east/vision/pytorchjob-ddp.yaml" in files
    assert "clusters/east/platform/queues/research.yaml" in files
    assert "clusters/plain/platform/namespaces/vision.yaml" in files
    assert "argocd/application-west-platform.yaml" in files
    assert "argocd/application-west-vision.yaml" in files
    assert "argocd/appproject-team-vision.yaml" in files
    for rel, data in out.files.items():
        assert data.startswith(HEADER_PREFIX), rel
        assert b"Do not edit" in data.splitlines()[0]
        # Outside trainkit's own repository the header names the trainkit command.
        assert data.splitlines()[1] == b"# Regenerate with: trainkit synth"
    kust = yaml.safe_load(out.files["clusters/east/kustomization.yaml"])
    assert kust["resources"] == ["platform", "vision"]
    assert kust["components"] == ["kustomize"]
    for app, base in (("platform", "clusters/east/platform/"), ("vision", "clusters/east/vision/")):
        own = yaml.safe_load(out.files[f"{base}kustomization.yaml"])
        # The Component only teaches overlays of the cluster directory (test_kustomize).
        assert "components" not in own
        assert own["resources"] == sorted(
            f.removeprefix(base)
            for f in files
            if f.startswith(base) and not f.endswith("/kustomization.yaml")
        ), app
        assert "namespace" not in own  # it would land on cluster-scoped Queues
    component = yaml.safe_load(out.files["clusters/east/kustomize/kustomization.yaml"])
    assert component["kind"] == "Component"
    assert component["configurations"] == ["kustomizeconfig.yaml"]
    assert component["openapi"] == {"path": "kustomize-openapi.yaml"}


def test_every_manifest_round_trips_to_its_rendered_dict(bare):
    from trainkit.load import load_jobs
    from trainkit.resolve import build_plan
    from trainkit.synth.layout import _cluster_objects

    plan = build_plan(load_jobs(bare.jobs, bare.root).definitions)
    out = synth(bare)
    for cp in plan.clusters:
        for r in _cluster_objects(cp):
            assert yaml.safe_load(out.files[r.path]) == r.body


def test_second_run_changes_nothing_and_never_starts_node(bare, monkeypatch):
    synth(bare)
    before = bare.snapshot()

    def no_node(*a, **k):
        raise AssertionError("cdk8s was started although every object was cached")

    monkeypatch.setattr(serialize_mod, "_synth", no_node)
    out = synth(bare)
    assert not out.changes.any
    assert bare.snapshot() == before


def test_one_changed_script_synthesizes_only_its_objects(bare, monkeypatch):
    synth(bare)
    seen = []
    real = serialize_mod._synth

    def spy(objects):
        seen.extend(json.loads(o)["kind"] for o in objects)
        return real(objects)

    monkeypatch.setattr(serialize_mod, "_synth", spy)
    bare.write("jobs/vision/scripts/train.py", "print('v2')\n")
    out = synth(bare)
    assert sorted(seen) == ["ConfigMap", "ConfigMap", "PyTorchJob", "PyTorchJob"]
    assert len(out.changes.added) == 2 and len(out.changes.removed) == 2


def test_deleting_a_job_prunes_its_files(bare):
    synth(bare)
    (bare.root / "jobs/vision/ddp.py").unlink()
    out = synth(bare)
    assert not any("ddp" in f for f in bare.snapshot())
    # Its files, and with them the team's only Applications, their kustomizations and the
    # team's AppProject.
    assert sorted(out.changes.removed) == [
        "argocd/application-east-vision.yaml",
        "argocd/application-west-vision.yaml",
        "argocd/appproject-team-vision.yaml",
        "clusters/east/vision/configmap-ddp-script-" + _script_hash(out, "east"),
        "clusters/east/vision/kustomization.yaml",
        "clusters/east/vision/pytorchjob-ddp.yaml",
        "clusters/west/vision/configmap-ddp-script-" + _script_hash(out, "west"),
        "clusters/west/vision/kustomization.yaml",
        "clusters/west/vision/pytorchjob-ddp.yaml",
    ]


def _script_hash(out, cluster: str) -> str:
    (name,) = [
        f.rsplit("-", 1)[1]
        for f in out.changes.removed
        if f.startswith(f"clusters/{cluster}/vision/configmap-")
    ]
    return name


def test_check_mode_writes_nothing(bare):
    out = synth(bare, check=True)
    assert not bare.out.exists()
    assert len(out.changes.added) == len(out.files)


def test_refuses_to_replace_files_it_did_not_write(bare):
    bare.write("generated/notes.md", "mine\n")
    with pytest.raises(SetupError, match=r"notes\.md"):
        synth(bare)
    assert bare.snapshot() == {"notes.md": b"mine\n"}


def test_no_stray_directories_are_left_beside_the_output(bare):
    synth(bare)
    bare.write("jobs/vision/scripts/train.py", "print('v2')\n")
    synth(bare)
    assert sorted(p.name for p in bare.root.iterdir()) == ["generated", "jobs"]


def _run_synth(jobs: Path, out: Path, cwd: Path, env: dict[str, str], *flags: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "trainkit", "synth", "--jobs", str(jobs), "--out", str(out), *flags],
        cwd=cwd,
        env={**os.environ, **env},
        check=True,
        capture_output=True,
    )


def _read(d: Path) -> dict[str, bytes]:
    return {p.relative_to(d).as_posix(): p.read_bytes() for p in d.rglob("*") if p.is_file()}


@pytest.mark.long
def test_output_is_byte_identical_across_hash_seeds_time_zones_and_cwd(bare, tmp_path):
    # Each run is cold (no cache) so cdk8s itself is exercised each time. One runs here, one
    # in a process of its own: another hash seed than this process's, another time zone,
    # another working directory.
    a, b = tmp_path / "a", tmp_path / "b"
    with pytest.MonkeyPatch.context() as here:
        here.setenv("TZ", "UTC")
        here.chdir(bare.root)
        time.tzset()
        try:
            assert main(["synth", "--jobs", str(bare.jobs), "--out", str(a), "--no-cache"]) == 0
        finally:
            here.undo()
            time.tzset()
    seed = "4242" if os.environ.get("PYTHONHASHSEED") != "4242" else "1"
    _run_synth(
        bare.jobs, b, tmp_path, {"PYTHONHASHSEED": seed, "TZ": "Asia/Shanghai"}, "--no-cache"
    )
    assert _read(a) == _read(b)
    assert len(_read(a)) > 10


def test_a_small_tree_starts_the_node_its_files_need_not_one_per_cpu(bare, monkeypatch):
    # A node process costs more CPU to start than a small tree's YAML costs to write: while
    # the definitions run, node starts for the objects their files will render (about
    # OBJECTS_PER_FILE each, cdk8s_node._PER_PROCESS per process), not one per CPU.
    from trainkit import cdk8s_node

    monkeypatch.setattr(cdk8s_node.os, "sched_getaffinity", lambda _: {0, 1, 2, 3})
    serialize_mod._cdk8s.close()  # none left over from an earlier test
    try:
        out = synth(bare, use_cache=False)
        assert out.files  # the tree was written through node
        assert len(serialize_mod._cdk8s._procs) == 1
    finally:
        serialize_mod._cdk8s.close()
