"""A synth that reuses the last run's output for unchanged job files (``synth.delta``, issue
12) writes what a full synth writes and refuses what it refuses, with the same messages.

Each case edits a small tree and runs an incremental synth beside a full one on a copy
of the same tree, without caches; the two must agree byte for byte, or in every message.
Whether the last run's output was reused is read from ``Output.reused`` and from the
definition processes that ran: never from a clock.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from test_caches import count_runs
from trainkit import DefinitionError
from trainkit.cache_dir import repo_cache_dir
from trainkit.synth import synthesize

PLATFORM = """\
from trainkit import ArgoCD, Capacity, Cluster, Queue, Team

argocd = ArgoCD(repo_url="https://git.example.com/jobs.git")
east = Cluster(name="east", server="https://east.example.com", gpus_per_node=8)
west = Cluster(name="west", server="https://west.example.com", gpus_per_node=8)
q = Queue(name="q", capability=Capacity(gpu={capability}))
a = Team(name="a", queues=["q"], max_gpus=10)
b = Team(name="b", queues=["q"])
"""

JOB = """\
from trainkit import {kind}, Resources, Script

job = {kind}(
    name={name!r},{run}
    image="registry.example.com/pytorch:2",
    script=Script.file("scripts/{script}.py"),
    args={args!r},
    nodes=1,
    resources=Resources(cpu=2, memory="8Gi", gpu={gpu}),
    clusters=["east", "west"],
)
"""

TEAMS = {"a": ["a0", "a1", "a2"], "b": ["b0", "b1"]}


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def job(
    root: Path,
    team: str,
    name: str,
    *,
    args: str = "1",
    gpu: int = 2,
    file: str = "",
    kind: str = "PyTorchJob",
    run: int | None = None,
    script: str = "",
) -> None:
    script = script or name
    text = JOB.format(
        kind=kind,
        name=name,
        run="" if run is None else f"\n    run={run},",
        script=script,
        args=["--epochs", args],
        gpu=gpu,
    )
    write(root, f"jobs/{team}/{file or name}.py", text)
    if not (root / f"jobs/{team}/scripts/{script}.py").exists():
        write(root, f"jobs/{team}/scripts/{script}.py", f"print({script!r})\n")


def make_tree(root: Path) -> None:
    write(root, "jobs/platform/platform.py", PLATFORM.format(capability=64))
    for team, names in TEAMS.items():
        for name in names:
            job(root, team, name)


def outcome(root: Path, *, incremental: bool) -> tuple[str, object, int]:
    """("ok", every output file) or ("refused", every message); and the files reused."""
    try:
        out = synthesize(
            root / "jobs", root / "generated", use_cache=incremental, incremental=incremental
        )
    except DefinitionError as e:
        return "refused", sorted(str(p) for p in e.problems), 0
    files = {
        p.relative_to(root / "generated").as_posix(): p.read_bytes()
        for p in sorted((root / "generated").rglob("*"))
        if p.is_file()
    }
    assert files == out.files
    return "ok", files, out.reused


def full(root: Path, scratch: Path) -> tuple[str, object]:
    """The verdict of a full synth without caches of the same jobs/, in ``scratch``."""
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.copytree(root / "jobs", scratch / "jobs")
    kind, data, _ = outcome(scratch, incremental=False)
    return kind, data


class Base:
    """``make_tree`` synthesized once (the record the next runs reuse), kept aside with the
    cache directory that synth left (record, definitions, YAML), and put back at the same
    path for each test or example: a record holds its repository's absolute paths, so each
    starts from exactly what a full synth of the tree leaves, without running it again."""

    def __init__(self, root: Path, kept: Path) -> None:
        self.root = root
        self.kept = kept
        self.cache = repo_cache_dir(root)
        make_tree(root)
        assert outcome(root, incremental=True)[0] == "ok"
        shutil.copytree(root, kept / "repo", symlinks=True)
        shutil.copytree(self.cache, kept / "cache", symlinks=True)

    def restore(self) -> Path:
        for path, kept in ((self.root, "repo"), (self.cache, "cache")):
            shutil.rmtree(path, ignore_errors=True)
            shutil.copytree(self.kept / kept, path, symlinks=True)
        return self.root


@pytest.fixture(scope="module")
def _base(tmp_path_factory: pytest.TempPathFactory, _session_cache: Path) -> Base:
    top = tmp_path_factory.mktemp("synth-delta")
    with pytest.MonkeyPatch.context() as mp:
        # As a test's own commands run (_own_cache, _not_in_ci: set after this fixture).
        mp.setenv("TRAINKIT_CACHE_DIR", str(_session_cache))
        mp.delenv("CI", raising=False)
        mp.delenv("RUNNER_TEMP", raising=False)
        return Base(top / "repo", top / "kept")


@pytest.fixture
def tree(_base: Base) -> Path:
    """``make_tree`` as its first synth left it (``Base``)."""
    return _base.restore()


def edit(root: Path, what: str, team: str, i: int) -> None:
    """One edit a pull request may make."""
    names = TEAMS[team]
    name = names[i % len(names)]
    if what == "args":
        job(root, team, name, args=str(10 + i))
    elif what == "gpu":
        job(root, team, name, gpu=8)  # team a: 8 + 2 + 2 exceeds its 10 on each cluster
    elif what == "script":
        write(root, f"jobs/{team}/scripts/{name}.py", f"print({name!r}, {i})\n")
    elif what == "add":
        job(root, team, f"{team}-new{i}")
    elif what == "delete":
        (root / f"jobs/{team}/{name}.py").unlink(missing_ok=True)
    elif what == "clash":
        other = names[(i + 1) % len(names)]
        job(root, team, other, file=name)  # two files, one job name in one namespace
    elif what == "platform":
        write(root, "jobs/platform/platform.py", PLATFORM.format(capability=2 + 2 * i))
    elif what == "helper":
        write(root, f"jobs/{team}/_helper.py", f"VALUE = {i}\n")
    else:
        raise AssertionError(what)


EDITS = st.tuples(
    st.sampled_from(["args", "gpu", "script", "add", "delete", "clash", "platform", "helper"]),
    st.sampled_from(sorted(TEAMS)),
    st.integers(0, 3),
)


@pytest.mark.long
@settings(
    max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(edits=st.lists(EDITS, min_size=1, max_size=3))
@example(edits=[("args", "a", 0), ("gpu", "a", 1), ("args", "a", 1)])
@example(edits=[("clash", "b", 0), ("delete", "b", 1), ("add", "a", 2)])
@example(edits=[("platform", "a", 0), ("script", "b", 1), ("args", "a", 2)])
def test_an_incremental_synth_agrees_with_a_full_one(
    _base: Base, tmp_path: Path, edits: list[tuple[str, str, int]]
) -> None:
    root = _base.restore()
    for what, team, i in edits:
        edit(root, what, team, i)
        kind, data, _ = outcome(root, incremental=True)
        assert (kind, data) == full(root, tmp_path / "full"), (what, team, i)


@pytest.mark.parametrize("what", ["args", "script", "add", "delete"])
def test_a_job_file_edit_reruns_that_file_alone_and_keeps_the_rest(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, what: str
) -> None:
    edit(tree, what, "a", 1)
    runs = count_runs(monkeypatch)
    kind, files, reused = outcome(tree, incremental=True)
    assert kind == "ok" and reused > 0
    # Only the changed file runs (the platform's payload is cached; a script is read by the
    # loader, so a file whose script alone changed does not run either).
    ran = sorted(f for call in runs for group in call for f in group)
    assert ran == {"args": ["a1.py"], "add": ["a-new1.py"]}.get(what, [])
    assert (kind, files) == full(tree, tmp_path / "full")


@pytest.mark.parametrize(
    ("what", "team"),
    [("platform", "a"), ("helper", "a")],
)
def test_a_change_outside_job_files_runs_the_full_synth(
    tree: Path, tmp_path: Path, what: str, team: str
) -> None:
    edit(tree, what, team, 1)
    kind, files, reused = outcome(tree, incremental=True)
    assert reused == 0
    assert (kind, files) == full(tree, tmp_path / "full")


@pytest.mark.parametrize(
    ("what", "expected"),
    [
        ("clash", "another PyTorchJob named 'a2'"),
        ("gpu", "Team.max_gpus"),
    ],
)
def test_a_cross_job_rule_broken_by_one_file_is_refused_as_by_a_full_synth(
    tree: Path, tmp_path: Path, what: str, expected: str
) -> None:
    before = {p: p.read_bytes() for p in (tree / "generated").rglob("*") if p.is_file()}
    edit(tree, what, "a", 1)
    kind, messages, _ = outcome(tree, incremental=True)
    assert kind == "refused" and any(expected in m for m in messages)  # type: ignore[attr-defined]
    assert (kind, messages) == full(tree, tmp_path / "full")
    after = {p: p.read_bytes() for p in (tree / "generated").rglob("*") if p.is_file()}
    assert after == before  # nothing written


def test_a_name_only_a_skipped_job_holds_is_refused_as_by_a_full_synth(
    tree: Path, tmp_path: Path
) -> None:
    """A TFJob of another script takes PyTorchJob a2's name: it writes none of the files
    a2.py wrote (tfjob-a2, its own ConfigMap), so the recorded names (``Skipped.taken``)
    alone see the clash."""
    job(tree, "a", "a2", file="a1", kind="TFJob", script="a1")
    kind, messages, _ = outcome(tree, incremental=True)
    assert kind == "refused" and any("own Volcano PodGroup 'a2'" in m for m in messages)  # type: ignore[attr-defined]
    assert (kind, messages) == full(tree, tmp_path / "full")


def shared_configmaps(files: object) -> dict[str, bytes]:
    """The ConfigMaps of job a2's script, which every run of a2 shipping it shares."""
    assert isinstance(files, dict)
    return {p: data for p, data in files.items() if "/configmap-a2-script-" in p}


