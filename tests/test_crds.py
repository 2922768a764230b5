"""CRDs, honestly: which ones a tree needs, the pinned upstream files, and what check says without them."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
import yaml

from conftest import JOB
from trainkit.errors import SetupError
from trainkit.upstream import fetch_crds, load_pins, pins_for_kinds
from trainkit.validate import crd_needs, load_crds
from validate_fixtures import shared_crd_facts

# What the bare workspace (conftest) generates: PyTorchJobs and Queues on its clusters,
# Applications and AppProjects where Argo CD runs.
BARE_KINDS = {
    ("argoproj.io", "AppProject"),
    ("argoproj.io", "Application"),
    ("kubeflow.org", "PyTorchJob"),
    ("scheduling.volcano.sh", "Queue"),
}
BARE_KEYS = {
    ("argoproj.io", "v1alpha1", "AppProject"),
    ("argoproj.io", "v1alpha1", "Application"),
    ("kubeflow.org", "v1", "PyTorchJob"),
    ("scheduling.volcano.sh", "v1beta1", "Queue"),
}


def needed_files(crds: Path) -> list[Path]:
    return [crds / pin.path for pin in pins_for_kinds(load_pins(), BARE_KEYS)]


# --- the pins ----------------------------------------------------------------------------


@pytest.mark.long
def test_every_pin_is_the_local_copy_of_its_upstream_file_and_lists_the_versions_it_serves(
    crds: Path,
) -> None:
    """The shared CRD files, read once per session (validate_fixtures), for all facts of a pin."""
    pins = load_pins()
    assert len(pins) == len({p.path for p in pins}) >= 20
    files = shared_crd_facts()
    for pin in pins:
        data, (doc,) = files[crds / pin.path]
        assert hashlib.sha256(data).hexdigest() == pin.sha256, pin.path
        assert (doc.group, doc.kind) == (pin.group, pin.kind), pin.path
        assert pin.served == tuple(name for name, served in doc.versions if served), pin.path
        assert pin.url.startswith("https://raw.githubusercontent.com/"), pin.url
        assert pin.url.endswith("/" + pin.path.split("/")[-1]), pin.url
        assert pin.version in pin.url or len(pin.url.split("/")[5]) == 40, pin.url  # tag or commit


def test_the_pins_cover_every_kind_trainkit_generates() -> None:
    kinds = {(p.group, p.kind) for p in load_pins()}
    assert {
        ("trainer.kubeflow.org", "TrainJob"),
        ("trainer.kubeflow.org", "TrainingRuntime"),
        ("trainer.kubeflow.org", "ClusterTrainingRuntime"),
        *BARE_KINDS,
    } <= kinds


# --- fetching ----------------------------------------------------------------------------


def test_fetch_from_a_mirror_writes_verified_files_once(tmp_path: Path, crds: Path) -> None:
    pins = pins_for_kinds(load_pins(), {("scheduling.volcano.sh", "v1beta1", "Queue")})
    dest = tmp_path / "crds"
    (first,) = fetch_crds(pins, dest, mirror=str(crds))
    # The mirror is named by its real path (a symlinked ../shared resolves).
    assert first.source == (crds.resolve() / "volcano/scheduling.volcano.sh_queues.yaml").as_uri()
    assert first.path.read_bytes() == (crds / pins[0].path).read_bytes()
    # A file:// URL is the same code path; a verified file is not fetched again.
    (again,) = fetch_crds(pins, dest, mirror=crds.as_uri())
    assert again.source == "already there"
    assert [p.name for p in dest.rglob("*") if p.is_file()] == ["scheduling.volcano.sh_queues.yaml"]


def test_a_file_whose_checksum_differs_is_not_written(tmp_path: Path, crds: Path) -> None:
    mirror = tmp_path / "mirror"
    (mirror / "volcano").mkdir(parents=True)
    original = (crds / "volcano/scheduling.volcano.sh_queues.yaml").read_text()
    (mirror / "volcano/scheduling.volcano.sh_queues.yaml").write_text(original + "# edited\n")
    pins = pins_for_kinds(load_pins(), {("scheduling.volcano.sh", "v1beta1", "Queue")})
    with pytest.raises(SetupError) as err:
        fetch_crds(pins, tmp_path / "dest", mirror=str(mirror))
    (problem,) = err.value.problems
    assert problem.file.endswith("mirror/volcano/scheduling.volcano.sh_queues.yaml")
    assert f"differs from the pinned {pins[0].sha256} of Volcano v1.12.4" in problem.message
    assert "not written" in problem.message
    assert not (tmp_path / "dest").exists()


def test_unreachable_sources_are_named(tmp_path: Path) -> None:
    pins = load_pins(
        """
