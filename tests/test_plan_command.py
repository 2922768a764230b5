"""`trainkit plan`: what a change of jobs/ does to each cluster, against what Argo CD deploys.

Each section of the plan on a small repository whose generated/ was committed as origin/main:
added, changed, removed, a new run as one row, queues over their capability, teams over
max_gpus, no baseline, synth's errors. The markdown is checked against a golden file
(regenerate with TRAINKIT_UPDATE_GOLDEN=1, never in CI) and the JSON against its schema.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from conftest import BARE, REPO, RUNTIMES, TRAINJOB, RepoCaches, Run, Workspace, copy_tree
from test_caches import count_runs
from trainkit.cli import main
from trainkit.plan import PlanReport, build_review, format_markdown, format_text

SCHEMA = json.loads((REPO / "schemas/plan.schema.json").read_text(encoding="utf-8"))
GOLDEN = REPO / "tests/data/plan"
# Read before conftest unsets CI for each test: golden files are never rewritten in CI.
UPDATE_GOLDEN = bool(os.environ.get("TRAINKIT_UPDATE_GOLDEN")) and not os.environ.get("CI")

Cli = Callable[..., Run]


def _hermetic(monkeypatch: pytest.MonkeyPatch, ceiling: Path) -> None:
    """git as on a fresh machine: no user config, no repository above ``ceiling``."""
    for name in list(os.environ):
        if name.startswith("GIT_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(ceiling))
    for who in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{who}_NAME", "Test")
        monkeypatch.setenv(f"GIT_{who}_EMAIL", "test@example.com")
        monkeypatch.setenv(f"GIT_{who}_DATE", "2025-01-01T00:00:00Z")


@pytest.fixture(autouse=True)
def hermetic_git(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _hermetic(monkeypatch, tmp_path)


def git(root: Path, *args: str) -> str:
    out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def deploy(ws: Workspace, cli: Cli) -> None:
    """Synthesize, commit, and make that commit what Argo CD deploys (origin/main)."""
    assert cli("synth", "--against", "disk").code == 0
    _commit(ws.root)


def _commit(root: Path) -> None:
    if not (root / ".git").exists():
        git(root, "init", "-q", "-b", "main", "--template=")  # no sample hooks
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "deployed")
    git(root, "update-ref", "refs/remotes/origin/main", "HEAD")


def _commit_to_copy(root: Path) -> None:
    """``_commit``, its objects packed: the tests copy the repository (``deployed``,
    ``_Deployed.into``), about a dozen files instead of one per object (the examples: 200)."""
    _commit(root)
    git(root, "repack", "-adq")


@pytest.fixture(scope="session")
def _examples_deployed(tmp_path_factory: pytest.TempPathFactory, _examples_generated: Path) -> Path:
    """A repository of the examples whose generated/ (the session's synth of them) is
    committed as origin/main: ``deploy`` of the examples, once per session."""
    root = tmp_path_factory.mktemp("deployed")
    copy_tree(REPO / "jobs", root / "jobs")
    copy_tree(_examples_generated, root / "generated")
    with pytest.MonkeyPatch.context() as mp:
        _hermetic(mp, root.parent)
        _commit_to_copy(root)
    return root


@pytest.fixture
def deployed(ws: Workspace, _examples_deployed: Path) -> Workspace:
    """``ws`` after ``deploy``: the session's deployed examples, copied (each test edits its
    own)."""
    for name in (".git", "generated"):
        copy_tree(_examples_deployed / name, ws.root / name)
    return ws


# What conftest's ``tw`` writes (``_Deployed.into`` checks it).
TW = {**BARE, "jobs/platform/runtimes.py": RUNTIMES, "jobs/vision/tj.py": TRAINJOB}


@dataclass(frozen=True)
class _Deployed:
    """A small repository after ``deploy``, once per module: a test copies its git
    repository and generated/ and seeds its caches (``RepoCaches``) instead of running
    synth and git again, as ``deployed`` does for the examples."""

    root: Path
    caches: RepoCaches

    def into(self, ws: Workspace) -> None:
        def files(jobs: Path) -> dict[Path, bytes]:
            return {
                p.relative_to(jobs): p.read_bytes()
                for p in jobs.rglob("*")
                if p.is_file() and "__pycache__" not in p.parts
            }

        assert files(ws.jobs) == files(self.root / "jobs"), "another jobs/ than the deployed"
        for name in (".git", "generated"):
            copy_tree(self.root / name, ws.root / name)
        self.caches.seed(ws.root)


def _deploy_once(
    tmp_path_factory: pytest.TempPathFactory, home: Path, files: dict[str, str]
) -> _Deployed:
    root = tmp_path_factory.mktemp("deployed-small")
    ws = Workspace(root)
    for rel, content in files.items():
        ws.write(rel, content)
    with pytest.MonkeyPatch.context() as mp:
        _hermetic(mp, root.parent)
        # As a test's commands run (_own_cache, _not_in_ci: set after this fixture).
        mp.delenv("CI", raising=False)
        mp.delenv("RUNNER_TEMP", raising=False)
        mp.setenv("TRAINKIT_CACHE_DIR", str(home))
        mp.chdir(root)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            assert main(["synth", "--against", "disk"]) == 0
        _commit_to_copy(root)
    return _Deployed(root, RepoCaches.of(home, root))


@pytest.fixture(scope="module")
def _bare_deployed(tmp_path_factory: pytest.TempPathFactory, _session_cache: Path) -> _Deployed:
    return _deploy_once(tmp_path_factory, _session_cache, BARE)


@pytest.fixture(scope="module")
def _tw_deployed(tmp_path_factory: pytest.TempPathFactory, _session_cache: Path) -> _Deployed:
    return _deploy_once(tmp_path_factory, _session_cache, TW)


@pytest.fixture
def deployed_bare(bare: Workspace, _bare_deployed: _Deployed) -> Workspace:
    """``bare`` after ``deploy`` (a copy of the module's: ``_Deployed``)."""
    _bare_deployed.into(bare)
    return bare


@pytest.fixture
def deployed_tw(tw: Workspace, _tw_deployed: _Deployed) -> Workspace:
    """``tw`` after ``deploy`` (a copy of the module's: ``_Deployed``)."""
    _tw_deployed.into(tw)
    return tw


def plan(cli: Cli, *args: str) -> dict[str, Any]:
    """The JSON plan, checked against schemas/plan.schema.json."""
    r = cli("plan", "--format", "json", *args)
    assert r.code == 0, r.err
    doc: dict[str, Any] = json.loads(r.out)
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    return doc


def text(doc: dict[str, Any]) -> str:
    """What `trainkit plan` prints for the same plan (one load per test is enough)."""
    return format_text(PlanReport.model_validate(doc))


def markdown(doc: dict[str, Any]) -> str:
    return format_markdown(PlanReport.model_validate(doc))


def cluster(doc: dict[str, Any], name: str) -> dict[str, Any]:
    (found,) = [c for c in doc["clusters"] if c["cluster"] == name]
    return found


def fields(row: dict[str, Any]) -> dict[str, tuple[str | None, str | None]]:
    return {f["field"]: (f["before"], f["after"]) for f in row["fields"]}


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


SECOND_JOB = """\
from trainkit import PyTorchJob, Resources, Script

big = PyTorchJob(
    name="big",
    image="registry.example.com/pytorch:3",
    script=Script.file("scripts/train.py"),
    nodes=3,
    procs_per_node=2,
    resources=Resources(cpu=8, memory="32Gi", gpu=4),
    clusters=["east"],
)
"""


# --- added, changed, removed --------------------------------------------------------------


def test_schema_is_the_one_trainkit_schema_writes() -> None:
    from trainkit.schema import PLAN_SCHEMA, render_schemas

    assert json.loads(render_schemas()[PLAN_SCHEMA]) == SCHEMA
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.usefixtures("deployed_bare")
def test_an_added_job_is_one_row_with_its_pods(bare: Workspace, bare_cli: Cli) -> None:
    bare.write("jobs/vision/big.py", SECOND_JOB)
    doc = plan(bare_cli)
    (row,) = cluster(doc, "east")["changes"]  # its script ConfigMap is part of the job
    assert row["action"] == "add"
    assert (row["kind"], row["namespace"], row["name"], row["team"]) == (
        "PyTorchJob", "vision", "big", "vision",
    )  # fmt: skip
    assert row["source"] == "jobs/vision/big.py"
    assert row["before"] is None
    assert row["after"] == {
        "nodes": 3,
        "procs_per_node": "2",
        "world_size": 6,
        "gpus": 12,
        "gpu_resource": "nvidia.com/gpu",
        "image": "registry.example.com/pytorch:3",
        "queue": "research",
        "pods": [{"role": "Master", "count": 1}, {"role": "Worker", "count": 2}],
    }
    assert cluster(doc, "west")["changes"] == []
    assert "east: 1 added\n  vision\n    + PyTorchJob big: 3 nodes × 2 processes = world size 6, " \
        "12 nvidia.com/gpu, queue research\n        image registry.example.com/pytorch:3\n" in text(doc)  # fmt: skip
    assert "west: no change\n" in text(doc)


@pytest.mark.usefixtures("deployed_tw")
def test_a_changed_queue_and_runtime_show_their_fields(tw: Workspace, bare_cli: Cli) -> None:
    edit(tw.root / "jobs/platform/platform.py", "Capacity(gpu=16)", "Capacity(gpu=32)")
    edit(tw.root / "jobs/platform/runtimes.py", 'image="registry.example.com/pytorch:2"',
         'image="registry.example.com/pytorch:3"')  # fmt: skip
    doc = plan(bare_cli)
    rows = {(r["kind"], r["name"]): r for r in cluster(doc, "east")["changes"]}
    assert set(rows) == {("Queue", "research"), ("ClusterTrainingRuntime", "torch")}
    queue, runtime = rows[("Queue", "research")], rows[("ClusterTrainingRuntime", "torch")]
    assert (queue["action"], queue["team"]) == ("change", "platform")
    assert fields(queue) == {"capability.nvidia.com/gpu": ("16", "32")}
    assert fields(runtime) == {
        "node.image": ("registry.example.com/pytorch:2", "registry.example.com/pytorch:3")
    }
    # On the AMD cluster the capability counts amd.com/gpu.
    (west_queue,) = cluster(doc, "west")["changes"]
    assert fields(west_queue) == {"capability.amd.com/gpu": ("16", "32")}
    (research,) = cluster(doc, "east")["queues"]
    assert research["before"]["capability"]["gpu"] == 16
    assert research["after"]["capability"]["gpu"] == 32
    assert "    ~ Queue research: capability.nvidia.com/gpu 16→32\n" in text(doc)
    assert "    ~ ClusterTrainingRuntime torch: node.image\n" in text(doc)


@pytest.mark.usefixtures("deployed_bare")
def test_a_removed_job_is_spelt_out(bare: Workspace, bare_cli: Cli) -> None:
    (bare.jobs / "vision/ddp.py").unlink()
    doc = plan(bare_cli)
    (row,) = cluster(doc, "east")["changes"]
    assert row["action"] == "remove"
    assert row["note"] == (
        "Argo CD will delete PyTorchJob `ddp` in `vision` on `east` (and stop it if it is running)"
    )
    assert row["before"]["nodes"] == 2
    assert row["before"]["gpus"] == 8
    (west,) = cluster(doc, "west")["changes"]
    assert west["before"]["gpu_resource"] == "amd.com/gpu"
    assert (
        "| vision | **removed** | PyTorchJob `ddp` | Argo CD will delete PyTorchJob `ddp` in "
        "`vision` on `east` (and stop it if it is running) |"
    ) in markdown(doc)


@pytest.mark.usefixtures("deployed_bare")
def test_a_removed_cluster_deletes_its_application_and_keeps_namespaces(
    bare: Workspace, bare_cli: Cli
) -> None:
    edit(bare.jobs / "platform/platform.py",
         'west = Cluster(name="west", destination_name="west", gpu_resource="amd.com/gpu", '
         "gpus_per_node=4)\n", "")  # fmt: skip
    edit(bare.jobs / "vision/ddp.py", 'clusters=["east", "west"]', 'clusters=["east"]')
    doc = plan(bare_cli)
    west = cluster(doc, "west")
    notes = {(r["kind"], r["name"]): r["note"] for r in west["changes"]}
    assert all(r["action"] == "remove" for r in west["changes"])
    assert notes[("Namespace", "vision")] == (
        "Argo CD leaves Namespace `vision` on `west` in place (Prune=false): delete it by hand "
        "once it is empty"
    )
    assert notes[("PyTorchJob", "ddp")].startswith("Argo CD will delete PyTorchJob `ddp` in")
    # The cluster is gone from the definitions; its GPUs are counted as deployed.
    assert west["gpu_resource"] == "amd.com/gpu"
    ddp = next(r for r in west["changes"] if r["kind"] == "PyTorchJob")
    assert ddp["before"]["gpus"] == 8
    argo = {(r["kind"], r["name"]): r for r in doc["argocd"]}
    for name in ("trainkit-west-platform", "trainkit-west-vision"):
        assert argo[("Application", name)]["note"] == (
            f"Argo CD will delete Application `{name}` in `argocd`; its finalizer deletes "
            "everything it synced to `west` (namespaces stay)"
        )
    assert argo[("AppProject", "trainkit")]["action"] == "change"


# --- a new run is one row ---------------------------------------------------------------


@pytest.mark.usefixtures("deployed_bare")
def test_a_new_run_of_a_pytorchjob_is_one_row_with_its_field_diff(
    bare: Workspace, bare_cli: Cli
) -> None:
    edit(bare.jobs / "vision/ddp.py", "nodes=2,", "run=2,\n    nodes=4,")
    doc = plan(bare_cli)
    (row,) = cluster(doc, "east")["changes"]
    assert (row["action"], row["previous"], row["name"]) == ("new-run", "ddp", "ddp-r2")
    # The operator's WORLD_SIZE, the Worker replicas and minAvailable follow from nodes.
    assert fields(row) == {"nodes": ("2", "4")}
    assert (row["before"]["world_size"], row["after"]["world_size"]) == (8, 16)
    assert (row["before"]["gpus"], row["after"]["gpus"]) == (8, 16)
    assert row["note"] == (
        "Argo CD will delete PyTorchJob `ddp` (and stop it if it is running) and create `ddp-r2`"
    )
    assert "    ~ PyTorchJob ddp → ddp-r2: nodes 2→4\n" in text(doc)
    assert "| vision | new run | PyTorchJob `ddp` → `ddp-r2` | `nodes 2→4` |" in markdown(doc)


@pytest.mark.usefixtures("deployed_tw")
def test_a_new_run_of_a_trainjob_names_only_what_changed(tw: Workspace, bare_cli: Cli) -> None:
    edit(tw.jobs / "vision/tj.py", 'args=["--epochs", "1"],', 'run=2,\n    args=["--epochs", "2"],')
    # Another script of the same name: only the ConfigMap differs (ddp keeps the old one).
    edit(tw.jobs / "vision/tj.py", "scripts/train.py", "scripts/v2/train.py")
    tw.write("jobs/vision/scripts/v2/train.py", "print('training more')\n")
    doc = plan(bare_cli)
    (row,) = cluster(doc, "east")["changes"]
    assert (row["action"], row["previous"], row["name"]) == ("new-run", "tj-r1", "tj-r2")
    # Trainer's PET_MASTER_ADDR follows the new name: no change of the job's env.
    assert [f["field"] for f in row["fields"]] == ["args", "script"]
    assert row["after"]["image"] == "registry.example.com/pytorch:2"  # the runtime's
    assert row["after"]["procs_per_node"] == "auto"
    assert row["after"]["world_size"] == 4


@pytest.mark.usefixtures("deployed_tw")
def test_an_edit_a_deployed_job_may_not_take_fails_as_synth_does(
    tw: Workspace, bare_cli: Cli
) -> None:
    edit(tw.jobs / "vision/tj.py", '"--epochs", "1"', '"--epochs", "2"')
    synth, planned = bare_cli("synth"), bare_cli("plan")
    assert (synth.code, planned.code) == (1, 1)
    assert "TrainJob 'tj-r1' on cluster 'east' is deployed from origin/main" in planned.err
    assert planned.err == synth.err.replace("trainkit synth:", "trainkit plan:")
    assert planned.out == ""


# --- queues and teams: information, never a failure ----------------------------------------


@pytest.mark.usefixtures("deployed_bare")
def test_a_queue_over_its_capability_is_information(bare: Workspace, bare_cli: Cli) -> None:
    bare.write("jobs/vision/big.py", SECOND_JOB)  # 12 GPUs beside ddp's 8, capability 16
    doc = plan(bare_cli)
    (research,) = cluster(doc, "east")["queues"]
    assert research["before"]["requests"] == {"gpu": 8, "cpu": "8", "memory": "32Gi", "other": {}}
    assert research["after"]["requests"] == {"gpu": 20, "cpu": "32", "memory": "128Gi", "other": {}}
    assert research["after"]["capability"] == {"gpu": 16, "cpu": None, "memory": None, "other": {}}
    assert (research["before"]["over_capability"], research["after"]["over_capability"]) == (
        [], ["gpu"],
    )  # fmt: skip
    assert (
        "    research  GPU 8 → 20 of 16 (over: jobs wait)   cpu 8 → 32   memory 32Gi → 128Gi\n"
        in text(doc)
    )
    assert (
        "> ⚠️ queue `research` on `east` if every job in git ran at once: GPU 20 of 16; over its "
        "capability, jobs wait for each other (not an error)"
    ) in markdown(doc)


def test_hierarchical_queues_count_their_children_and_show_deserved(
    bare: Workspace, bare_cli: Cli
) -> None:
    edit(bare.jobs / "platform/platform.py",
         'research = Queue(name="research", capability=Capacity(gpu=16))',
         'org = Queue(name="org", capability=Capacity(gpu=64), deserved=Capacity(gpu=32))\n'
         'research = Queue(name="research", parent="org", capability=Capacity(gpu=16), '
         "deserved=Capacity(gpu=4), guarantee=Capacity(gpu=2))")  # fmt: skip
    deploy(bare, bare_cli)
    bare.write("jobs/vision/big.py", SECOND_JOB)
    doc = plan(bare_cli)
    queues = {q["queue"]: q for q in cluster(doc, "east")["queues"]}
    assert queues["org"]["after"]["requests"]["gpu"] == 20  # its child's jobs
    assert queues["research"]["after"]["above_deserved"] == ["gpu"]
    assert queues["research"]["after"]["guarantee"]["gpu"] == 2
    assert "    research  GPU 8 → 20 of 16, deserved 4, guarantee 2 (over: jobs wait)" in text(doc)
    assert "    org       GPU 8 → 20 of 64, deserved 32   " in text(doc)


def test_a_team_over_max_gpus_before_the_change_is_shown(bare: Workspace, bare_cli: Cli) -> None:
    bare.write("jobs/vision/big.py", SECOND_JOB)
    deploy(bare, bare_cli)
    # The platform lowers the cap and the team gives up a job in the same pull request.
    edit(bare.jobs / "platform/platform.py", 'queues=["research"])',
         'queues=["research"], max_gpus=12)')  # fmt: skip
    (bare.jobs / "vision/ddp.py").unlink()
    doc = plan(bare_cli)
    (team,) = cluster(doc, "east")["teams"]
    assert team == {
        "team": "vision", "before": 20, "after": 12, "max_gpus": 12,
        "over_before": True, "over_after": False,
    }  # fmt: skip
    assert "    vision  20 → 12 of 12 (was over)\n" in text(doc)


@pytest.mark.usefixtures("deployed_bare")
def test_a_team_over_max_gpus_after_the_change_fails_as_synth_does(
    bare: Workspace, bare_cli: Cli
) -> None:
    edit(bare.jobs / "platform/platform.py", 'queues=["research"])',
         'queues=["research"], max_gpus=12)')  # fmt: skip
    bare.write("jobs/vision/big.py", SECOND_JOB)
    synth, planned = bare_cli("synth"), bare_cli("plan", "--format", "markdown")
    assert (synth.code, planned.code) == (1, 1)
    assert "use 20 GPUs together but Team.max_gpus" in planned.err
    assert planned.err == synth.err.replace("trainkit synth:", "trainkit plan:")


def test_a_definition_error_is_synths_error(bare: Workspace, bare_cli: Cli) -> None:
    edit(bare.jobs / "vision/ddp.py", "gpu=4", "gpu=12")
    synth, planned = bare_cli("synth"), bare_cli("plan", "--format", "json")
    assert (synth.code, planned.code) == (1, 1)
    assert "resources.gpu: 12 exceeds the 8 GPUs per node of cluster 'east'" in planned.err
    assert planned.err == synth.err.replace("trainkit synth:", "trainkit plan:")
    assert planned.out == ""


@pytest.mark.usefixtures("deployed_bare")
def test_one_plan_writes_the_comment_and_its_json(bare: Workspace, bare_cli: Cli) -> None:
    """--json-file: the markdown on stdout and the json of the same plan in the file, from one
    run (the workflow's comment and artifact); nothing written when the plan fails."""
    edit(bare.jobs / "vision/ddp.py", "nodes=2,", "run=2,\n    nodes=3,")
    both = bare_cli("plan", "--format", "markdown", "--json-file", "plan.json")
    assert both.code == 0, both.err
    doc = json.loads((bare.root / "plan.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    (row,) = cluster(doc, "east")["changes"]
    assert (row["action"], row["name"]) == ("new-run", "ddp-r2")
    assert both.out == markdown(doc)
    (bare.root / "plan.json").unlink()
    edit(bare.jobs / "vision/ddp.py", "gpu=4", "gpu=12")
    failed = bare_cli("plan", "--format", "markdown", "--json-file", "plan.json")
    assert failed.code == 1 and failed.out == ""
    assert not (bare.root / "plan.json").exists()


def test_a_plan_reuses_the_payloads_of_unchanged_definitions(
    bare: Workspace, bare_cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The definitions cache synth keeps: after a synth an unchanged file does not run, an
    edited one runs alone, and the plan is the one every definition run gives (--no-cache,
    or CI, runs every one)."""
    assert bare_cli("synth").code == 0
    runs = count_runs(monkeypatch)
    unchanged = bare_cli("plan", "--format", "json")
    assert unchanged.code == 0, unchanged.err
    assert runs == []
    edit(bare.jobs / "vision/ddp.py", "nodes=2,", "nodes=3,")
    cached = bare_cli("plan", "--format", "json")
    assert runs == [[["ddp.py"]]]
    fresh = bare_cli("plan", "--format", "json", "--no-cache")
    assert runs[1:] == [[["platform.py"], ["ddp.py"]]]
    monkeypatch.setenv("CI", "1")
    in_ci = bare_cli("plan", "--format", "json")
    assert runs[2:] == [[["platform.py"], ["ddp.py"]]]
    assert cached.code == fresh.code == in_ci.code == 0, cached.err
    assert cached.out == fresh.out == in_ci.out


def test_a_json_file_that_cannot_be_written_is_named(tmp_path: Path) -> None:
    from trainkit.cli.cmd_plan import _write
    from trainkit.errors import SetupError

    with pytest.raises(SetupError) as err:
        _write(tmp_path / "no/such/dir/plan.json", "{}")
    (problem,) = err.value.problems
    assert problem.file == str(tmp_path / "no/such/dir/plan.json")
    assert problem.message == "cannot write the plan: No such file or directory"


# --- no baseline ----------------------------------------------------------------------------


def _everything_added(doc: dict[str, Any]) -> None:
    rows = [r for c in doc["clusters"] for r in c["changes"]] + doc["argocd"]
    assert rows
    assert {r["action"] for r in rows} == {"add"}
    assert doc["baseline_found"] is False


def test_without_git_the_plan_is_against_an_empty_tree_even_in_ci(
    bare: Workspace, bare_cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")  # synth would refuse to run without origin/main here
    doc = plan(bare_cli)
    _everything_added(doc)
    assert doc["note"].startswith("nothing known to be deployed (not a git repository): ")
    assert "`git fetch origin main`" in doc["note"]
    run = bare_cli("plan", "--format", "markdown")
    assert run.err.startswith("note: nothing known to be deployed (not a git repository)")
    assert "Against an empty tree. **east**: 3 added · **plain**: 1 added" in run.out
    printed = bare_cli("plan").out
    assert printed.startswith("Plan against an empty tree:\nnote: nothing known to be deployed")


def test_before_the_first_commit_the_plan_is_against_an_empty_tree(
    bare: Workspace, bare_cli: Cli
) -> None:
    git(bare.root, "init", "-q", "-b", "main")
    doc = plan(bare_cli)
    _everything_added(doc)
    assert "neither origin/main nor main exists in git" in doc["note"]


@pytest.mark.usefixtures("deployed_bare")
def test_an_unknown_revision_is_a_note_and_an_empty_tree(bare: Workspace, bare_cli: Cli) -> None:
    doc = plan(bare_cli, "--against", "no-such-branch")
    _everything_added(doc)
    assert doc["note"].startswith("git revision 'no-such-branch' does not exist here")
    assert doc["note"].endswith("; planned against an empty tree (every object shows as added)")


@pytest.mark.usefixtures("deployed_bare")
def test_a_shallow_clone_without_the_deployed_branch_plans_against_an_empty_tree(
    bare: Workspace, bare_cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    git(bare.root, "checkout", "-q", "-b", "pr")
    bare.write("jobs/vision/big.py", SECOND_JOB)
    git(bare.root, "add", "-A")
    git(bare.root, "commit", "-q", "-m", "pr")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth", "1", "-b", "pr", f"file://{bare.root}", str(clone))
    monkeypatch.chdir(clone)
    assert main(["plan", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    _everything_added(doc)
    assert "neither origin/main nor main exists in git" in doc["note"]


def test_against_disk_compares_with_the_files_on_disk(bare: Workspace, bare_cli: Cli) -> None:
    assert bare_cli("synth", "--against", "disk").code == 0
    edit(
        bare.jobs / "platform/platform.py",
        'Queue(name="research", ',
        'Queue(name="research", weight=3, ',
    )
    doc = plan(bare_cli, "--against", "disk")
    assert (doc["baseline"], doc["baseline_found"]) == ("generated/ on disk", True)
    (row,) = cluster(doc, "east")["changes"]
    assert (row["kind"], row["action"]) == ("Queue", "change")
    assert fields(row) == {"weight": ("1", "3")}


# --- it compares, never writes ------------------------------------------------------------


@pytest.mark.usefixtures("deployed_bare")
def test_the_plan_writes_nothing(bare: Workspace, bare_cli: Cli) -> None:
    shutil.rmtree(bare.root / ".trainkit", ignore_errors=True)
    edit(bare.jobs / "vision/ddp.py", "nodes=2,", "run=2,\n    nodes=3,")
    before = bare.snapshot()
    listing = sorted(
        p.relative_to(bare.root) for p in bare.root.rglob("*") if ".git" not in p.parts
    )
    assert bare_cli("plan").code == 0
    assert bare.snapshot() == before
    after = sorted(p.relative_to(bare.root) for p in bare.root.rglob("*") if ".git" not in p.parts)
    assert [p for p in after if "__pycache__" not in p.parts] == [
        p for p in listing if "__pycache__" not in p.parts
    ]


@pytest.mark.usefixtures("deployed_tw")
def test_a_job_kept_at_its_deployed_bytes_is_no_change(tw: Workspace, bare_cli: Cli) -> None:
    # What an older trainkit wrote for the same definition: same hash, other bytes.
    path = tw.out / "clusters/east/vision/trainjob-tj-r1.yaml"
    edit(path, "  labels:\n", "  labels:\n    example.com/rendered-by: trainkit-0.9\n")
    git(tw.root, "commit", "-q", "-am", "older rendering")
    git(tw.root, "update-ref", "refs/remotes/origin/main", "HEAD")
    doc = plan(bare_cli)
    assert cluster(doc, "east")["changes"] == []
    # The same file without the definition hash is a change to show.
    edit(path, "    trainkit.dev/definition:", "    example.com/was:")
    git(tw.root, "commit", "-q", "-am", "hand edit")
    git(tw.root, "update-ref", "refs/remotes/origin/main", "HEAD")
    (row,) = cluster(plan(bare_cli), "east")["changes"]
    assert (row["kind"], row["action"]) == ("TrainJob", "change")
    assert [f["field"] for f in row["fields"]] == ["labels", "annotations"]


# --- the examples --------------------------------------------------------------------------


def _examples_change(ws: Workspace) -> None:
    """The README's change: a bigger new run of resnet50-ddp, and llama-sft removed."""
    edit(ws.jobs / "vision/resnet50_ddp.py", "    nodes=2,\n", "    run=2,\n    nodes=4,\n")
    (ws.jobs / "llm/llama_sft_trainjob.py").unlink()


def _normalized(text: str) -> str:
    return re.sub(r"origin/main \([0-9a-f]{12}\)", "origin/main (…)", text)


def test_the_examples_against_their_own_commit_are_no_change(deployed: Workspace, cli: Cli) -> None:
    # The text and, in the file, the JSON of the same plan: one run of the examples.
    run = cli("plan", "--json-file", "plan.json")
    assert run.code == 0, run.err
    doc = json.loads((deployed.root / "plan.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    assert [c["changes"] for c in doc["clusters"]] == [[], [], [], []]
    assert doc["argocd"] == []
    # The examples are at step 1 of the move to one Application per team: deployed, it
    # waits for Argo CD (step 2) before step 3.
    assert [step.split(":")[0] for step in doc["migration"]] == ["1 (done)", "2 (now)", "3 (next)"]
    out = run.out
    assert out.split("\n\nMoving to one Application per team")[0].endswith(
        "a800-north: no change\n\ngpu-east: no change\n\n"
        "h100-south: no change\n\nrocm-west: no change"
    )


def test_deployed_jobs_have_the_pods_synth_gives_them(
    ws: Workspace, cli: Cli, _examples_deployed: Path
) -> None:
    """The pods of a deployed job (read back from its YAML) are those of the job as rendered."""
    new = {
        (c["cluster"], r["name"]): r["after"]
        for c in plan(cli)["clusters"]
        for r in c["changes"]
        if r["after"]
    }
    for name in (".git", "generated"):  # ``deploy``, as the session's (``deployed``)
        copy_tree(_examples_deployed / name, ws.root / name)
    for team in ("vision", "llm"):
        for path in (ws.jobs / team).glob("*.py"):
            path.unlink()
    gone = {
        (c["cluster"], r["name"]): r["before"]
        for c in plan(cli)["clusters"]
        for r in c["changes"]
        if r["kind"] in ("PyTorchJob", "MPIJob", "TFJob", "XGBoostJob", "JAXJob", "TrainJob")
    }
    assert len(gone) == 19
    assert gone == {k: v for k, v in new.items() if k in gone}


def test_the_markdown_of_the_examples_is_the_golden_file(deployed: Workspace, cli: Cli) -> None:
    _examples_change(deployed)
    run = cli("plan", "--format", "markdown")
    assert run.code == 0, run.err
    golden = GOLDEN / "examples.md"
    got = _normalized(run.out)
    if UPDATE_GOLDEN:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(got, encoding="utf-8")
    assert got == golden.read_text(encoding="utf-8"), (
        f"the plan's markdown differs from {golden.relative_to(REPO)}; if that is intended, "
        "regenerate it with TRAINKIT_UPDATE_GOLDEN=1 and review the diff"
    )


def test_the_readme_shows_the_plan_of_the_examples(deployed: Workspace, cli: Cli) -> None:
    from doc_blocks import of_kind

    (block,) = of_kind("plan")
    command, expected = block.body.split("\n", 1)
    _examples_change(deployed)
    run = cli(*command.removeprefix("$ trainkit ").split())
    assert run.code == 0, run.err
    assert _normalized(run.out) == expected


def test_a_plan_too_long_for_a_comment_drops_details_then_rows(ws: Workspace) -> None:
    review = build_review(ws.jobs, ws.out)  # no git: every object is added
    full = format_markdown(review.report)
    assert "<details>" in full
    short = format_markdown(review.report, limit=len(full) - 1)
    assert "<details>" not in short
    assert short.endswith("_Queues, teams and jobs left out: the comment would be too long._\n")
    cut = format_markdown(review.report, limit=1500)
    assert len(cut) <= 1500
    assert cut.endswith(
        "_The plan is too long for one comment; run `trainkit plan` for all of it._\n"
    )


def test_a_kueue_cluster_s_plan_shows_its_cluster_queue_held_and_quota(
    deployed: Workspace, cli: Cli
) -> None:
    """On h100-south the RayJob's new run is admitted by ClusterQueue llm beside the TrainJob
    wiki-sft: the plan adds the pods' requests (head, workers, submitter; the TrainJob's node
    and its dataset step; the long-lived RayCluster eval-pool, queued itself) and shows the
    queue's nominal quota."""
    edit(deployed.jobs / "llm/lr_sweep_ray.py", "    run=3,", "    run=4,")
    doc = plan(cli)
    (kueue,) = [c for c in doc["clusters"] if c["cluster"] == "h100-south"]
    (llm,) = [q for q in kueue["queues"] if q["queue"] == "llm"]
    assert llm["kind"] == "ClusterQueue"
    assert llm["after"]["capability"] == {
        "gpu": 16,
        "cpu": "128",
        "memory": "1Ti",
        "other": {},
    }
    # The RayJob: 8 + 2 × 32 CPUs, 16 GPUs, and the submitter's CPU; wiki-sft: a node of
    # 16 CPUs and 8 GPUs, and its dataset step's 2 CPUs (Kueue admits both in one workload);
    # eval-pool: a head of 8 CPUs and 2 workers of 16 CPUs and 4 GPUs.
    assert llm["after"]["requests"]["gpu"] == 16 + 8 + 8
    assert llm["after"]["requests"]["cpu"] == str(73 + 16 + 2 + 40)
    # Above its nominal 16 GPUs and 128 CPUs, lent by h100-spare, which no job uses.
    assert llm["after"]["cohort"] == "h100"
    assert llm["after"]["borrowing"] == {"gpu": 16, "cpu": "3", "memory": None, "other": {}}
    assert llm["after"]["over_capability"] == []
    (spare,) = [q for q in kueue["queues"] if q["queue"] == "h100-spare"]
    assert spare["after"]["borrowing"] is None
    assert spare["after"]["requests"]["gpu"] == 0


def test_the_example_kueue_cluster_s_plan_shows_cohort_borrowing(ws: Workspace) -> None:
    """The issue's "done when": against an empty tree (no git), h100-south's ClusterQueue llm
    is shown against its nominal quota, in cohort h100, borrowing the GPUs its jobs need beyond
    it, in the text and in the pull-request comment."""
    report = build_review(ws.jobs, ws.out).report
    shown = format_text(report)
    assert (
        "  queues: requests if every job in git ran at once, before → after, of the queue's "
        "nominal quota, and what it borrows from its cohort\n"
        "    h100-spare (new) (cohort h100)  GPU 0 of 48   cpu 0 of 384   memory 0 of 3Ti\n"
        "    llm (new) (cohort h100)         GPU 32 of 16, borrows 16   cpu 131 of 128, "
        "borrows 3   memory 969Gi of 1Ti\n"
    ) in shown
    comment = format_markdown(report)
    assert (
        "| `llm` (new) (cohort h100) | 32 of 16, borrows 16 | 131 of 128, borrows 3 | "
        "969Gi of 1Ti |" in comment
    )


def test_huge_pages_are_shown_in_the_unit_of_memory() -> None:
    from decimal import Decimal

    from trainkit.plan.usage import format_amount

    assert format_amount("hugepages-2Mi", Decimal(2 << 30)) == "2Gi"
    assert format_amount("hugepages-1Gi", Decimal(8 << 30)) == "8Gi"