def test_an_output_a_skipped_file_wrote_written_again_runs_the_full_synth(
    tmp_path: Path,
) -> None:
    """Run 1 of a2 (a2.py) and a2 without a run (a1.py, now) ship one script: one ConfigMap,
    whose header names the file of the job last in plan order (namespace, kind, object
    name), a2-r1's. No name is shared, so the recorded output paths (``Skipped.kept``)
    alone send this run to the full synth."""
    root = tmp_path / "repo"
    make_tree(root)
    job(root, "a", "a2", run=1)
    assert outcome(root, incremental=True)[0] == "ok"
    job(root, "a", "a2", file="a1")
    kind, files, reused = outcome(root, incremental=True)
    shared = shared_configmaps(files)
    assert len(shared) == 2 and all(b"from jobs/a/a2.py." in data for data in shared.values())
    assert (kind, files) == full(root, tmp_path / "full")
    assert reused == 0


def test_an_output_a_changed_file_shared_with_a_skipped_one_is_not_reused(
    tmp_path: Path,
) -> None:
    """a1.py's run 1 of a2 wrote the ConfigMap it shares with a2.py (a2-r1 sorts last);
    with a1.py gone, the file must name a2.py, as in a full synth."""
    root = tmp_path / "repo"
    make_tree(root)
    job(root, "a", "a2", run=1, file="a1")
    assert outcome(root, incremental=True)[0] == "ok"
    (root / "jobs/a/a1.py").unlink()
    kind, files, _ = outcome(root, incremental=True)
    shared = shared_configmaps(files)
    assert len(shared) == 2 and all(b"from jobs/a/a2.py." in data for data in shared.values())
    assert (kind, files) == full(root, tmp_path / "full")