[[release]]
dir = "x"
name = "X"
version = "v1"
url = "ftp://example.invalid/crds/"

[[release.file]]
name = "x.yaml"
kind = "x.example.com/X"
sha256 = "00"
"""
    )
    with pytest.raises(SetupError, match=r"unsupported URL scheme 'ftp'"):
        fetch_crds(pins, tmp_path / "dest")
    with pytest.raises(SetupError) as err:
        fetch_crds(pins, tmp_path / "dest", mirror=(tmp_path / "empty").as_uri())
    assert "cannot fetch x/x.yaml" in err.value.problems[0].message
    with pytest.raises(SetupError, match="CRD mirror: no such directory"):
        fetch_crds(pins, tmp_path / "dest", mirror=str(tmp_path / "nope"))


# --- trainkit crds -----------------------------------------------------------------------


def test_crds_lists_what_each_cluster_needs_and_its_upstream_release(bare_cli, monkeypatch):
    monkeypatch.delenv("TRAINKIT_CRDS", raising=False)
    run = bare_cli("crds")
    assert run.code == 0, run.err
    lines = run.out.splitlines()
    assert lines[0] == "CRDs the tree of jobs/ needs, and their upstream release:"
    argo = lines.index("  where Argo CD runs (argocd/)")
    east = lines.index("  cluster east (clusters/east/)")
    assert lines[argo + 1].split() == [
        "argoproj.io",
        "AppProject",
        "v1alpha1",
        "Argo",
        "CD",
        "v3.5.1",
    ]
    assert lines[east + 1].split()[:3] == ["kubeflow.org", "PyTorchJob", "v1"]
    assert lines[east + 2].split() == [
        "scheduling.volcano.sh",
        "Queue",
        "v1beta1",
        "Volcano",
        "v1.12.4",
    ]
    # No job runs on the third cluster, which has no Volcano: the queue, listing no clusters,
    # is on the two Volcano clusters only, so the third needs no CRD.
    assert "  cluster plain (clusters/plain/)" not in lines
    assert lines[east + 3] == "  cluster west (clusters/west/)"
    assert "No CRDs given" in lines[-1]


def test_crds_names_each_missing_crd_and_where_it_is_needed(bare_cli, crds, tmp_path):
    only_argocd = tmp_path / "argocd-only"
    shutil.copytree(crds / "argocd", only_argocd)
    run = bare_cli("crds", "--crds", str(only_argocd))
    assert run.code == 1
    assert "    argoproj.io            Application  v1alpha1  application-crd.yaml" in run.out
    assert "scheduling.volcano.sh  Queue        v1beta1   MISSING" in run.out
    assert (
        f"error: {only_argocd}: no CRD for kubeflow.org/v1 PyTorchJob (needed on cluster east, "
        "on cluster west); fetch the pinned Kubeflow Training Operator v1.9.4 "
        "one (trainkit crds --fetch), or add your cluster's (kubectl get crd -o yaml)"
    ) in run.err
    assert run.err.endswith("trainkit crds: 2 error(s)\n")


def test_crds_fetch_gets_what_the_tree_needs_then_check_requires_them(bare, bare_cli, crds):
    run = bare_cli("crds", "--fetch", "crds", "--mirror", str(crds), "--format", "json")
    assert run.code == 0, run.err
    assert "crds/: 4 pinned CRD file(s), SHA-256 verified (4 fetched from" in run.err
    report = json.loads(run.out)
    assert report["crds"] == "crds"
    assert {(n["group"], n["kind"]) for n in report["needs"]} == BARE_KINDS
    queue = next(n for n in report["needs"] if n["kind"] == "Queue")
    assert queue["clusters"] == ["east", "west"] and queue["argocd"] is False
    assert queue["found"] == "volcano/scheduling.volcano.sh_queues.yaml"
    assert queue["pinned"]["url"].endswith(
        "/v1.12.4/config/crd/volcano/bases/" + Path(queue["found"]).name
    )
    fetched = sorted(
        p.relative_to(bare.root / "crds").as_posix() for p in (bare.root / "crds").rglob("*.yaml")
    )
    assert fetched == sorted(pin.path for pin in pins_for_kinds(load_pins(), BARE_KEYS))
    assert bare_cli("synth").code == 0
    run = bare_cli("check", "--require-crds", "--crds", "crds")
    assert run.code == 0, run.err
    assert "valid against the CRDs in crds;" in run.out


def test_crds_fetch_passes_on_a_tree_the_policy_refuses(bare, bare_cli, crds):
    """The workflow `trainkit init` writes fetches the CRDs before `check`, which annotates a
    refused job on its line: the fetch must not stop at the refusal first (the bad pull request
    of tests/test_init_workflows.py takes the fetched files from its good one)."""
    bare.write("jobs/vision/ddp.py", JOB.replace("gpu=4", "gpu=12"))
    run = bare_cli("crds", "--fetch", "crds", "--mirror", str(crds))
    assert run.code == 0, run.err
    assert "crds/: 4 pinned CRD file(s), SHA-256 verified (4 fetched from" in run.err
    run = bare_cli("synth")
    assert run.code == 1
    assert "resources.gpu: 12 exceeds the 8 GPUs per node of cluster 'east'" in run.err


@pytest.mark.parametrize("ci", [False, True], ids=["laptop", "github-actions"])
def test_fetched_crds_live_outside_the_work_tree_and_check_finds_them(
    bare, bare_cli, crds, tmp_path_factory, monkeypatch, ci
):
    """No flag, no TRAINKIT_CRDS: the pinned files go to the cache directory (in GitHub
    Actions, the runner's temporary directory), where no pull request can add one."""
    monkeypatch.delenv("TRAINKIT_CRDS", raising=False)
    home = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("TRAINKIT_CACHE_DIR", str(home / "cache"))
    if ci:
        monkeypatch.setenv("RUNNER_TEMP", str(home / "runner"))
    where = home / "runner" / "trainkit-crds" if ci else home / "cache" / "crds"
    run = bare_cli("crds", "--fetch", "--mirror", str(crds))
    assert run.code == 0, run.err
    assert f"{where.as_posix()}/: 4 pinned CRD file(s), SHA-256 verified" in run.err
    assert not (bare.root / ".trainkit").exists()
    assert bare_cli("synth").code == 0
    run = bare_cli("check", "--require-crds")
    assert run.code == 0, run.err
    assert f"valid against the pinned CRDs fetched into {where};" in run.out


# --- --crds as one file, a List as kubectl prints it --------------------------------------


def kubectl_list(files: list[Path]) -> str:
    """What ``kubectl get crd -o yaml`` prints: a v1 List of CRDs with server fields."""
    items = []
    for path in files:
        doc = yaml.load(path.read_text(), Loader=yaml.CSafeLoader)
        doc["metadata"].update(uid="0f0e", resourceVersion="1", generation=1)
        doc["status"] = {"acceptedNames": doc["spec"]["names"], "storedVersions": ["v1"]}
        items.append(doc)
    return yaml.dump(
        {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}},
        Dumper=yaml.CSafeDumper,
    )


