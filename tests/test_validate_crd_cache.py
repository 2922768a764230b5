"""The CRD cache: keyed by content, data only, outside the work tree, never trusted blindly."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import trainkit.validate.crd_cache as crd_cache
import trainkit.validate.crds as crds_module
from conftest import crds_dir as shared_crds
from trainkit.cache_dir import cache_dir, cache_enabled
from trainkit.errors import SetupError
from trainkit.validate import load_crds
from validate_fixtures import validate_doc

QUEUE: dict[str, Any] = {
    "apiVersion": "scheduling.volcano.sh/v1beta1",
    "kind": "Queue",
    "metadata": {"name": "q"},
    "spec": {"weight": 0, "reclaimable": "yes"},
}
EXPECTED = [
    ("spec.reclaimable", 'expected boolean, got string "yes"'),
    ("spec.weight", "must be >= 1, got 0"),
]


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A CRD directory of two small files and an empty cache directory; not in CI."""
    crds = tmp_path / "crds"
    crds.mkdir()
    for name in ("scheduling.volcano.sh_queues.yaml", "scheduling.volcano.sh_podgroups.yaml"):
        shutil.copy(shared_crds() / "volcano" / name, crds / name)
    cache = tmp_path / "cache"
    monkeypatch.setenv("TRAINKIT_CACHE_DIR", str(cache))
    monkeypatch.delenv("CI", raising=False)
    return crds, cache


def verdict(crds: Path, **kwargs: bool) -> list[tuple[str, str]]:
    return sorted((p.field, p.message) for p in validate_doc(load_crds(crds, **kwargs), QUEUE, "q"))


def entries(cache: Path) -> list[str]:
    return sorted(p.name for p in (cache / f"crds-v{crd_cache.FORMAT}").glob("*"))


def refuse_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    def parse(path: Path, data: bytes) -> list[dict[str, Any]]:
        raise AssertionError(f"{path} was parsed")

    monkeypatch.setattr(crds_module, "parse_crd_file", parse)


def test_cache_directory_follows_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TRAINKIT_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert cache_dir() == tmp_path / "home/.cache/trainkit"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative")  # invalid per the XDG spec: ignored
    assert cache_dir() == tmp_path / "home/.cache/trainkit"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg/trainkit"
    monkeypatch.setenv("TRAINKIT_CACHE_DIR", str(tmp_path / "tk"))
    assert cache_dir() == tmp_path / "tk"
    monkeypatch.setenv("CI", "")
    assert cache_enabled()
    assert not cache_enabled(no_cache=True)
    monkeypatch.setenv("CI", "true")
    assert not cache_enabled()


