"""The shared workspaces of conftest.py hold what they claim to hold."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import RepoCaches, Run, Workspace, cache_dir_of
from example_edits import edit
from test_caches import count_runs

RESNET = "jobs/vision/resnet50_ddp.py"


def test_a_copy_of_the_examples_runs_only_the_definition_a_test_edited(
    ws: Workspace, cli: Callable[..., Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    """As after an earlier synth on a developer's machine: the unchanged files' payloads
    come from the seeded cache (rebuilt through the models), the edited file runs."""
    edit(ws, RESNET, "procs_per_node=8", "procs_per_node=4")
    runs = count_runs(monkeypatch)
    run = cli("synth")
    assert run.code == 0, run.err
    assert [f for call in runs for group in call for f in group] == ["resnet50_ddp.py"]
    manifest = ws.out / "clusters/gpu-east/vision/pytorchjob-resnet50-ddp.yaml"
    assert 'nprocPerNode: "4"' in manifest.read_text(encoding="utf-8")


def test_a_seeded_cache_keys_imports_by_the_copy_s_own_path(tmp_path: Path) -> None:
    """A definition's imports are keyed by their real path, which names the repository:
    in the copy, an entry must watch the copy's files, never the original's."""
    entry = {"team": "a", "sha": "1", "payload": "{}"}
    deps = {"/src/repo/jobs/a/_private/helper.py": "2", "/src/repository/x.py": "3"}
    caches = RepoCaches(
        home=tmp_path / "home",
        root="/src/repo",
        definitions={"stamp": "s", "entries": {"jobs/a/j.py": {**entry, "deps": deps}}},
        yaml=b'{"stamp":"y","entries":{}}',
    )
    copy = tmp_path / "copy"
    copy.mkdir()
    caches.seed(copy)
    directory = cache_dir_of(tmp_path / "home", copy)
    stored = json.loads((directory / "definitions.json").read_bytes())
    assert stored["stamp"] == "s"
    assert stored["entries"]["jobs/a/j.py"] == {
        **entry,
        "deps": {
            f"{os.path.realpath(copy)}/jobs/a/_private/helper.py": "2",
            "/src/repository/x.py": "3",
        },
    }
    assert (directory / "yaml.json").read_bytes() == caches.yaml


def test_a_snapshot_of_generated_differs_on_any_change(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    ws.write("generated/a/x.yaml", "kind: A\n")
    ws.write("generated/b/c/y.yaml", "kind: B\n")
    (ws.out / "z.yaml").symlink_to("a/x.yaml")
    clean = ws.snapshot()
    assert clean == {"a/x.yaml": b"kind: A\n", "b/c/y.yaml": b"kind: B\n", "z.yaml": b"kind: A\n"}
    for change in (
        lambda: ws.write("generated/b/c/y.yaml", "kind: C\n"),  # one byte, same size
        lambda: ws.write("generated/b/new.yaml", ""),
        lambda: (ws.out / "b/c/y.yaml").unlink(),
    ):
        change()
        assert ws.snapshot() != clean
        ws.write("generated/b/c/y.yaml", "kind: B\n")
        (ws.out / "b/new.yaml").unlink(missing_ok=True)
        assert ws.snapshot() == clean
    assert Workspace(tmp_path / "none").snapshot() == {}