def test_a_kubectl_list_file_is_a_crd_source(bare, bare_cli, crds, tmp_path_factory):
    # Outside the work tree: inside it, a file counts only when the platform lists it.
    dump = tmp_path_factory.mktemp("dump") / "cluster-crds.yaml"
    dump.write_text(kubectl_list(needed_files(crds)))
    loaded = load_crds(dump, no_cache=True)
    assert {(g, k) for g, _, k in loaded.kinds()} == BARE_KINDS
    assert bare_cli("synth").code == 0
    run = bare_cli("check", "--require-crds", "--crds", str(dump))
    assert run.code == 0, run.err
    run = bare_cli("crds", "--crds", str(dump))
    assert run.code == 0, run.err
    assert "kubeflow.org           PyTorchJob   v1        cluster-crds.yaml" in run.out


def test_a_directory_of_crd_documents_or_lists_is_a_crd_source(tmp_path, crds):
    (tmp_path / "a.yaml").write_text(kubectl_list(needed_files(crds)[:1]))
    shutil.copy(needed_files(crds)[1], tmp_path / "b.yaml")
    (tmp_path / "empty-list.yml").write_text("apiVersion: v1\nkind: List\nitems: []\n")
    kinds = {(g, k) for g, _, k in load_crds(tmp_path, no_cache=True).kinds()}
    assert len(kinds) == 2


