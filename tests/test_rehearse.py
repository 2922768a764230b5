"""Local rehearsal: real torchrun runs of the examples and fixtures, plus the plan without processes.

Each run starts real processes (torchrun imports torch, ~1 s of CPU per node),
so the runs are few and small: the whole file takes about 40 s on two cores.
PyTorchJobs and TrainJobs share every step but the env and sizes, so a
TrainJob gets real runs only for those (its example and its env contract).
"""

from __future__ import annotations

import io
import json
import os
import re
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

import trainkit.rehearse.runner as runner
from trainkit import (
    DefinitionError,
    PyTorchJob,
    RehearsalError,
    Resources,
    Script,
    SetupError,
    TrainJob,
    Volume,
)
from trainkit.cli import main
from trainkit.injected_env import pytorchjob_env, trainjob_env
from trainkit.load import Definition, load_file
from trainkit.plan import PlannedJob
from trainkit.rehearse import (
    RehearsalPlan,
    choose_job,
    plan_rehearsal,
    plan_trainjob,
    rehearse,
    rehearse_file,
)
from trainkit.rehearse.output import cpu_hints, parse_torchrun_failures

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "data" / "rehearse"
OPERATOR_ENV = set(pytorchjob_env(job_name="x", nodes=1, procs_per_node=1, node_rank=0))


def _job(script: str | None = None, **kw: object) -> PyTorchJob:
    fields: dict[str, object] = {
        "name": "rehearsal",
        "image": "registry.example.com/pytorch:2",
        "resources": Resources(cpu=4, memory="16Gi"),
    }
    if script is not None:
        fields["script"] = Script.file(script)
    fields.update(kw)
    return PyTorchJob(**fields)


