"""The suite's kustomize build cache (build_cache.py) keys a build by every input it may read."""

from __future__ import annotations

from pathlib import Path

from build_cache import build_key
from trainkit.kubectl import find_kubectl

KUBECTL = find_kubectl() or "/usr/bin/kubectl"


def _tree(root: Path, value: str = "a") -> Path:
    (root / "kustomize").mkdir(parents=True)
    (root / "kustomize/kustomization.yaml").write_text("kind: Component\n")
    (root / "kustomize/labels.yaml").write_text(f"x: {value}\n")
    (root / "app").mkdir()
    (root / "app/kustomization.yaml").write_text(
        "resources: [cm.yaml]\ncomponents: [../kustomize]\n"
    )
    (root / "app/cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
    return root / "app"


def _key(directory: Path) -> str:
    found = build_key(directory, KUBECTL)
    assert found is not None
    return found[0]


def test_the_same_inputs_elsewhere_share_a_key_and_a_changed_component_does_not(
    tmp_path: Path,
) -> None:
    one, two = _tree(tmp_path / "one"), _tree(tmp_path / "two")
    assert _key(one) == _key(two)
    (tmp_path / "two/kustomize/labels.yaml").write_text("x: b\n")  # outside the directory
    assert _key(one) != _key(two)
    (tmp_path / "two/kustomize/labels.yaml").write_text("x: a\n")
    (two / "cm.yaml").rename(two / "cm2.yaml")  # a name is an input too
    assert _key(one) != _key(two)


def test_a_symlinked_directory_counts_by_its_target_and_origin_annotations_are_not_cached(
    tmp_path: Path,
) -> None:
    one = _tree(tmp_path / "one")
    for name, value in (("x", "a"), ("y", "b")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "f.yaml").write_text(f"v: {value}\n")
    (one / "linked").symlink_to(tmp_path / "x")
    before = _key(one)
    (tmp_path / "x/f.yaml").write_text("v: c\n")
    assert _key(one) != before
    (one / "kustomization.yaml").write_text(
        "resources: [cm.yaml]\nbuildMetadata: [originAnnotations]\n"
    )
    assert build_key(one, KUBECTL) is None
