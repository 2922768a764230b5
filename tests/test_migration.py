"""Moving the example tree as it stood on main before this layout (one Application per
cluster, each with Argo CD's resources finalizer) to one Application per team, keeping every
job: a model of what Argo CD does at each step (synth.migration) over the real trees.

The deployed tree: ``generated/argocd/`` of the commit that last had the old layout (git
history: the parent of the commit that moved ``clusters/<cluster>/queues/`` below
``platform/``), and each cluster's directory laid out as then, with today's example jobs
(the old commit's jobs may break rules added since).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import RepoCaches
from trainkit.errors import DefinitionError
from trainkit.render.argocd import RESOURCES_FINALIZER, retired_application_name
from trainkit.synth import synthesize
from trainkit.validate import kustomize_build

REPO = Path(__file__).resolve().parents[1]
CLUSTERS = ("a800-north", "gpu-east", "h100-south", "rocm-west")
MOVED = "generated/clusters/gpu-east/queues/vision.yaml"


def git(repo: Path, *args: str, input: bytes | None = None) -> bytes:
    out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, input=input)
    assert out.returncode == 0, out.stderr.decode()
    return out.stdout


def old_commit() -> str:
    found = git(REPO, "log", "-1", "--format=%H", "--diff-filter=D", "--", MOVED).decode().strip()
    if not found:
        pytest.fail(
            f"no commit removed {MOVED} in this clone's history: the test needs the tree "
            "before one Application per team (a full clone, not a shallow one)",
            pytrace=False,
        )
    return found + "^"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, _examples_caches: RepoCaches) -> Path:
    """A repository whose main is the example tree before this layout, as deployed; with
    the caches a synth of the examples leaves (``conftest.RepoCaches``), so that each synth
    here runs only the definition file it edits and sends cdk8s only the objects it changes."""
    for name in list(os.environ):
        if name.startswith("GIT_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    for who in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{who}_NAME", "Test")
        monkeypatch.setenv(f"GIT_{who}_EMAIL", "test@example.com")
    monkeypatch.delenv("CI", raising=False)
    root = tmp_path / "repo"
    shutil.copytree(REPO / "jobs", root / "jobs", ignore=shutil.ignore_patterns("__pycache__"))
    _examples_caches.seed(root)
    set_retire(root, False)
    fresh = tmp_path / "fresh"
    synthesize(root / "jobs", fresh, root=root)
    old_layout(fresh, root / "generated")
    archive = git(REPO, "archive", old_commit(), "generated/argocd")
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(root, filter="data")
    git(root, "init", "-q", "-b", "main")
    commit(root, "the layout up to trainkit 0.2")
    return root


def old_layout(new: Path, out: Path) -> None:
    """The clusters' directories as trainkit up to 0.2 wrote them: every file of a cluster in
    one kustomization, the platform's beside the teams'."""
    for cluster in sorted((new / "clusters").iterdir()):
        files: dict[str, bytes] = {}
        for path in sorted(cluster.rglob("*.yaml")):
            rel = path.relative_to(cluster).as_posix()
            parts = rel.split("/")
            if parts[-1] == "kustomization.yaml":
                continue
            if parts[0] == "kustomize":
                rel = parts[-1]
            elif parts[0] == "platform":
                rel = "/".join(parts[1:])
            elif len(parts) == 3 and parts[1].startswith("part-"):
                rel = f"{parts[0]}/{parts[2]}"
            files[rel] = path.read_bytes()
        listed = sorted(
            r for r in files if r not in ("kustomizeconfig.yaml", "kustomize-openapi.yaml")
        )
        files["kustomization.yaml"] = yaml.safe_dump({
            "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
            "configurations": ["kustomizeconfig.yaml"],
            "openapi": {"path": "kustomize-openapi.yaml"}, "resources": listed,
        }, sort_keys=False).encode()  # fmt: skip
        for rel, data in files.items():
            target = out / "clusters" / cluster.name / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)


def commit(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


def set_retire(root: Path, value: bool) -> None:
    path = root / "jobs/platform/clusters.py"
    lines = [
        line
        for line in path.read_text().splitlines(keepends=True)
        if not line.strip().startswith("retire_cluster_applications=")
    ]
    text = "".join(lines)
    if value:
        text = text.replace("ArgoCD(\n", "ArgoCD(\n    retire_cluster_applications=True,\n", 1)
    path.write_text(text)
    assert ("retire_cluster_applications=True" in text) == value


def synth(root: Path) -> Any:
    return synthesize(root / "jobs", root / "generated", root=root, against="main")


def kustomize(path: Path) -> list[dict[str, Any]]:
    """What Argo CD applies for ``path``: its kustomize build (the one ``check`` runs)."""
    text, problems = kustomize_build(path)
    assert not problems, problems
    # libyaml's parser: the same documents as PyYAML's own, for a fraction of its CPU.
    return [d for d in yaml.load_all(text, Loader=yaml.CSafeLoader) if d]


def applications(argocd: Path) -> dict[str, dict[str, Any]]:
    # libyaml's parser, as in kustomize() (PyYAML's own took a quarter of the test's CPU).
    listed = yaml.load((argocd / "kustomization.yaml").read_bytes(), Loader=yaml.CSafeLoader)
    apps = {}
    for rel in listed["resources"]:
        doc = yaml.load((argocd / rel).read_bytes(), Loader=yaml.CSafeLoader)
        if doc["kind"] == "Application":
            apps[doc["metadata"]["name"]] = doc
    return apps


def synced(root: Path, apps: dict[str, dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """What each syncing Application applies (the root's own directory aside), built once
    for both ``tracked`` and ``bodies``."""
    return {
        name: kustomize(root / app["spec"]["source"]["path"])
        for name, app in apps.items()
        if "automated" in app["spec"].get("syncPolicy", {})
        and app["spec"]["source"]["path"] != "generated/argocd"
    }


def identity(app: dict[str, Any], d: dict[str, Any]) -> tuple[str, str, str, str]:
    """An object as a cluster knows it: its cluster (the Application's destination), kind,
    namespace and name (a job on two clusters is two objects)."""
    destination = app["spec"]["destination"]
    return (str(destination.get("server") or destination["name"]),
            d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"])  # fmt: skip


def tracked(
    apps: dict[str, dict[str, Any]], built: dict[str, list[dict[str, Any]]]
) -> dict[tuple[str, str, str, str], str]:
    """What each syncing Application applies: object identity → the Application (its
    tracking annotation, once it has synced)."""
    out: dict[tuple[str, str, str, str], str] = {}
    for name, docs in built.items():
        for d in docs:
            key = identity(apps[name], d)
            assert key not in out, f"{key} synced by {out.get(key)} and {name}"
            out[key] = name
    return out


def bodies(
    apps: dict[str, dict[str, Any]], built: dict[str, list[dict[str, Any]]]
) -> dict[tuple[str, str, str, str], str]:
    """Object identity → what is applied (on each cluster: the same job on two clusters
    is compared on each)."""
    return {
        identity(apps[name], d): json.dumps(d, sort_keys=True)
        for name, docs in built.items()
        for d in docs
    }


@pytest.mark.long
def test_the_switch_keeps_every_job(repo: Path) -> None:
    before = applications(repo / "generated/argocd")
    assert sorted(before) == sorted(["trainkit", *(retired_application_name(c) for c in CLUSTERS)])
    old_built = synced(repo, before)
    old_tracked = tracked(before, old_built)
    old_bodies = bodies(before, old_built)
    jobs = [k for k in old_tracked if k[1] in ("PyTorchJob", "TrainJob", "MPIJob", "RayJob",
                                               "TFJob", "PaddleJob")]  # fmt: skip
    assert len(jobs) > 10

    # The naive switch: the root would prune every old Application, finalizer and all.
    with pytest.raises(DefinitionError) as refused:
        synth(repo)
    messages = [p.message for p in refused.value.problems]
    assert len(messages) == len(CLUSTERS)
    assert all("carries Argo CD's resources finalizer" in m and "retire_cluster_applications=True" in m
               for m in messages)  # fmt: skip

    # Step 1: retire the old Applications, add the new ones.
    set_retire(repo, True)
    synth(repo)
    step1 = applications(repo / "generated/argocd")
    # Nothing is pruned by the root: every old Application is still listed...
    assert set(before) <= set(step1)
    for c in CLUSTERS:
        old = step1[retired_application_name(c)]
        # ...and can no longer delete, prune or apply anything.
        assert RESOURCES_FINALIZER not in old["metadata"].get("finalizers", [])
        assert "automated" not in old["spec"]["syncPolicy"]
        assert "Delete=false" in old["spec"]["syncPolicy"]["syncOptions"]
    step1_built = synced(repo, step1)
    new_tracked = tracked(step1, step1_built)
    # The new Applications apply exactly the objects the old ones synced, unchanged: each
    # apply only moves the tracking annotation; no job is deleted, created or changed.
    assert set(new_tracked) == set(old_tracked)
    assert bodies(step1, step1_built) == old_bodies
    for key in jobs:
        assert new_tracked[key] != old_tracked[key]
        assert new_tracked[key].startswith("trainkit-") and "platform" not in new_tracked[key]
    commit(repo, "step 1")

    # Step 2 is Argo CD's (the root applies step 1); a second synth changes nothing.
    assert not synth(repo).changes.any

    # Step 3: the root prunes the old Applications, which no longer carry the finalizer:
    # finalizeApplicationDeletion deletes nothing (controller/appcontroller.go: only with
    # the finalizer, app.CascadedDeletion()).
    set_retire(repo, False)
    synth(repo)
    step3 = applications(repo / "generated/argocd")
    pruned = set(step1) - set(step3)
    assert pruned == {retired_application_name(c) for c in CLUSTERS}
    for name in pruned:
        deployed = step1[name]  # what the root prunes: the live object applied in step 1
        assert RESOURCES_FINALIZER not in deployed["metadata"].get("finalizers", [])
    assert tracked(step3, synced(repo, step3)) == new_tracked
    commit(repo, "step 3")
    assert not synth(repo).changes.any