def _running(pid: int) -> bool:
    """Whether ``pid`` still runs; a zombie (exited, not yet collected by init) does not."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    if not stat.exists():
        return True
    raw = stat.read_text()
    return raw[raw.rfind(")") + 2] not in "ZX"


def _trainer_tree(tmp_path: Path, job: str) -> Path:
    """A repository with TRAINER_PLATFORM and ``job`` (a TrainJob's source) in jobs/team/."""
    team = tmp_path / "jobs" / "team"
    (team / "scripts").mkdir(parents=True)
    (team / "scripts" / "env_dump.py").write_text((FIXTURES / "env_dump.py").read_text())
    (tmp_path / "jobs" / "platform").mkdir()
    (tmp_path / "jobs" / "platform" / "platform.py").write_text(TRAINER_PLATFORM)
    path = team / "job.py"
    path.write_text(f"from trainkit import Resources, Script, TrainJob\n\njob = {job}\n")
    return path


TRAINER_PLATFORM = """\
from trainkit import Cluster, ClusterTrainingRuntime, Resources, Team

local = Cluster(name="local", server="https://local.example.com", gpus_per_node=8,
                scheduler="default")
other = Cluster(name="other", server="https://other.example.com", gpus_per_node=8,
                scheduler="default")
team = Team(name="team", clusters=["other", "local"])

cpu = ClusterTrainingRuntime(
    name="cpu",
    image="img:local",
    nodes=2,
    resources=Resources(cpu=2, memory="4Gi"),
    env={"USER_FROM_RUNTIME": "runtime", "USER_SHARED": "runtime"},
    clusters=["local"],
)
cpu_other = ClusterTrainingRuntime(
    name="cpu", image="img:other", env={"USER_FROM_RUNTIME": "other"}, clusters=["other"]
)
gpu = ClusterTrainingRuntime(
    name="gpu",
    image="img:cuda",
    nodes=4,
    resources=Resources(cpu=16, memory="64Gi", gpu=8),
    shm_size="16Gi",
    env={"NCCL_DEBUG": "WARN"},
)
"""


# -- the examples under jobs/ ------------------------------------------------------------------


def _assert_every_rank_has_the_same_model(text: str) -> None:
    found = re.findall(
        r"^\[node(\d)/rank(\d)\] checksum=(-?\d+\.\d{6}) rank=(\d) world=(\d)$", text, re.MULTILINE
    )
    assert sorted((int(n), int(r)) for n, r, *_ in found) == [(0, 0), (0, 1), (1, 2), (1, 3)]
    assert all(r == rank and w == "4" for _, r, _, rank, w in found)  # prefix is the real rank
    assert len({c for _, _, c, _, _ in found}) == 1, text
    assert "[node0/rank0] epoch 10/10 loss=" in text


def test_ddp_example_2x2_every_rank_has_the_same_model() -> None:
    out = io.StringIO()
    report = rehearse_file(
        REPO / "jobs/vision/resnet50_ddp.py", nodes=2, procs_per_node=2, timeout=240, out=out
    )
    text = out.getvalue()
    _assert_every_rank_has_the_same_model(text)
    assert (report.nodes, report.procs_per_node, report.world_size) == (2, 2, 4)
    assert report.file == "jobs/vision/resnet50_ddp.py"
    assert "procs_per_node 8 → 2 (--procs-per-node)" in report.changes
    assert any(c.startswith("resources.gpu 8 → 0 (CPU rehearsal") for c in report.changes)
    assert "[rehearse] succeeded: 2 node(s) × 2 process(es)" in text


def test_trainjob_example_2x2_with_its_first_clusters_runtime() -> None:
    out = io.StringIO()
    # No sizes given: the runtime's 8 GPUs per node are capped like a PyTorchJob's.
    report = rehearse_file(REPO / "jobs/vision/resnet50_trainjob.py", timeout=240, out=out)
    text = out.getvalue()
    _assert_every_rank_has_the_same_model(text)
    assert (report.kind, report.nodes, report.procs_per_node) == ("TrainJob", 2, 2)
    assert report.runtime == "ClusterTrainingRuntime 'torch-2-5' of cluster 'gpu-east'"
    assert (
        "[rehearse] TrainJob 'resnet50' runs on clusters gpu-east, rocm-west; rehearsing with "
        "the runtime of its first cluster, gpu-east"
    ) in text
    assert "[rehearse] runtime: ClusterTrainingRuntime 'torch-2-5' of cluster " in text
    assert "node 1 (resnet50-r1-node-0-1): " in text
    changes = "\n".join(report.changes)
    assert (
        "procs_per_node (one per GPU, from runtime 'torch-2-5') 8 → 2 (rehearsal default" in changes
    )
    assert "resources.gpu 8 → 0 (CPU rehearsal" in changes
    assert "PET_MASTER_ADDR resnet50-r1-node-0-0.resnet50-r1 → 127.0.0.1" in changes


def test_fsdp_example_runs_on_cpu_and_gets_its_env(tmp_path: Path) -> None:
    definition = REPO / "jobs/llm/llama_finetune_fsdp.py"
    (job,) = [d.obj for d in load_file(definition).definitions]
    assert isinstance(job, PyTorchJob)
    data = tmp_path / "data"
    data.mkdir()
    (data / "corpus.txt").write_text("the quick brown fox jumps over the lazy dog. " * 40)
    output = tmp_path / "output"
    output.mkdir()
    job = job.model_copy(
        update={"env": {**job.env, "TRAIN_DATA_PATH": str(data), "OUTPUT_PATH": str(output)}}
    )
    out = io.StringIO()
    report = rehearse(
        job,
        source_dir=definition.parent,
        file="jobs/llm/llama_finetune_fsdp.py",
        nodes=2,
        procs_per_node=1,
        timeout=240,
        out=out,
    )
    text = out.getvalue()
    done = re.findall(
        r"^\[node(\d)/rank(\d)\] done strategy=(\w+) steps=12 .* world=2 ", text, re.MULTILINE
    )
    assert sorted((n, r) for n, r, _ in done) == [("0", "0"), ("1", "1")], text
    strategies = {s for *_, s in done}
    if _torch_at_least(2, 6):  # fully_shard (FSDP2) is public and runs on CPU with gloo
        assert strategies == {"fsdp2"}, text
    else:
        assert len(strategies) == 1, text
    assert f"TRAIN_DATA_PATH={data}: 1 file(s)" in text
    assert (output / "finetuned.pt").stat().st_size > 0
    changes = "\n".join(report.changes)
    assert "nodes 4 → 2 (--nodes)" in changes
    assert "procs_per_node (one per GPU) 8 → 1 (--procs-per-node)" in changes
    assert "env CUDA_DEVICE_MAX_CONNECTIONS, NCCL_DEBUG, NCCL_IB_DISABLE: GPU settings" in changes
    assert "volume 'llm-datasets' at /mnt/data is not mounted" in changes


def _torch_at_least(major: int, minor: int) -> bool:
    got = tuple(int(x) for x in re.findall(r"\d+", version("torch"))[:2])
    return got >= (major, minor)


# -- failures, timeouts, cleanup -----------------------------------------------------------------


def test_a_failing_rank_fails_the_rehearsal_and_is_named() -> None:
    out = io.StringIO()
    with pytest.raises(RehearsalError) as err:
        rehearse(
            _job("fail_rank2.py", nodes=2, procs_per_node=2),
            source_dir=FIXTURES,
            file="jobs/team/fail.py",
            timeout=120,
            out=out,
        )
    message = str(err.value)
    assert "rank 2 on node 1 (pod rehearsal-worker-0, local rank 0) exited with code 3" in message
    assert "last lines of node1/rank2:" in message
    assert "  | rank 2 loading batch 17" in message
    assert "  | loss is nan at step 17; giving up" in message
    assert err.value.problems[0].file == "jobs/team/fail.py"
    assert "[node1/rank2] loss is nan at step 17; giving up" in out.getvalue()


def test_a_hung_rehearsal_is_stopped_at_the_timeout_and_nothing_survives(tmp_path: Path) -> None:
    env = {"PID_DIR": str(tmp_path), "IGNORE_SIGTERM_RANK": "0"}
    job = _job("hang.py", nodes=2, procs_per_node=2, env=env)
    out = io.StringIO()
    with pytest.raises(RehearsalError, match=r"timed out after 3 s \(--timeout\)") as err:
        rehearse(job, source_dir=FIXTURES, timeout=3, out=out)
    assert "every process of the rehearsal was stopped" in str(err.value)
    records = sorted(tmp_path.glob("rank*.pid"))
    assert [p.name for p in records] == ["rank0.pid", "rank1.pid", "rank2.pid", "rank3.pid"], (
        out.getvalue()
    )
    pids = {int(pid) for p in records for pid in p.read_text().split()}
    assert len(pids) == 4 + 2 + 4  # four ranks, two launchers, four children
    assert not [pid for pid in pids if _running(pid)]


def test_keyboard_interrupt_stops_every_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = _job("hang.py", nodes=1, procs_per_node=1, env={"PID_DIR": str(tmp_path)})
    real_pump = runner._Run._pump

    interrupted = []

    def pump(self: runner._Run, final: bool = False) -> bool:  # Ctrl-C once the rank waits
        got = real_pump(self, final)
        if not interrupted and any("waiting forever" in line for line in self.recent):
            interrupted.append(True)
            raise KeyboardInterrupt
        return got

    monkeypatch.setattr(runner._Run, "_pump", pump)
    out = io.StringIO()
    with pytest.raises(KeyboardInterrupt):
        rehearse(job, source_dir=FIXTURES, timeout=120, out=out)
    assert "[rehearse] interrupted; every process of the rehearsal was stopped" in out.getvalue()
    pids = [int(pid) for pid in (tmp_path / "rank0.pid").read_text().split()]
    assert not [pid for pid in pids if _running(pid)]


# -- the env contract ----------------------------------------------------------------------------


def _dumps(directory: Path, out: io.StringIO) -> dict[int, dict[str, Any]]:
    """What env_dump.py recorded for each rank of a 2x2 run."""
    dumps = {int(p.stem[4:]): json.loads(p.read_text()) for p in directory.glob("rank*.json")}
    assert sorted(dumps) == [0, 1, 2, 3], out.getvalue()
    return dumps


def _node_env_2x2(rank: int, port: str) -> dict[str, str]:
    """PET_* of rank's node, what torchrun sets from them, and the rehearsal's CPU settings."""
    node = rank // 2
    return {
        "PET_NNODES": "2",
        "PET_NPROC_PER_NODE": "2",
        "PET_NODE_RANK": str(node),
        "PET_MASTER_ADDR": "127.0.0.1",
        "PET_MASTER_PORT": port,
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": port,
        "WORLD_SIZE": "4",
        "RANK": str(rank),
        "LOCAL_RANK": str(rank % 2),
        "GROUP_RANK": str(node),
        "LOCAL_WORLD_SIZE": "2",
        "CUDA_VISIBLE_DEVICES": "",
        "OMP_NUM_THREADS": "1",
    }


def test_every_rank_sees_the_operator_env_the_user_env_and_args(tmp_path: Path) -> None:
    job = _job(
        "env_dump.py",
        nodes=2,
        resources=Resources(cpu=8, memory="32Gi", gpu=4),  # 4 procs per node by default
        args=["--flag", "two words", "--config=/workspace/config.yaml"],
        env={
            "DUMP_DIR": str(tmp_path),
            "USER_GREETING": "hello",
            "USER_CONFIG": "/workspace/config.yaml",
            "NCCL_DEBUG": "INFO",
        },
    )
    out = io.StringIO()
    report = rehearse(job, source_dir=FIXTURES, timeout=120, out=out)
    ports = set()
    for rank, d in _dumps(tmp_path, out).items():
        env, node = d["env"], rank // 2
        workspace = Path(d["script"]).parent
        ports.add(env["PET_MASTER_PORT"])
        assert env == {
            **_node_env_2x2(rank, env["PET_MASTER_PORT"]),
            # the operator's beyond PET_* (MASTER_*, RANK, WORLD_SIZE as torchrun rewrites them)
            "PYTHONUNBUFFERED": "1",
            # the job's
            "USER_GREETING": "hello",
            "USER_CONFIG": f"{workspace}/config.yaml",
        }
        assert d["argv"] == ["--flag", "two words", f"--config={workspace}/config.yaml"]
        assert Path(d["cwd"]) == workspace
        assert Path(d["script"]).name == "env_dump.py"
        assert f"[node{node}/rank{rank}] dumped the env of rank {rank}" in out.getvalue()
    assert len(ports) == 1 and ports != {"23456"}
    changes = "\n".join(report.changes)
    assert "procs_per_node (one per GPU) 4 → 2 (rehearsal default" in changes
    assert "resources.gpu 4 → 0 (CPU rehearsal" in changes
    assert "env NCCL_DEBUG: GPU settings, passed on but ignored on CPU" in changes
    assert "MASTER_ADDR rehearsal-master-0 → 127.0.0.1" in changes
    assert "[rehearse] changed for the rehearsal:" in out.getvalue()


def test_a_command_job_gets_the_node_env_without_torchrun(tmp_path: Path) -> None:
    job = _job(
        command=["python", str(FIXTURES / "env_dump.py")],
        args=["--x"],
        nodes=3,
        env={"DUMP_DIR": str(tmp_path)},
    )
    out = io.StringIO()
    rehearse(job, nodes=3, timeout=60, out=out)
    dumps = {int(p.stem[4:]): json.loads(p.read_text()) for p in tmp_path.glob("rank*.json")}
    assert sorted(dumps) == [0, 1, 2]
    for node, d in dumps.items():
        env = {k: v for k, v in d["env"].items() if k in OPERATOR_ENV}
        assert env == pytorchjob_env(
            job_name="rehearsal",
            nodes=3,
            procs_per_node=1,
            node_rank=node,
            master_addr="127.0.0.1",
            master_port=int(env["MASTER_PORT"]),
        )
        assert d["argv"] == ["--x"]
        assert f"[node{node}] dumped the env of rank {node}" in out.getvalue()


def test_a_trainjob_gets_trainers_env_and_its_runtimes_under_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A shell (CI, or one inside a PyTorchJob) may carry what only the Training
    # Operator sets; none of it may reach a TrainJob's nodes.
    for name, value in {"PYTHONUNBUFFERED": "1", "MASTER_ADDR": "elsewhere", "RANK": "7"}.items():
        monkeypatch.setenv(name, value)
    dump = tmp_path / "dump"
    dump.mkdir()
    path = _trainer_tree(
        tmp_path,
        f"""TrainJob(
    name="envcheck",
    runtime="cpu",  # 2 nodes of 2 CPUs: Trainer's "auto" gives 2 processes per node
    script=Script.file("scripts/env_dump.py"),
    args=["--config=/workspace/c.yaml"],
    env={{"USER_SHARED": "job", "DUMP_DIR": {str(dump)!r}}},
    clusters=["local"],
)""",
    )
    out = io.StringIO()
    report = rehearse_file(path, timeout=120, out=out)
    ports = set()
    for rank, d in _dumps(dump, out).items():
        env = d["env"]
        workspace = Path(d["script"]).parent
        ports.add(env["PET_MASTER_PORT"])
        assert env == {
            # Trainer's five PET_* and what torchrun derives from them; no PYTHONUNBUFFERED
            **_node_env_2x2(rank, env["PET_MASTER_PORT"]),
            # the runtime's and the job's (which wins)
            "USER_FROM_RUNTIME": "runtime",
            "USER_SHARED": "job",
        }
        assert d["argv"] == [f"--config={workspace}/c.yaml"]
        assert Path(d["cwd"]) == workspace
    assert len(ports) == 1 and ports != {"29500"}
    assert (report.kind, report.nodes, report.procs_per_node) == ("TrainJob", 2, 2)
    assert report.runtime == "ClusterTrainingRuntime 'cpu' of cluster 'local'"
    text = out.getvalue()
    assert "[rehearse] runtime: ClusterTrainingRuntime 'cpu' of cluster 'local' (jobs/" in text
    assert "runs on clusters" not in text  # one cluster: nothing to choose
    assert "node 1 (envcheck-r1-node-0-1): " in text
    changes = "\n".join(report.changes)
    assert "not inherited from this shell: PYTHONUNBUFFERED (Kubeflow Trainer does not set it" in (
        changes
    )


# -- setup errors and the plan, without processes ----------------------------------------------


def test_missing_torch_is_a_setup_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "find_spec", lambda name: None)
    with pytest.raises(SetupError, match=re.escape("pip install -e '.[rehearse]'")):
        rehearse(_job("env_dump.py"), source_dir=FIXTURES)
    with pytest.raises(SetupError, match="PyTorch is not installed"):
        rehearse_file(REPO / "jobs/vision/resnet50_ddp.py")


