"""Local rehearsal: real torchrun runs of the examples and fixtures, plus the plan without processes.

Each run starts real processes (torchrun imports torch, ~1 s of CPU per node),
so the runs are few and small: the whole file takes about half a minute on two
cores.
"""

from __future__ import annotations

import io
import json
import os
import re
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

import trainkit.rehearse.runner as runner
from trainkit import PyTorchJob, RehearsalError, Resources, Script, SetupError, Volume
from trainkit.injected_env import pytorchjob_env
from trainkit.load import load_file
from trainkit.rehearse import RehearsalPlan, plan_rehearsal, rehearse, rehearse_file
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


# -- the examples under jobs/ ------------------------------------------------------------------


def test_ddp_example_2x2_every_rank_has_the_same_model() -> None:
    out = io.StringIO()
    report = rehearse_file(
        REPO / "jobs/vision/resnet50_ddp.py", nodes=2, procs_per_node=2, timeout=240, out=out
    )
    text = out.getvalue()
    found = re.findall(
        r"^\[node(\d)/rank(\d)\] checksum=(-?\d+\.\d{6}) rank=(\d) world=(\d)$", text, re.MULTILINE
    )
    assert sorted((int(n), int(r)) for n, r, *_ in found) == [(0, 0), (0, 1), (1, 2), (1, 3)]
    assert all(r == rank and w == "4" for _, r, _, rank, w in found)  # prefix is the real rank
    assert len({c for _, _, c, _, _ in found}) == 1, text
    assert "[node0/rank0] epoch 10/10 loss=" in text
    assert (report.nodes, report.procs_per_node, report.world_size) == (2, 2, 4)
    assert report.file == "jobs/vision/resnet50_ddp.py"
    assert "procs_per_node 8 → 2 (--procs-per-node)" in report.changes
    assert any(c.startswith("resources.gpu 8 → 0 (CPU rehearsal") for c in report.changes)
    assert "[rehearse] succeeded: 2 node(s) × 2 process(es)" in text


def test_fsdp_example_runs_on_cpu_and_gets_its_env(tmp_path: Path) -> None:
    definition = REPO / "jobs/llm/llama_finetune_fsdp.py"
    (job,) = [d.obj for d in load_file(definition)]
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
    dumps = {int(p.stem[4:]): json.loads(p.read_text()) for p in tmp_path.glob("rank*.json")}
    assert sorted(dumps) == [0, 1, 2, 3], out.getvalue()
    ports = set()
    for rank, d in dumps.items():
        env, node, local = d["env"], rank // 2, rank % 2
        workspace = Path(d["script"]).parent
        ports.add(env["MASTER_PORT"])
        assert env == {
            # the operator's, for this node (RANK/WORLD_SIZE as torchrun rewrites them)
            "MASTER_ADDR": "127.0.0.1",
            "PET_MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": env["PET_MASTER_PORT"],
            "PET_MASTER_PORT": env["MASTER_PORT"],
            "PET_NNODES": "2",
            "PET_NPROC_PER_NODE": "2",
            "PET_NODE_RANK": str(node),
            "PYTHONUNBUFFERED": "1",
            "WORLD_SIZE": "4",
            # torchrun's
            "RANK": str(rank),
            "LOCAL_RANK": str(local),
            "GROUP_RANK": str(node),
            "LOCAL_WORLD_SIZE": "2",
            # the rehearsal's and the job's
            "CUDA_VISIBLE_DEVICES": "",
            "OMP_NUM_THREADS": "1",
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
from trainkit import PyTorchJob, Resources, Script

a = PyTorchJob(name="a", image="img:1", script=Script.file("scripts/t.py"),
               resources=Resources(cpu=1, memory="1Gi"))
b = PyTorchJob(name="b", image="img:1", script=Script.file("scripts/t.py"),
               resources=Resources(cpu=1, memory="1Gi"))
"""


def test_choosing_the_job_in_a_file(tmp_path: Path) -> None:
    team = tmp_path / "jobs" / "team"
    (team / "scripts").mkdir(parents=True)
    (team / "scripts" / "t.py").write_text("print('hi')\n")
    (team / "two.py").write_text(MULTI)
    with pytest.raises(RehearsalError, match=r"2 PyTorchJobs here \('a', 'b'\); choose one with"):
        rehearse_file(team / "two.py")
    with pytest.raises(RehearsalError, match=r"no PyTorchJob named 'c' here; .* 'a', 'b'"):
        rehearse_file(team / "two.py", job_name="c")
    with pytest.raises(RehearsalError, match="no PyTorchJob in this file"):
        rehearse_file(REPO / "jobs/platform/teams.py")


def test_plan_defaults_cap_the_size_and_list_every_change(tmp_path: Path) -> None:
    job = _job(
        "train.py",
        nodes=4,
        resources=Resources(cpu=64, memory="512Gi", gpu=8),
        env={"NCCL_IB_DISABLE": "0", "CUDA_VISIBLE_DEVICES": "0,1", "DATA": "/mnt/data/x"},
        shm_size="20Gi",
        volumes=[Volume(claim="datasets", path="/mnt/does-not-exist-here")],
        restart_policy="ExitCode",
    )
    inherited = {
        "PATH": "/usr/bin",
        "HOME": "/root",
        "MASTER_ADDR": "elsewhere",
        "RANK": "7",
        "LOCAL_RANK": "3",
        "PET_NNODES": "9",
        "TORCHELASTIC_RUN_ID": "x",
        "CUDA_VISIBLE_DEVICES": "0",
    }
    plan = plan_rehearsal(
        job,
        workspace=tmp_path / "ws",
        log_dir=tmp_path / "logs",
        master_port=40000,
        base_env=inherited,
        python="/venv/bin/python",
    )
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
        "env CUDA_VISIBLE_DEVICES '0,1' → '' (CPU rehearsal)",
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
            job_name="rehearsal",
            nodes=2,
            procs_per_node=2,
            node_rank=launch.node_rank,
            master_addr="127.0.0.1",
            master_port=40000,
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


def _plan(
    job: PyTorchJob, tmp_path: Path, nodes: int | None = None, procs_per_node: int | None = None
) -> RehearsalPlan:
    return plan_rehearsal(
        job,
        workspace=tmp_path / "ws",
        log_dir=tmp_path / "logs",
        master_port=1,
        nodes=nodes,
        procs_per_node=procs_per_node,
        python="/py",
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
    assert launch.argv[:3] == ("/py", "-m", "torch.distributed.run")
    assert launch.argv[-3:] == ("--nproc-per-node=1", str(script), "--a")
    python = _job(command=["python3", str(script)], args=["--config=/workspace/c.yaml"])
    (launch,) = _plan(python, tmp_path).launches
    assert launch.argv == ("/py", str(script), f"--config={tmp_path / 'ws'}/c.yaml")
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