def test_a_file_without_crds_is_a_setup_error(tmp_path):
    path = tmp_path / "pods.yaml"
    path.write_text("apiVersion: v1\nkind: List\nitems: []\n")
    with pytest.raises(SetupError, match="no CustomResourceDefinition found"):
        load_crds(path)


def test_crd_needs_reads_bytes_and_objects_and_skips_kustomize_files() -> None:
    needs = crd_needs(
        [
            ("clusters/a/q.yaml", b"apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\n"),
            ("clusters/b/q.yaml", {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue"}),
            (
                "clusters/a/kustomization.yaml",
                b"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n",
            ),
            ("argocd/app.yaml", {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application"}),
            (
                "other/list.yaml",
                b"apiVersion: v1\nkind: List\nitems:\n- {apiVersion: x.io/v1, kind: X}\n",
            ),
            ("clusters/a/cm.yaml", b"apiVersion: v1\nkind: ConfigMap\n"),
            ("clusters/a/broken.yaml", b"key: [unclosed\n"),
        ]
    )
    assert [(n.group, n.kind, n.clusters, n.argocd, n.elsewhere) for n in needs] == [
        ("argoproj.io", "Application", (), True, ()),
        ("scheduling.volcano.sh", "Queue", ("a", "b"), False, ()),
        ("x.io", "X", (), False, ("other/list.yaml",)),
    ]


# --- check and validate without CRDs ------------------------------------------------------

UNVERIFIED = (
    "not validated against CRDs (no --crds, TRAINKIT_CRDS is not set, and none were fetched): "
    "the schemas and CEL rules of argoproj.io/v1alpha1 AppProject, argoproj.io/v1alpha1 Application, kubeflow.org/v1 "
    "PyTorchJob, scheduling.volcano.sh/v1beta1 Queue went unchecked"
)


def test_check_without_crds_says_what_it_could_not_verify(bare, bare_cli, monkeypatch):
    monkeypatch.delenv("TRAINKIT_CRDS", raising=False)
    assert bare_cli("synth").code == 0
    run = bare_cli("check")
    assert run.code == 0
    assert f"warning: generated/: {UNVERIFIED}" in run.err
    assert "--require-crds makes this an error" in run.err
    assert "valid against object rules only, NOT against CRDs" in run.out
    before = bare.snapshot()
    run = bare_cli("check", "--require-crds")
    assert run.code == 1
    assert f"error: generated/: {UNVERIFIED}" in run.err
    assert "(--require-crds)" in run.err
    assert bare.snapshot() == before


def test_validate_without_crds_warns_and_require_crds_fails(bare_cli, monkeypatch):
    monkeypatch.delenv("TRAINKIT_CRDS", raising=False)
    assert bare_cli("synth").code == 0
    run = bare_cli("validate")
    assert run.code == 0
    assert "warning: generated: not validated against CRDs" in run.err
    run = bare_cli("validate", "--require-crds")
    assert run.code == 1
    assert "error: generated: not validated against CRDs" in run.err


# --- matching pins on group, kind and served version --------------------------------------


def test_no_two_pins_serve_the_same_group_version_and_kind() -> None:
    """Otherwise which file a kind gets would depend on the clusters' operators alone."""
    seen: dict[tuple[str, str, str], str] = {}
    for pin in load_pins():
        for version in pin.served:
            key = (pin.group, version, pin.kind)
            assert key not in seen, f"{pin.path} and {seen[key]} both serve {key}"
            seen[key] = pin.path


def test_a_v2beta1_mpijob_gets_mpi_operators_crd_not_the_training_operators() -> None:
    pins = load_pins()
    (mpi,) = pins_for_kinds(pins, {("kubeflow.org", "v2beta1", "MPIJob")})
    assert (mpi.release, mpi.version, mpi.operator) == (
        "Kubeflow MPI Operator",
        "v0.8.0",
        "mpi-operator",
    )
    (v1,) = pins_for_kinds(pins, {("kubeflow.org", "v1", "MPIJob")})
    assert v1.path == "training-operator/kubeflow.org_mpijobs.yaml"
    assert pins_for_kinds(pins, {("kubeflow.org", "v9", "MPIJob")}) == []


def test_where_two_pins_serve_a_kind_the_clusters_operators_choose() -> None:
    text = """
[[release]]
dir = "a"
name = "A"
version = "v1"
operator = "training-operator"
url = "https://example.invalid/a/"
[[release.file]]
name = "x.yaml"
kind = "example.org/X"
served = ["v1"]
sha256 = "00"

[[release]]
dir = "b"
name = "B"
version = "v2"
operator = "mpi-operator"
url = "https://example.invalid/b/"
[[release.file]]
name = "x.yaml"
kind = "example.org/X"
served = ["v1"]
sha256 = "00"
"""
    pins = load_pins(text)
    want = {("example.org", "v1", "X")}
    assert [p.path for p in pins_for_kinds(pins, want)] == ["a/x.yaml"]
    assert [p.path for p in pins_for_kinds(pins, want, operators={"mpi-operator"})] == ["b/x.yaml"]


def test_the_repositorys_tree_fetches_mpi_operators_mpijob_and_check_passes(
    tmp_path: Path, crds: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The example tree has a v2beta1 MPIJob: the fetched CRDs must validate all of it."""
    from trainkit.cli import main

    repo = Path(__file__).resolve().parents[1]
    monkeypatch.chdir(repo)
    monkeypatch.delenv("TRAINKIT_CRDS", raising=False)
    dest = tmp_path / "fetched"
    code = main(["crds", "--fetch", str(dest), "--mirror", str(crds), "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    report = json.loads(out)
    mpi = next(n for n in report["needs"] if n["kind"] == "MPIJob")
    assert mpi["version"] == "v2beta1"
    assert mpi["found"] == "mpi-operator/kubeflow.org_mpijobs.yaml"
    assert mpi["pinned"]["release"] == "Kubeflow MPI Operator"
    assert not (dest / "training-operator" / "kubeflow.org_mpijobs.yaml").exists()
    assert all(n["found"] for n in report["needs"]), report
    capsys.readouterr()
    monkeypatch.chdir(repo)
    assert main(["crds"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if "MPIJob" in line)
    assert row.split() == [
        "kubeflow.org",
        "MPIJob",
        "v2beta1",
        "Kubeflow",
        "MPI",
        "Operator",
        "v0.8.0",
    ]


def test_fetched_files_are_readable_by_others(tmp_path: Path, crds: Path) -> None:
    import os
    import stat

    pins = pins_for_kinds(load_pins(), {("scheduling.volcano.sh", "v1beta1", "Queue")})
    old = os.umask(0o022)
    try:
        (done,) = fetch_crds(pins, tmp_path / "dest", mirror=str(crds))
    finally:
        os.umask(old)
    assert stat.S_IMODE(done.path.stat().st_mode) == 0o644


def test_a_failed_upstream_fetch_names_the_offline_routes(tmp_path: Path) -> None:
    pins = load_pins(
        """
[[release]]
dir = "x"
name = "X"
version = "v1"
url = "file:///nonexistent/crds/"

[[release.file]]
name = "x.yaml"
kind = "x.example.com/X"
served = ["v1"]
sha256 = "00"
"""
    )
    with pytest.raises(SetupError) as err:
        fetch_crds(pins, tmp_path / "dest")
    (problem,) = err.value.problems
    assert "offline, read the same files from a mirror (--mirror DIR_OR_URL, or " in (
        problem.message
    )
    assert "$TRAINKIT_CRDS_MIRROR) or validate against your clusters' CRDs (kubectl get crd " in (
        problem.message
    )


# --- which file serves a kind: a pinned file's pin says it ---------------------------------


def test_crds_fetch_names_the_file_serving_each_kind_without_reading_a_pinned_one(
    bare, bare_cli, crds, monkeypatch
):
    """The files it just verified are trainkit's pinned upstream files (SHA-256), whose pins
    list what each serves: the report reads none of them, and names what reading them does."""
    import trainkit.validate.crds as crd_set

    read: list[Path] = []
    parse = crd_set.parse_crd_file
    monkeypatch.setattr(
        crd_set, "parse_crd_file", lambda path, data: read.append(path) or parse(path, data)
    )
    run = bare_cli("crds", "--fetch", "crds", "--mirror", str(crds), "--format", "json")
    assert run.code == 0, run.err
    assert read == []
    monkeypatch.setattr(crd_set, "parse_crd_file", parse)
    fetched = load_crds(bare.root / "crds", no_cache=True)
    served = {}
    for need in json.loads(run.out)["needs"]:
        crd = fetched.lookup((need["group"], need["version"], need["kind"]))
        assert crd is not None
        served[need["kind"]] = crd.source.relative_to(bare.root / "crds").as_posix()
    assert {n["kind"]: n["found"] for n in json.loads(run.out)["needs"]} == served


def test_a_file_beside_the_pinned_ones_that_may_serve_a_kind_is_read(bare_cli, crds, tmp_path):
    """Another file naming the kind is read as check reads it: the first in path order serves
    it, and another schema for it beside the pinned one is refused."""
    for pin in pins_for_kinds(load_pins(), BARE_KEYS):
        (tmp_path / "crds" / pin.path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(crds / pin.path, tmp_path / "crds" / pin.path)
    queue = crds / "volcano/scheduling.volcano.sh_queues.yaml"
    copy = tmp_path / "crds/a/queues.yaml"  # sorts first
    copy.parent.mkdir()
    copy.write_bytes(queue.read_bytes() + b"# the same CRD, another file\n")
    run = bare_cli("crds", "--crds", str(tmp_path / "crds"), "--format", "json")
    assert run.code == 0, run.err
    found = {n["kind"]: n["found"] for n in json.loads(run.out)["needs"]}
    assert found["Queue"] == "a/queues.yaml"
    doc = yaml.load(queue.read_bytes(), Loader=yaml.CSafeLoader)
    for version in doc["spec"]["versions"]:
        version["schema"] = {
            "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        }
    copy.write_text(yaml.dump(doc, Dumper=yaml.CSafeDumper))
    run = bare_cli("crds", "--crds", str(tmp_path / "crds"))
    assert run.code == 1
    assert "scheduling.volcano.sh/v1beta1 Queue is defined here with another schema" in run.err


def test_check_reads_a_pinned_file_only_for_the_kinds_its_pin_says_it_serves(
    crds, tmp_path, monkeypatch
):
    """The CRD set of check and validate knows the pins: the Training Operator's MPIJob file
    (v1) names the group and kind of the MPI Operator's v2beta1 MPIJob, and was parsed (and
    compared) for it on every check; its pin says it serves v1 only."""
    import argparse

    import trainkit.validate.crds as crd_set
    from trainkit.cli.crd_input import load_crds as check_crds

    for rel in (
        "mpi-operator/kubeflow.org_mpijobs.yaml",
        "training-operator/kubeflow.org_mpijobs.yaml",
    ):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(crds / rel, tmp_path / rel)
    # No cache: an entry's index would tell the kinds of both files without their pins.
    monkeypatch.setenv("CI", "1")
    read: list[str] = []
    parse = crd_set.parse_crd_file
    monkeypatch.setattr(
        crd_set, "parse_crd_file",
        lambda path, data: read.append(path.relative_to(tmp_path).as_posix()) or parse(path, data),
    )  # fmt: skip
    args = argparse.Namespace(crds=str(tmp_path), started_in=str(tmp_path))
    found, _ = check_crds(args, None)
    assert found is not None
    crd = found.lookup(("kubeflow.org", "v2beta1", "MPIJob"))
    assert crd is not None and crd.source == tmp_path / "mpi-operator/kubeflow.org_mpijobs.yaml"
    assert read == ["mpi-operator/kubeflow.org_mpijobs.yaml"]
    assert found.lookup(("kubeflow.org", "v1", "MPIJob")) is not None  # its own kind: read
    assert read[1:] == ["training-operator/kubeflow.org_mpijobs.yaml"]