def test_trainkit_does_not_import_torch() -> None:
    import subprocess

    code = "import sys, trainkit, trainkit.rehearse; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


MULTI = """\
from trainkit import PyTorchJob, Resources, Script, TrainJob

a = PyTorchJob(name="a", image="img:1", script=Script.file("scripts/t.py"),
               resources=Resources(cpu=1, memory="1Gi"))
b = TrainJob(name="b", runtime="cpu", script=Script.file("scripts/t.py"))
"""


def test_choosing_the_job_in_a_file(tmp_path: Path) -> None:
    team = tmp_path / "jobs" / "team"
    (team / "scripts").mkdir(parents=True)
    (team / "scripts" / "t.py").write_text("print('hi')\n")
    (team / "two.py").write_text(MULTI)
    with pytest.raises(
        RehearsalError,
        match=r"2 jobs here \(PyTorchJob 'a', TrainJob 'b'\); choose one with --job NAME$",
    ):
        rehearse_file(team / "two.py")
    with pytest.raises(
        RehearsalError,
        match=r"no job named 'c' here; the file defines PyTorchJob 'a', TrainJob 'b'$",
    ):
        rehearse_file(team / "two.py", job_name="c")
    with pytest.raises(RehearsalError, match="no PyTorchJob or TrainJob in this file"):
        rehearse_file(REPO / "jobs/platform/teams.py")
    loaded = load_file(team / "two.py").definitions
    assert choose_job(loaded, "b", "two.py").obj.describe() == "TrainJob 'b'"
    # A TrainJob is planned, and there is no platform here to plan it with.
    with pytest.raises(DefinitionError, match="no Cluster is defined"):
        rehearse_file(team / "two.py", job_name="b")


