"""Which CRD files count: one schema per kind and version, and files inside the repository only
when the platform lists them by checksum (issue 23: the planted-CRD attack)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
import yaml

from trainkit.errors import SetupError
from trainkit.validate import TreeCrds, load_crds, validate_text

REPO = Path(__file__).resolve().parents[1]
PYTORCHJOBS = "training-operator/kubeflow.org_pytorchjobs.yaml"
MANIFEST = "generated/clusters/gpu-east/vision/pytorchjob-resnet50-ddp.yaml"
POLICY = "jobs/platform/policy.py"


def looser(real: Path) -> str:
    """The real CRD with every served version's schema replaced by 'anything goes'."""
    # libyaml's safe loader: the same document, a tenth of the pure-Python loader's CPU.
    doc = yaml.load(real.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)
    for v in doc["spec"]["versions"]:
        v["schema"] = {
            "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        }
    return yaml.safe_dump(doc)


def with_unknown_field() -> str:
    """A generated PyTorchJob with a field its CRD does not have."""
    (doc,) = yaml.safe_load_all((REPO / MANIFEST).read_text(encoding="utf-8"))
    doc["spec"]["smuggled"] = {"hostPID": True}
    return yaml.safe_dump(doc)


def test_a_planted_looser_crd_beside_the_real_one_is_an_error(crds: Path, tmp_path: Path) -> None:
    # The attack: a pull request adds a copy of a CRD that accepts anything, named to sort
    # before the real one; validation took the first file that serves the kind.
    shutil.copyfile(crds / PYTORCHJOBS, tmp_path / "pytorchjobs.yaml")
    (tmp_path / "aaa-planted.yaml").write_text(looser(crds / PYTORCHJOBS), encoding="utf-8")
    crdset = load_crds(tmp_path, no_cache=True)
    with pytest.raises(SetupError) as e:
        validate_text(with_unknown_field(), "pytorchjob.yaml", crdset)
    (p,) = e.value.problems
    assert p.file == str(tmp_path / "pytorchjobs.yaml")
    assert p.message == (
        f"kubeflow.org/v1 PyTorchJob is defined here with another schema than in "
        f"{tmp_path / 'aaa-planted.yaml'}; a CRD set may hold one schema per kind and version "
        "(validation would take whichever file sorts first): keep the cluster's CRD and "
        "remove the other file"
    )
    # Alone, the real CRD refuses the field.
    (tmp_path / "aaa-planted.yaml").unlink()
    problems = validate_text(with_unknown_field(), "pytorchjob.yaml", load_crds(tmp_path))
    assert any(p.field == "spec.smuggled" for p in problems), problems


def test_the_same_crd_in_two_files_is_one_schema(crds: Path, tmp_path: Path) -> None:
    # Two clusters' `kubectl get crd -o yaml` dumps hold the same CRD: no conflict.
    real = (crds / PYTORCHJOBS).read_text(encoding="utf-8")
    (tmp_path / "gpu-east.yaml").write_text(real, encoding="utf-8")
    described = yaml.load(real, Loader=yaml.CSafeLoader)
    described["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["description"] = "dumped"
    dumped = yaml.dump(described, Dumper=yaml.CSafeDumper)
    (tmp_path / "rocm-west.yaml").write_text(dumped, encoding="utf-8")
    problems = validate_text(with_unknown_field(), "pytorchjob.yaml", load_crds(tmp_path))
    assert any(p.field == "spec.smuggled" for p in problems), problems


def _tree(root: Path, listed: dict[str, str], pinned: frozenset[str] = frozenset()) -> TreeCrds:
    return TreeCrds(root, listed, "Policy.crd_checksums in jobs/platform/policy.py", pinned)


def test_a_crd_file_in_the_work_tree_counts_only_when_listed(crds: Path, tmp_path: Path) -> None:
    crd_dir = tmp_path / "crds"
    crd_dir.mkdir()
    real = (crds / PYTORCHJOBS).read_bytes()
    (crd_dir / "gpu-east.yaml").write_bytes(real + b"# dumped\n")
    digest = hashlib.sha256(real + b"# dumped\n").hexdigest()
    with pytest.raises(SetupError) as e:
        load_crds(crd_dir, tree=_tree(tmp_path, {}))
    (p,) = e.value.problems
    assert p.file == "crds/gpu-east.yaml"
    assert p.message == (
        "a CRD file inside the repository counts only when the platform lists it by SHA-256 "
        "(Policy.crd_checksums in jobs/platform/policy.py), and it is not listed: a pull "
        "request could plant a looser CRD here. Keep CRDs outside the work tree (trainkit crds "
        "--fetch), or have the platform team list the file with "
        f'"crds/gpu-east.yaml": "{digest}" after reviewing it'
    )
    load_crds(crd_dir, tree=_tree(tmp_path, {"crds/gpu-east.yaml": digest}))
    # Changed after it was listed: named, with both checksums.
    (crd_dir / "gpu-east.yaml").write_text(looser(crds / PYTORCHJOBS), encoding="utf-8")
    with pytest.raises(SetupError) as e:
        load_crds(crd_dir, tree=_tree(tmp_path, {"crds/gpu-east.yaml": digest}))
    (p,) = e.value.problems
    assert p.file == "crds/gpu-east.yaml"
    assert f", not the {digest} listed for it: a pull request could plant" in p.message
    # A file outside the work tree is not the repository's to list.
    load_crds(crds / PYTORCHJOBS, tree=_tree(tmp_path, {}))
    # trainkit's pinned upstream bytes need no entry; a symlink into the tree is in the tree.
    (crd_dir / "gpu-east.yaml").write_bytes(real)
    pinned = frozenset({hashlib.sha256(real).hexdigest()})
    load_crds(crd_dir, tree=_tree(tmp_path, {}, pinned))
    outside = tmp_path.parent / f"{tmp_path.name}-link"
    outside.symlink_to(crd_dir)
    with pytest.raises(SetupError):
        load_crds(outside, tree=_tree(tmp_path, {}))


def test_validate_in_a_repository_refuses_an_unlisted_crd_file(synthesized, cli, crds) -> None:
    ws = synthesized
    real = (crds / PYTORCHJOBS).read_bytes()
    ws.write("crds/pytorchjobs.yaml", real.decode())  # the pinned upstream file: counts
    run = cli("validate", "--crds", "crds", MANIFEST)
    assert run.code == 0, run.err
    planted = looser(crds / PYTORCHJOBS)
    ws.write("crds/aaa.yaml", planted)
    run = cli("validate", "--crds", "crds", MANIFEST)
    assert run.code == 1
    assert "crds/aaa.yaml: a CRD file inside the repository counts only when the platform " in (
        run.err
    )
    assert f"Policy.crd_checksums in {POLICY}), and it is not listed" in run.err
    # Listed by the platform (reviewed, or not): the two schemas still conflict.
    digest = hashlib.sha256(planted.encode()).hexdigest()
    policy = ws.root / POLICY
    text = policy.read_text(encoding="utf-8")
    policy.write_text(
        text.replace(
            "    max_gpus_per_job=64,\n",
            f'    max_gpus_per_job=64,\n    crd_checksums={{"crds/aaa.yaml": "{digest}"}},\n',
        ),
        encoding="utf-8",
    )
    run = cli("validate", "--crds", "crds", MANIFEST)
    assert run.code == 1
    assert "kubeflow.org/v1 PyTorchJob is defined here with another schema than in" in run.err


def test_check_refuses_an_unlisted_crd_file_in_the_work_tree(synthesized, cli, crds, monkeypatch):
    ws = synthesized
    ws.write("crds/aaa.yaml", looser(crds / PYTORCHJOBS))
    monkeypatch.setenv("TRAINKIT_CRDS", str(ws.root / "crds"))
    run = cli("check")
    assert run.code == 1, run.err
    assert "crds/aaa.yaml: a CRD file inside the repository counts only when the platform " in (
        run.err
    )
