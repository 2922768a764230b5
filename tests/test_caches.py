"""Caches are never a way around the gate (issue 10), and a run with nothing to do does
nothing (issue 12).

What is checked here is behaviour: which files a run reads, which definitions it runs
(the definition processes are counted), what it writes. Never how long anything takes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

import pytest

from conftest import PLATFORM, Run, Workspace
from run_directory import package_watch
from trainkit import DefinitionError, runcache
from trainkit import synth as synth_mod
from trainkit.cache_dir import cache_dir, cache_enabled, repo_cache_dir, tracked_by_git
from trainkit.load import LoadOptions, load_jobs, server
from trainkit.resolve import build_plan
from trainkit.runcache import code_stamp, source_files, stamp_of
from trainkit.serialize import _key
from trainkit.synth import render_groups, synthesize

SECOND = """\
from trainkit import PyTorchJob, Resources

job = PyTorchJob(
    name="second",
    image="registry.example.com/pytorch:2",
    command=["python", "x.py"],
    resources=Resources(cpu=1, memory="1Gi"),
    clusters=["east"],
)
"""


@pytest.fixture(autouse=True)
def hermetic_git(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """git as on a fresh machine: no user config, no repository above tmp_path."""
    for name in list(os.environ):
        if name.startswith("GIT_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    for who in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{who}_NAME", "Test")
        monkeypatch.setenv(f"GIT_{who}_EMAIL", "test@example.com")


@pytest.fixture
def own_cache(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache directory of this test alone, outside the workspace."""
    path = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("TRAINKIT_CACHE_DIR", str(path))
    return path


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def commit_all(repo: Path) -> None:
    if not (repo / ".git").exists():
        git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", "c")


def count_runs(monkeypatch: pytest.MonkeyPatch) -> list[list[list[str]]]:
    """Each call of the definition server: its processes, each the files it runs."""
    calls: list[list[list[str]]] = []
    real = server.run

    def spy(groups: list[list[tuple[int, str]]], limits: server.Limits, **where: str):  # type: ignore[no-untyped-def]
        calls.append([[Path(p).name for _, p in g] for g in groups])
        return real(groups, limits, **where)

    monkeypatch.setattr(server, "run", spy)
    return calls


def cache_files(ws: Workspace) -> dict[str, bytes]:
    top = repo_cache_dir(ws.root)
    return {p.relative_to(top).as_posix(): p.read_bytes() for p in top.rglob("*") if p.is_file()}


def poison_definitions(ws: Workspace) -> None:
    """Change the image every stored payload names: valid for the models, so only not
    reading the entry keeps it out of the output."""
    path = repo_cache_dir(ws.root) / "definitions.json"
    text = path.read_text(encoding="utf-8")
    assert "registry.example.com/pytorch:2" in text
    path.write_text(text.replace("pytorch:2", "pytorch:666"), encoding="utf-8")


def outputs(ws: Workspace) -> bytes:
    return b"".join(ws.snapshot().values())


# --- Part A: where caches live, and when they are not read ---


def test_caches_live_outside_the_work_tree_keyed_by_the_repository_path(
    bare: Workspace, own_cache: Path
) -> None:
    synthesize(bare.jobs, bare.out)
    assert sorted(p.name for p in bare.root.iterdir()) == ["generated", "jobs"]
    (top,) = (own_cache / "repos").iterdir()
    assert top == repo_cache_dir(bare.root)
    assert top.name.startswith(f"{bare.root.name}-")
    stored = cache_files(bare)
    assert sorted(p.split("/")[0] for p in stored) == ["definitions.json", "runs", "yaml.json"]
    for data in stored.values():  # data only
        assert isinstance(json.loads(data), dict)