def test_choosing_between_jobs_of_one_name() -> None:
    job = _job("t.py", name="same")
    train = TrainJob(name="same", runtime="cpu", script=Script.file("t.py"))
    loaded = [Definition(obj=o, file="jobs/team/x.py", team="team") for o in (job, train)]
    with pytest.raises(
        RehearsalError,
        match=r"2 jobs named 'same' here \(PyTorchJob 'same', TrainJob 'same'\); choose one "
        r"with --job KIND/NAME, e.g. --job PyTorchJob/same",
    ):
        choose_job(loaded, "same", "jobs/team/x.py")
    assert choose_job(loaded, "TrainJob/same", "x.py").obj is train
    assert choose_job(loaded, "PyTorchJob/same", "x.py").obj is job


def test_an_unknown_runtime_fails_the_command_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _trainer_tree(
        tmp_path, 'TrainJob(name="lost", runtime="nope", script=Script.file("scripts/env_dump.py"))'
    )
    assert main(["rehearse", str(path)]) == 1
    err = capsys.readouterr().err
    assert (
        "error: jobs/team/job.py:3: TrainJob 'lost': runtime: unknown runtime 'nope' on "
        "cluster 'local'; runtimes there: ClusterTrainingRuntime 'cpu', "
        "ClusterTrainingRuntime 'gpu'"
    ) in err
    assert "trainkit rehearse: " in err and "error(s)" in err