def test_only_the_files_used_are_parsed_and_cached(
    env: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    crds, cache = env
    assert verdict(crds) == EXPECTED
    # queues.yaml was parsed and cached; podgroups.yaml was never parsed (only hashed, and
    # its bytes searched for the Queue kind, which they do not name: absent.json says so).
    names = entries(cache)
    assert "stat.json" in names and "absent.json" in names and len(names) == 4
    directory = cache / f"crds-v{crd_cache.FORMAT}"
    (entry,) = [n for n in names if n.endswith(".kinds.json")]
    kinds = json.loads((directory / entry).read_text())["kinds"]
    assert kinds == [["scheduling.volcano.sh", "v1beta1", "Queue"]]
    absent = json.loads((directory / "absent.json").read_text())["files"]
    assert list(absent.values()) == [[["scheduling.volcano.sh", "Queue"]]]
    # Warm: the same verdict without parsing any YAML, nor hashing an unchanged file, nor
    # searching a file for a kind it was found not to name.
    refuse_parsing(monkeypatch)
    monkeypatch.setattr(crd_cache.hashlib, "sha256", None)

    def searched(data: bytes, group: str, kind: str) -> bool:
        raise AssertionError(f"searched for {group} {kind} again")

    monkeypatch.setattr(crds_module, "may_define", searched)
    assert verdict(crds) == EXPECTED


def test_a_file_found_not_to_name_a_kind_is_searched_again_once_edited(
    env: tuple[Path, Path],
) -> None:
    """What absent.json remembers is keyed by the file's content: an edit that makes the file
    define the kind is read (and a conflict with the other file's schema found)."""
    crds, _ = env
    assert verdict(crds) == EXPECTED
    podgroups = crds / "scheduling.volcano.sh_podgroups.yaml"
    queues = (crds / "scheduling.volcano.sh_queues.yaml").read_text()
    podgroups.write_text(queues.replace("minimum: 1", "minimum: 0"))
    with pytest.raises(SetupError, match="is defined here with another schema than in"):
        verdict(crds)


def test_the_cache_holds_data_without_descriptions(env: tuple[Path, Path]) -> None:
    crds, cache = env
    verdict(crds)
    (entry,) = [n for n in entries(cache) if n.endswith(".json") and len(n) == 64 + 5]
    text = (cache / f"crds-v{crd_cache.FORMAT}" / entry).read_text()
    assert '"description"' not in text
    assert json.loads(text)["documents"][0]["spec"]["kind"] == "Queue"


def test_an_edited_file_is_parsed_again(env: tuple[Path, Path]) -> None:
    crds, cache = env
    verdict(crds)
    queues = crds / "scheduling.volcano.sh_queues.yaml"
    queues.write_text(queues.read_text().replace("minimum: 1", "minimum: 0"))
    assert verdict(crds) == EXPECTED[:1]
    assert len([n for n in entries(cache) if n.endswith(".kinds.json")]) == 2


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text[: len(text) // 2],  # truncated
        lambda text: "\0\0\0",  # garbage
        lambda text: json.dumps({**json.loads(text), "format": 0}),  # another format
        lambda text: json.dumps({**json.loads(text), "documents": [{"spec": 1}]}),  # wrong shape
        lambda text: json.dumps({**json.loads(text), "documents": []}),  # disagrees with index
        lambda text: json.dumps({**json.loads(text), "sha256": "0" * 64}),  # another file's
    ],
    ids=["truncated", "garbage", "format", "shape", "index", "sha"],
)
def test_a_damaged_entry_is_parsed_again_never_trusted(env: tuple[Path, Path], damage: Any) -> None:
    crds, cache = env
    verdict(crds)
    directory = cache / f"crds-v{crd_cache.FORMAT}"
    (entry,) = [directory / n for n in entries(cache) if len(n) == 64 + 5]
    entry.write_text(damage(entry.read_text()))
    assert verdict(crds) == EXPECTED
    # ... and the entry is whole again.
    assert json.loads(entry.read_text())["documents"][0]["spec"]["kind"] == "Queue"


def test_a_damaged_index_is_ignored(env: tuple[Path, Path]) -> None:
    crds, cache = env
    verdict(crds)
    directory = cache / f"crds-v{crd_cache.FORMAT}"
    for name in entries(cache):
        if name.endswith(".kinds.json") or name == "stat.json":
            (directory / name).write_text('{"format": 1, "kinds": [["x"]], "files": 3}')
    assert verdict(crds) == EXPECTED


@pytest.mark.parametrize("how", ["CI", "no_cache"])
def test_ci_and_no_cache_neither_read_nor_write(
    env: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    crds, cache = env
    verdict(crds)
    # Poison the entry: a schema that accepts anything. A run that read it would pass the Queue.
    directory = cache / f"crds-v{crd_cache.FORMAT}"
    (entry,) = [directory / n for n in entries(cache) if len(n) == 64 + 5]
    data = json.loads(entry.read_text())
    data["documents"][0]["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
    }
    entry.write_text(json.dumps(data))
    assert verdict(crds) == []  # the poisoned entry is what a warm run reads
    before = {p.name: p.stat().st_mtime_ns for p in directory.iterdir()}
    if how == "CI":
        monkeypatch.setenv("CI", "true")
        assert verdict(crds) == EXPECTED
    else:
        assert verdict(crds, no_cache=True) == EXPECTED
    assert {p.name: p.stat().st_mtime_ns for p in directory.iterdir()} == before


def test_an_unwritable_cache_costs_speed_not_results(
    env: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    crds, cache = env
    cache.write_text("a file where the directory should be")
    assert verdict(crds) == EXPECTED


def test_entries_are_compact_json_of_what_they_hold(env: tuple[Path, Path]) -> None:
    # Written as one string (the C encoder): the same bytes json.dump wrote, key order and
    # separators included, so entries written before the change read as before.
    crds, cache = env
    verdict(crds)
    for name in entries(cache):
        raw = (cache / f"crds-v{crd_cache.FORMAT}" / name).read_text(encoding="utf-8")
        assert raw == json.dumps(json.loads(raw), separators=(",", ":")), name