def test_an_output_file_edited_by_hand_is_not_reused(tree: Path, tmp_path: Path) -> None:
    edit(tree, "args", "b", 0)
    kept = tree / "generated/clusters/east/a/pytorchjob-a0.yaml"
    kept.write_bytes(kept.read_bytes() + b"# edited\n")
    kind, files, reused = outcome(tree, incremental=True)
    assert kind == "ok" and reused == 0
    assert (kind, files) == full(tree, tmp_path / "full")


def test_a_job_file_importing_a_changed_definition_file_is_loaded_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "repo"
    make_tree(root)
    monkeypatch.syspath_prepend(str(root))
    write(root, "jobs/a/shared.py", "ARGS = ['--epochs', '1']\n")
    importing = (root / "jobs/a/a0.py").read_text(encoding="utf-8")
    importing = importing.replace("args=['--epochs', '1']", "args=ARGS")
    write(root, "jobs/a/a0.py", "from jobs.a.shared import ARGS\n" + importing)
    assert outcome(root, incremental=True)[0] == "ok"
    write(root, "jobs/a/shared.py", "ARGS = ['--epochs', '7']\n")
    kind, files, reused = outcome(root, incremental=True)
    assert kind == "ok" and reused == 0  # who imports a file is known for the full run only
    assert b'- "7"' in files["clusters/east/a/pytorchjob-a0.yaml"]  # type: ignore[index]
    assert (kind, files) == full(root, tmp_path / "full")