def test_trainjob_plan_runtime_defaults_capped_like_a_pytorchjob(tmp_path: Path) -> None:
    path = _trainer_tree(
        tmp_path, 'TrainJob(name="big", runtime="gpu", script=Script.file("scripts/env_dump.py"))'
    )
    (d,) = load_file(path).definitions
    first, second = plan_trainjob(d, tmp_path / "jobs")
    assert (first.cluster.name, second.cluster.name) == ("other", "local")  # the team's order
    plan = _plan(first, tmp_path, base_env=SHELL)
    assert (plan.nodes, plan.procs_per_node) == (2, 2)
    # Capped and downgraded word for word as a PyTorchJob of the same size, but for the labels.
    same = _job("t.py", nodes=4, resources=Resources(cpu=16, memory="64Gi", gpu=8))
    as_pytorchjob = [
        c.replace("nodes 4 →", "nodes (from runtime 'gpu') 4 →").replace(
            "(one per GPU)", "(one per GPU, from runtime 'gpu')"
        )
        for c in _plan(same, tmp_path).changes[:3]
    ]
    assert list(plan.changes[:3]) == as_pytorchjob
    assert as_pytorchjob[1].startswith("procs_per_node (one per GPU, from runtime 'gpu') 8 → 2")
    assert as_pytorchjob[2].startswith("resources.gpu 8 → 0 (CPU rehearsal")
    changes = "\n".join(plan.changes)
    for expected in [
        "PET_MASTER_ADDR big-r1-node-0-0.big-r1 → 127.0.0.1 and PET_MASTER_PORT 29500 → 40000",
        "not inherited from this shell (Kubeflow Trainer, torchrun or the rehearsal sets them): "
        "CUDA_VISIBLE_DEVICES, LOCAL_RANK, MASTER_ADDR, PET_NNODES, RANK, TORCHELASTIC_RUN_ID",
        "not inherited from this shell: PYTHONUNBUFFERED (Kubeflow Trainer does not set it",
        "env NCCL_DEBUG: GPU settings, passed on but ignored on CPU",
        "shm_size 16Gi: not applied",
        "resources.cpu 16 and memory 64Gi per node are not enforced",
        "PET_NPROC_PER_NODE 'auto' → 2 (on the cluster torchrun starts one process per GPU",
    ]:
        assert expected in changes
    for launch in plan.launches:
        assert dict(launch.env) == {
            "PATH": "/venv/bin:/usr/bin",
            "HOME": "/root",
            "NCCL_DEBUG": "WARN",
            "CUDA_VISIBLE_DEVICES": "",
            "OMP_NUM_THREADS": "1",
            **trainjob_env(trainjob="big-r1", **_at(launch.node_rank)),
        }
        assert launch.argv[-1] == str(tmp_path / "ws" / "env_dump.py")