def test_the_cache_directory_follows_xdg_then_home(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("TRAINKIT_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "trainkit"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/is/invalid")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "trainkit"
    # Two checkouts of one name never share entries.
    assert repo_cache_dir(tmp_path / "a" / "repo") != repo_cache_dir(tmp_path / "b" / "repo")


def test_a_committed_poisoned_yaml_cache_changes_nothing(
    bare: Workspace, own_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The old cache location, .trainkit/yaml-cache.json, committed by a pull request with
    a privileged pod for every object, in the old and the current format."""
    clean = synthesize(bare.jobs, bare.out, check=True, use_cache=False).files
    plan = build_plan(load_jobs(bare.jobs, bare.root).definitions)
    keys = [_key(r.body) for _, items in render_groups(plan) for r in items if not r.plain]
    evil = "apiVersion: v1\nkind: Pod\nspec:\n  hostPID: true\n"
    for name, stamp in (("yaml-cache.json", "2/cdk8s-"), ("yaml.json", "3/cdk8s-")):
        entries = dict.fromkeys(keys, evil)
        bare.write(
            f".trainkit/{name}", json.dumps({"stamp": stamp + version("cdk8s"), "entries": entries})
        )
    commit_all(bare.root)
    out = synthesize(bare.jobs, bare.out, against="disk")
    assert out.files == clean
    assert b"hostPID" not in outputs(bare)


def test_a_cache_directory_that_git_tracks_is_never_read_nor_written(
    bare: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    inside = bare.root / "cache"
    monkeypatch.setenv("TRAINKIT_CACHE_DIR", str(inside))
    git(bare.root, "init", "-q", "-b", "main")
    synthesize(bare.jobs, bare.out)  # untracked yet: used like any cache
    assert not tracked_by_git(inside) and cache_enabled()
    poison_definitions(bare)
    commit_all(bare.root)  # a pull request commits the entries
    assert tracked_by_git(inside) and not cache_enabled()
    before = cache_files(bare)
    runs = count_runs(monkeypatch)
    synthesize(bare.jobs, bare.out, against="disk")
    assert b"pytorch:666" not in outputs(bare)
    assert sorted(f for group in runs[0] for f in group) == ["ddp.py", "platform.py"]
    assert cache_files(bare) == before


@pytest.mark.parametrize("how", ["CI", "--no-cache"])
def test_ci_and_no_cache_read_and_write_no_cache(
    how: str,
    bare: Workspace,
    bare_cli: Callable[..., Run],
    own_cache: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert bare_cli("synth").code == 0
    poison_definitions(bare)
    before = cache_files(bare)
    runs = count_runs(monkeypatch)
    args = ["synth", "--against", "disk"]
    if how == "CI":
        monkeypatch.setenv("CI", "1")
    else:
        args.append("--no-cache")
    result = bare_cli(*args)
    assert result.code == 0, result.err
    assert sorted(f for group in runs[0] for f in group) == ["ddp.py", "platform.py"]
    assert b"pytorch:666" not in outputs(bare)
    assert cache_files(bare) == before


def test_corrupt_cache_files_fall_back_to_fresh_work(
    bare: Workspace, own_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = synthesize(bare.jobs, bare.out).files
    for rel in cache_files(bare):
        path = repo_cache_dir(bare.root) / rel
        path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])  # truncated
    runs = count_runs(monkeypatch)
    out = synthesize(bare.jobs, bare.out)
    assert out.files == first and not out.changes.any
    assert sorted(f for group in runs[0] for f in group) == ["ddp.py", "platform.py"]
    for data in cache_files(bare).values():  # written whole again
        json.loads(data)


def test_a_stored_payload_that_does_not_rebuild_is_a_miss(
    bare: Workspace, own_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stored payloads go through the models like a worker's: one the models refuse (here
    a kind trainkit does not know) is not an error, its file simply runs again."""
    first = synthesize(bare.jobs, bare.out).files
    path = repo_cache_dir(bare.root) / "definitions.json"
    store = json.loads(path.read_text())
    entry = store["entries"]["jobs/vision/ddp.py"]
    payload = json.loads(entry["payload"])
    payload["objects"][0]["kind"] = "Secret"
    entry["payload"] = json.dumps(payload)
    path.write_text(json.dumps(store))
    runs = count_runs(monkeypatch)
    assert synthesize(bare.jobs, bare.out).files == first
    assert runs == [[["ddp.py"]]]


def test_a_definition_unconfined_cannot_write_the_cache_the_next_run_trusts(
    bare: Workspace, own_cache: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    synthesize(bare.jobs, bare.out)
    target = repo_cache_dir(bare.root) / "definitions.json"
    bare.write("jobs/vision/evil.py", f"open({str(target)!r}, 'a').write(' ')\n")
    with (
        package_watch(tmp_path_factory, writes=False),
        pytest.raises(
            DefinitionError, match=r"definitions\.json changed while this definition ran"
        ),
    ):
        synthesize(bare.jobs, bare.out, load_options=LoadOptions(sandbox=False))


def test_validate_reuses_the_platform_s_payloads_and_keeps_every_other_entry(
    bare: Workspace,
    bare_cli: Callable[..., Run],
    own_cache: Path,
    crds: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Inside a repository ``validate`` loads the platform's definitions (its
    NetworkProfiles, its Policy's CRD files) through the definitions cache synth keeps:
    an unchanged platform file does not run, a changed one does; the entries of the job
    files it does not load stay for the next synth."""
    assert bare_cli("synth").code == 0
    store = repo_cache_dir(bare.root) / "definitions.json"
    entries = ["jobs/platform/platform.py", "jobs/vision/ddp.py"]
    assert sorted(json.loads(store.read_text())["entries"]) == entries
    runs = count_runs(monkeypatch)
    run = bare_cli("validate", "--crds", str(crds))
    assert run.code == 0, run.err
    assert runs == []
    bare.write("jobs/platform/platform.py", PLATFORM + "# edited\n")
    run = bare_cli("validate", "--crds", str(crds))
    assert run.code == 0, run.err
    assert runs == [[["platform.py"]]]
    assert sorted(json.loads(store.read_text())["entries"]) == entries
    assert bare_cli("synth").code == 0
    assert runs == [[["platform.py"]]]  # nothing more ran: ddp.py's entry was kept


@pytest.mark.parametrize("how", ["CI", "--no-cache"])
def test_validate_under_ci_or_no_cache_runs_the_platform_and_leaves_the_cache(
    how: str,
    bare: Workspace,
    bare_cli: Callable[..., Run],
    own_cache: Path,
    crds: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert bare_cli("synth").code == 0
    before = cache_files(bare)
    runs = count_runs(monkeypatch)
    args = ["validate", "--crds", str(crds)]
    if how == "CI":
        monkeypatch.setenv("CI", "1")
    else:
        args.append("--no-cache")
    run = bare_cli(*args)
    assert run.code == 0, run.err
    assert runs == [[["platform.py"]]]
    assert cache_files(bare) == before


def test_explain_reuses_the_payloads_of_unchanged_definitions(
    bare: Workspace, bare_cli: Callable[..., Run], own_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a synth, ``explain`` runs no definition, after an edit the edited file alone,
    and shows what every definition run shows (--no-cache, or CI, runs every one)."""
    assert bare_cli("synth").code == 0
    runs = count_runs(monkeypatch)
    assert bare_cli("explain", "ddp", "--format", "json").code == 0
    assert runs == []
    bare.write("jobs/vision/ddp.py", (bare.jobs / "vision/ddp.py").read_text() + "# edited\n")
    cached = bare_cli("explain", "ddp", "--format", "json")
    assert runs == [[["ddp.py"]]]
    fresh = bare_cli("explain", "ddp", "--format", "json", "--no-cache")
    assert runs[1:] == [[["platform.py"], ["ddp.py"]]]
    monkeypatch.setenv("CI", "1")
    in_ci = bare_cli("explain", "ddp", "--format", "json")
    assert runs[2:] == [[["platform.py"], ["ddp.py"]]]
    assert cached.code == fresh.code == in_ci.code == 0, cached.err
    assert cached.out == fresh.out == in_ci.out


# --- Part B: what a run with unchanged inputs skips ---


def test_unchanged_files_are_not_run_and_one_changed_file_runs_alone(
    bare: Workspace, own_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bare.write("jobs/vision/second.py", SECOND)
    synthesize(bare.jobs, bare.out)
    before = {p: os.stat(bare.out / p).st_ino for p in bare.snapshot()}
    runs = count_runs(monkeypatch)
    out = synthesize(bare.jobs, bare.out)
    assert runs == [] and not out.changes.any  # no definition process at all
    bare.write("jobs/vision/second.py", SECOND.replace('"x.py"', '"y.py"'))
    out = synthesize(bare.jobs, bare.out)
    assert runs == [[["second.py"]]]  # one process, one file
    assert out.changes.changed == ["clusters/east/vision/pytorchjob-second.yaml"]
    after = {p: os.stat(bare.out / p).st_ino for p in bare.snapshot()}
    assert {p for p in before if after[p] != before[p]} == set(out.changes.changed)


def test_a_changed_import_reruns_the_files_of_the_process_that_imported_it(
    bare: Workspace, own_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(bare.root))
    bare.write("jobs/vision/_common.py", "IMAGE = 'registry.example.com/pytorch:2'\n")
    bare.write(
        "jobs/vision/ddp.py",
        (bare.jobs / "vision/ddp.py")
        .read_text()
        .replace('image="registry.example.com/pytorch:2"', "image=IMAGE")
        .replace(
            "from trainkit import", "from jobs.vision._common import IMAGE\nfrom trainkit import"
        ),
    )
    bare.write("jobs/vision/second.py", SECOND)
    for isolation, rerun in (("team", ["ddp.py", "second.py"]), ("file", ["ddp.py"])):
        options = LoadOptions(isolation=isolation)  # type: ignore[arg-type]
        bare.write(
            "jobs/vision/_common.py", f"IMAGE = 'registry.example.com/pytorch:{isolation}'\n"
        )
        synthesize(bare.jobs, bare.out, load_options=options)
        # Its own patch context: undoing the test's monkeypatch would also undo the
        # fixtures' (CI unset, the cache directory) and turn the cache off where CI is set.
        with monkeypatch.context() as spy:
            runs = count_runs(spy)
            bare.write("jobs/vision/_common.py", "IMAGE = 'registry.example.com/pytorch:3'\n")
            synthesize(bare.jobs, bare.out, load_options=options)
        # A module the first file of a process imported is loaded already for the next
        # one, which then does not report it: the whole process depends on it.
        assert sorted(f for group in runs[0] for f in group) == rerun
        assert b"pytorch:3" in outputs(bare)


def test_a_no_change_synth_loads_neither_models_nor_cdk8s(
    bare: Workspace, bare_cli: Callable[..., Run]
) -> None:
    # The first synth writes the record (here); the second, in a fresh interpreter that
    # reports every module it imports, answers from it.
    first = bare_cli("synth")
    command = [sys.executable, "-X", "importtime", "-m", "trainkit", "synth"]
    second = subprocess.run(command, cwd=bare.root, capture_output=True, text=True, check=True)
    files = len(bare.snapshot())
    assert first.out == f"generated/: {files} added, 0 changed, 0 removed, 0 unchanged\n"
    assert second.stdout == f"generated/: 0 added, 0 changed, 0 removed, {files} unchanged\n"
    imported = {line.rsplit("|", 1)[-1].strip() for line in second.stderr.splitlines()}
    assert "trainkit.cli" in imported and "trainkit.runcache" in imported
    heavy = {"pydantic", "cdk8s", "yaml", "trainkit.model", "trainkit.synth", "trainkit.load"}
    assert heavy & imported == set()


def test_an_edited_output_file_is_rewritten(
    bare: Workspace, bare_cli: Callable[..., Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert bare_cli("synth").code == 0
    clean = bare.snapshot()
    path = bare.out / "clusters/east/vision/pytorchjob-ddp.yaml"
    path.write_bytes(path.read_bytes().replace(b"replicas: 1", b"replicas: 2"))
    result = bare_cli("synth")
    assert "0 added, 1 changed, 0 removed" in result.out
    path.unlink()
    assert "1 added, 0 changed, 0 removed" in bare_cli("synth").out
    assert bare.snapshot() == clean


def full_runs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the runs that go past the record (to the full pipeline)."""
    calls: list[int] = []
    real = synth_mod.synthesize

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(synth_mod, "synthesize", spy)
    return calls


def test_the_record_holds_only_while_the_deployed_commit_does(
    bare: Workspace, bare_cli: Callable[..., Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert bare_cli("synth").code == 0
    commit_all(bare.root)
    git(bare.root, "update-ref", "refs/remotes/origin/main", "HEAD")
    full = full_runs(monkeypatch)
    assert bare_cli("synth").code == 0  # origin/main appeared: a new baseline
    assert bare_cli("synth").code == 0
    assert full == [1]
    bare.write("notes.txt", "not an input\n")
    commit_all(bare.root)
    assert bare_cli("synth").code == 0  # origin/main did not move
    git(bare.root, "update-ref", "refs/remotes/origin/main", "HEAD")
    assert bare_cli("synth").code == 0
    assert full == [1, 1]


def test_options_that_change_the_output_are_inputs(
    bare: Workspace, bare_cli: Callable[..., Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert bare_cli("synth").code == 0
    files = len(bare.snapshot())
    full = full_runs(monkeypatch)
    monkeypatch.setenv("TRAINKIT_SYNTH_COMMAND", "make generate")
    assert f"0 added, {files} changed, 0 removed" in bare_cli("synth").out  # every header
    assert b"make generate" in outputs(bare)
    assert bare_cli("synth", "--against", "disk").code == 0
    assert bare_cli("synth", "--against", "disk").code == 0  # from its own record
    assert full == [1, 1]


def test_check_answers_from_its_record_until_an_input_changes(
    bare: Workspace,
    bare_cli: Callable[..., Run],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    crds: Path,
) -> None:
    monkeypatch.setenv("TRAINKIT_CRDS", str(crds))
    assert bare_cli("synth").code == 0
    first = bare_cli("check")
    assert first.code == 0, first.err
    full = full_runs(monkeypatch)
    again = bare_cli("check")
    assert (again.code, again.out) == (0, first.out) and full == []
    # The CRD set is an input of check (and not of synth).
    empty = tmp_path / "crds"
    empty.mkdir()
    (empty / "empty.yaml").write_text("# no CRD here yet\n")
    assert bare_cli("check", "--crds", str(empty)).code == 1  # no CustomResourceDefinition found
    assert full == [1]
    assert bare_cli("check").out == first.out
    assert bare_cli("synth").code == 0
    assert full == [1]
    # Without CRDs every check runs in full: it must say each time what went unverified.
    monkeypatch.delenv("TRAINKIT_CRDS")
    for runs in ([1, 1], [1, 1, 1]):
        unverified = bare_cli("check")
        assert unverified.code == 0 and "not validated against CRDs" in unverified.err
        assert full == runs


def test_objects_rebuilt_from_the_cache_are_never_in_a_definitions_process(
    bare: Workspace, own_cache: Path
) -> None:
    """Stored payloads are rebuilt after the definition processes are forked, so a new
    file finds none of the platform's or another team's objects in its memory."""
    synthesize(bare.jobs, bare.out)
    bare.write(
        "jobs/vision/look.py",
        "import gc\nfrom trainkit import Team\n"
        "assert not [o for o in gc.get_objects() if isinstance(o, Team)], 'saw Teams'\n",
    )
    synthesize(bare.jobs, bare.out)


def test_only_files_rendered_otherwise_than_last_time_are_compared_with_git(
    tw: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Against the commit of the last run, a job file rendered as then gets the verdict it
    got then; a changed one is still compared (and an in-place change still refused)."""
    from trainkit.deployed import baseline as baseline_mod

    synthesize(tw.jobs, tw.out)
    commit_all(tw.root)
    git(tw.root, "update-ref", "refs/remotes/origin/main", "HEAD")
    synthesize(tw.jobs, tw.out)  # records the verdicts against origin/main
    asked: list[str] = []
    real = baseline_mod._GitTree.read_many

    def spy(self, paths):  # type: ignore[no-untyped-def]
        asked.extend(paths)
        return real(self, paths)

    monkeypatch.setattr(baseline_mod._GitTree, "read_many", spy)
    tw.write("jobs/vision/ddp.py", (tw.jobs / "vision/ddp.py").read_text() + "# a comment\n")
    assert not synthesize(tw.jobs, tw.out).changes.any
    assert asked == []
    tw.write("jobs/vision/tj.py", (tw.jobs / "vision/tj.py").read_text().replace('"1"', '"2"'))
    with pytest.raises(DefinitionError, match="would change in place"):
        synthesize(tw.jobs, tw.out)
    assert sorted(set(asked)) == ["clusters/east/vision/trainjob-tj-r1.yaml"]


def _walked(package: Path) -> list[tuple[str, int, int]]:
    """The stamp's list of source files as ``os.walk`` and ``os.path.relpath`` give it."""
    files = []
    for top, dirs, names in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(names):
            if name.endswith((".py", ".lua")):
                st = os.stat(os.path.join(top, name))
                files.append((os.path.relpath(os.path.join(top, name), package), st.st_size, st.st_mtime_ns))  # fmt: skip
    return files


def test_the_code_stamp_lists_every_source_file_as_os_walk_finds_it(tmp_path: Path) -> None:
    """Every run stamps trainkit's sources (runcache.source_files, strings only): the same
    files, in the same order, with the same sizes and times as os.walk gives them, so a
    change of any of them (and nothing else) is a new stamp."""
    import trainkit

    package = Path(trainkit.__file__).parent
    assert source_files(str(package)) == _walked(package)
    for rel in ("a.py", "b/c.lua", "b/z.py", "b/d/e.py", "ba/f.py", "x.txt", "__pycache__/g.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(rel)
    (tmp_path / "b" / "y.py").symlink_to(tmp_path / "a.py")
    (tmp_path / "link").symlink_to(tmp_path / "b", target_is_directory=True)
    got = source_files(str(tmp_path))
    assert [rel for rel, _, _ in got] == [
        "a.py",
        "b/c.lua",
        "b/y.py",
        "b/z.py",
        "b/d/e.py",
        "ba/f.py",
    ]
    assert got == _walked(tmp_path)


def test_the_definitions_origin_starts_ahead_only_when_a_definition_will_run(
    bare: Workspace, bare_cli: Callable[..., Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``synth`` and ``check`` start the definitions' origin process beside their imports
    only when a definition file will run: with every file's payload cached and its inputs
    unchanged, none is started (it would cost an interpreter importing the models)."""
    started: list[str] = []
    real = server.prestart

    def counted() -> None:
        started.append("origin")
        real()

    monkeypatch.setattr(server, "prestart", counted)
    assert bare_cli("synth").code == 0
    assert started == ["origin"]  # nothing cached yet
    started.clear()
    # A script is no definition's import: every definition is cached, the tree changed.
    bare.write("jobs/vision/scripts/train.py", "print('changed')\n")
    assert bare_cli("synth").code == 0
    assert bare_cli("check").code == 0
    assert started == []
    bare.write("jobs/vision/ddp.py", bare.jobs.joinpath("vision/ddp.py").read_text() + "\n")
    assert bare_cli("check").code == 0  # the definition changed: it runs (the same objects)
    assert started == ["origin"]


def test_a_changed_source_is_another_stamp_and_a_record_of_another_stamp_is_not_used(
    bare: Workspace, bare_cli: Callable[..., Run], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A process running other trainkit code (an edited, added or removed source file)
    stamps it otherwise, and does not answer from the records of this one."""
    package = tmp_path / "package"
    (package / "render").mkdir(parents=True)
    (package / "render" / "a.py").write_text("A = 1\n")
    stamps = {stamp_of(str(package))}
    (package / "render" / "a.py").write_text("A = 22\n")
    stamps.add(stamp_of(str(package)))
    os.utime(package / "render" / "a.py", ns=(0, 0))
    stamps.add(stamp_of(str(package)))
    (package / "b.lua").write_text("return 1\n")
    stamps.add(stamp_of(str(package)))
    assert len(stamps) == 4
    assert bare_cli("synth").code == 0
    full = full_runs(monkeypatch)
    assert bare_cli("synth").code == 0
    assert full == []
    monkeypatch.setattr(runcache, "_process_stamp", lambda: stamp_of(str(package)))
    assert bare_cli("synth").code == 0
    assert full == [1]


def test_a_process_stamps_its_code_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sources a process imported cannot change under it: every run in one process
    (a test session, a program calling synthesize in turn) shares the stamp of its first."""
    walked: list[str] = []

    def counted(directory: str, prefix: str = "") -> list[tuple[str, int, int]]:
        walked.append(prefix)
        return source_files(directory, prefix)

    monkeypatch.setattr(runcache, "source_files", counted)
    runcache._process_stamp.cache_clear()
    first = code_stamp()
    assert code_stamp() == first and walked.count("") == 1  # "": the package's top
    assert first == stamp_of(str(Path(runcache.__file__).parent))