def test_trainjob_first_cluster_is_the_jobs_own_first(tmp_path: Path) -> None:
    path = _trainer_tree(
        tmp_path,
        'TrainJob(name="pick", runtime="cpu", script=Script.file("scripts/env_dump.py"), '
        'clusters=["local", "other"], env={"USER_SHARED": "job"})',
    )
    (d,) = load_file(path).definitions
    planned = plan_trainjob(d, tmp_path / "jobs")
    assert [p.cluster.name for p in planned] == ["local", "other"]
    local, other = (_plan(p, tmp_path) for p in planned)
    assert local.target.image == "img:local" and other.target.image == "img:other"
    assert local.launches[0].env["USER_FROM_RUNTIME"] == "runtime"
    assert other.launches[0].env["USER_FROM_RUNTIME"] == "other"
    assert other.launches[0].env["USER_SHARED"] == "job"
    # img:other's runtime gives no sizes: one node of one process, and no resources to mention.
    assert (other.nodes, other.procs_per_node) == (1, 1)
    assert not [c for c in other.changes if "resources" in c]


def test_plan_defaults_cap_the_size_and_list_every_change(tmp_path: Path) -> None:
    job = _job(
        "train.py",
        nodes=4,
        resources=Resources(cpu=64, memory="512Gi", gpu=8),
        env={"NCCL_IB_DISABLE": "0", "DATA": "/mnt/data/x"},
        shm_size="20Gi",
        volumes=[Volume(claim="datasets", path="/mnt/does-not-exist-here")],
        restart_policy="ExitCode",
    )
    plan = _plan(job, tmp_path, base_env=SHELL)
    assert (plan.nodes, plan.procs_per_node) == (2, 2)
    assert plan.changes[:2] == (
        "nodes 4 → 2 (rehearsal default on one CPU machine; pass --nodes 4 to rehearse the "
        "full size)",
        "procs_per_node (one per GPU) 8 → 2 (rehearsal default on one CPU machine; pass "
        "--procs-per-node 8 to rehearse the full size)",
    )
    changes = "\n".join(plan.changes)
    for expected in [
        "resources.gpu 8 → 0",
        "MASTER_ADDR rehearsal-master-0 → 127.0.0.1 and MASTER_PORT 23456 → 40000",
        f"/workspace → {tmp_path / 'ws'} (holds train.py",
        "not inherited from this shell (the operator, torchrun or the rehearsal sets them): "
        "CUDA_VISIBLE_DEVICES, LOCAL_RANK, MASTER_ADDR, PET_NNODES, RANK, TORCHELASTIC_RUN_ID",
        "env NCCL_IB_DISABLE: GPU settings, passed on but ignored on CPU",
        "shm_size 20Gi: not applied",
        "volume 'datasets' at /mnt/does-not-exist-here is not mounted "
        "(/mnt/does-not-exist-here does not exist on this machine)",
        "restart_policy ExitCode: no restarts",
        "resources.cpu 64 and memory 512Gi per node are not enforced",
    ]:
        assert expected in changes
    for launch in plan.launches:
        env = dict(launch.env)
        assert {k: env[k] for k in OPERATOR_ENV} == pytorchjob_env(
            job_name="rehearsal", **_at(launch.node_rank)
        )
        assert "LOCAL_RANK" not in env and "TORCHELASTIC_RUN_ID" not in env
        assert env["CUDA_VISIBLE_DEVICES"] == "" and env["HOME"] == "/root"
        assert env["PATH"] == "/venv/bin:/usr/bin"
        assert launch.argv == (
            "/venv/bin/python",
            "-m",
            "torch.distributed.run",
            "--redirects",
            "3",
            "--log-dir",
            str(tmp_path / "logs" / f"node{launch.node_rank}"),
            str(tmp_path / "ws" / "train.py"),
        )


SHELL = {
    "PATH": "/usr/bin",
    "HOME": "/root",
    "MASTER_ADDR": "elsewhere",
    "RANK": "7",
    "LOCAL_RANK": "3",
    "PET_NNODES": "9",
    "TORCHELASTIC_RUN_ID": "x",
    "CUDA_VISIBLE_DEVICES": "0",
    "PYTHONUNBUFFERED": "1",
}
"""A shell inside a PyTorchJob's pod, as far as a rehearsal started there could see."""


def _at(node_rank: int) -> dict[str, Any]:
    """Where node ``node_rank`` of a 2x2 ``_plan`` is, as the injected_env functions take it."""
    return {
        "nodes": 2,
        "procs_per_node": 2,
        "node_rank": node_rank,
        "master_addr": "127.0.0.1",
        "master_port": 40000,
    }


def _plan(
    job: PyTorchJob | PlannedJob,
    tmp_path: Path,
    nodes: int | None = None,
    procs_per_node: int | None = None,
    base_env: dict[str, str] | None = None,
) -> RehearsalPlan:
    return plan_rehearsal(
        job,
        workspace=tmp_path / "ws",
        log_dir=tmp_path / "logs",
        master_port=40000,
        nodes=nodes,
        procs_per_node=procs_per_node,
        base_env=base_env,
        python="/venv/bin/python",
    )


def test_plan_explicit_sizes_and_bad_sizes(tmp_path: Path) -> None:
    job = _job("train.py", nodes=2, procs_per_node=2)
    plan = _plan(job, tmp_path, nodes=3, procs_per_node=2)
    assert (plan.nodes, plan.procs_per_node) == (3, 2)
    assert "nodes 2 → 3 (--nodes)" in plan.changes
    assert not [c for c in plan.changes if c.startswith("procs_per_node")]
    with pytest.raises(RehearsalError, match="--procs-per-node must be at least 1"):
        _plan(job, tmp_path, procs_per_node=0)


def test_plan_command_jobs(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("")
    torchrun = _job(command=["torchrun", "--nproc-per-node=1", str(script)], args=["--a"])
    (launch,) = _plan(torchrun, tmp_path).launches
    assert launch.torchrun
    assert launch.argv[:3] == ("/venv/bin/python", "-m", "torch.distributed.run")
    assert launch.argv[-3:] == ("--nproc-per-node=1", str(script), "--a")
    python = _job(command=["python3", str(script)], args=["--config=/workspace/c.yaml"])
    (launch,) = _plan(python, tmp_path).launches
    assert launch.argv == (
        "/venv/bin/python",
        str(script),
        f"--config={tmp_path / 'ws'}/c.yaml",
    )
    assert not launch.torchrun
    shell = _job(command=["bash", "-c", "echo hi"])
    (launch,) = _plan(shell, tmp_path).launches
    assert launch.argv == ("bash", "-c", "echo hi")
    in_image = _job(command=["python", "/app/train.py"])
    with pytest.raises(RehearsalError, match=r"/app/train.py is not on this machine: a command"):
        _plan(in_image, tmp_path)


def test_reading_torchrun_failures_and_cpu_hints() -> None:
    summary = """\
Failures:
[1]:
  time      : 2026-01-01_00:00:01
  host      : localhost
  rank      : 3 (local_rank: 1)
  exitcode  : -15 (pid: 42)  (SIGTERM)
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-01-01_00:00:01
  rank      : 2 (local_rank: 0)
  exitcode  : 3 (pid: 41)
"""
    failures = parse_torchrun_failures(summary)
    assert [(f.rank, f.local_rank, f.exitcode, f.root_cause) for f in failures] == [
        (3, 1, -15, False),
        (2, 0, 3, True),
    ]
    (nccl,) = cpu_hints(["RuntimeError: Distributed package doesn't have NCCL built in"])
    assert "NCCL backend, which needs GPUs" in nccl and "gloo" in nccl
    (cuda,) = cpu_hints(["AssertionError: Torch not compiled with CUDA enabled"])
    assert "torch.cuda.is_available()" in cuda
    assert cpu_hints(["ValueError: something else"]) == []
