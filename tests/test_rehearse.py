"""Local rehearsal: the plan as pure data, process handling without torch, one torchrun run.

What a rehearsal runs (sizes, env, image, command, layout, the list of changes)
is read from the effective pods and checked here without starting a process.
Starting, streaming, naming failures and stopping are checked with command jobs
whose processes never import torch. Only one test starts torchrun (2 launchers,
workers that do not import torch); the DDP example of docs/jobs.md (2 × 1 ranks,
one epoch), a real training run, is executed by tests/test_docs.py.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import trainkit.rehearse.runner as runner
from conftest import ClockFrozenUntil
from trainkit import (
    DefinitionError,
    PyTorchJob,
    RehearsalError,
    Resources,
    Script,
    SecretKey,
    SetupError,
    Team,
    TrainJob,
    Volume,
)
from trainkit.cli import main
from trainkit.effective import EnvVar
from trainkit.injected_env.kubeflow_trainer_env import trainjob_env
from trainkit.injected_env.training_operator_env import pytorchjob_env
from trainkit.load import Definition, load_file, server
from trainkit.model import TrainkitModel
from trainkit.rehearse import (
    Protection,
    ReadOnly,
    RehearsalPlan,
    Target,
    choose_job,
    plan_job,
    plan_rehearsal,
    prepare_workspace,
    rehearse,
    rehearse_file,
    target_of,
    targets_for,
)
from trainkit.rehearse.output import cpu_hints, parse_torchrun_failures
from trainkit.rehearse.procs import Proc, forget_ended, process_table
from trainkit.rehearse.ray_run import RayRun
from trainkit.rehearse.runner import _Run
from trainkit.rehearse.stopping import QUIET_SCAN_SECONDS, SCAN_SECONDS, ScanPace
from trainkit.render.kubeflow_trainer import render_trainjob

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "data" / "rehearse"
OPERATOR_ENV = set(pytorchjob_env(job_name="x", nodes=1, procs_per_node=1, node_rank=0))

TRAINER_PLATFORM = """\
from trainkit import Cluster, ClusterTrainingRuntime, Resources, Team

local = Cluster(name="local", server="https://local.example.com", gpus_per_node=8,
                scheduler="default", accelerator="cuda")
other = Cluster(name="other", server="https://other.example.com", gpus_per_node=8,
                scheduler="default", gpu_resource="amd.com/gpu", accelerator="rocm")
team = Team(name="team", clusters=["local", "other"])

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


def _platform() -> list[Definition]:
    """TRAINER_PLATFORM's objects, as the loader would return them (without a process)."""
    namespace: dict[str, Any] = {}
    exec(TRAINER_PLATFORM, namespace)  # the test's own text
    return [
        Definition(obj=o, file="jobs/platform/platform.py", team="platform")
        for o in namespace.values()
        if isinstance(o, TrainkitModel)
    ]


PLATFORM = _platform()


def _job(script: str | None = None, **kw: object) -> PyTorchJob:
    fields: dict[str, object] = {
        "name": "rehearsal",
        "image": "registry.example.com/pytorch:2",
        "resources": Resources(cpu=4, memory="16Gi"),
        "clusters": ["local"],
    }
    if script is not None:
        fields["script"] = Script.file(script)
    fields.update(kw)
    return PyTorchJob(**fields)


def _target(job: PyTorchJob | TrainJob, cluster: int = 0) -> Target:
    """The pods of ``job`` (in jobs/team/job.py) on its first (or ``cluster``-th) cluster."""
    files = {}
    if job.script is not None:
        fixture = FIXTURES / job.script.filename
        files[job.script.filename] = fixture.read_text() if fixture.exists() else "pass\n"
    d = Definition(obj=job, file="jobs/team/job.py", team="team", line=3, files=files)
    return targets_for(d, PLATFORM)[cluster]


def _trainer_tree(tmp_path: Path, job: str, script: str = "env_dump.py") -> Path:
    """A repository with TRAINER_PLATFORM and ``job`` (a job's source) in jobs/team/job.py."""
    team = tmp_path / "jobs" / "team"
    (team / "scripts").mkdir(parents=True)
    (team / "scripts" / script).write_text((FIXTURES / script).read_text())
    (tmp_path / "jobs" / "platform").mkdir()
    (tmp_path / "jobs" / "platform" / "platform.py").write_text(TRAINER_PLATFORM)
    path = team / "job.py"
    path.write_text(
        f"from trainkit import PyTorchJob, Resources, Script, TrainJob\n\njob = {job}\n"
    )
    return path


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


def _at(node_rank: int, nodes: int = 2, procs: int = 2) -> dict[str, Any]:
    """Where node ``node_rank`` of a ``_plan`` is, as the injected_env functions take it."""
    return {
        "nodes": nodes,
        "procs_per_node": procs,
        "node_rank": node_rank,
        "master_addr": "127.0.0.1",
        "master_port": 40000,
    }


def _plan(
    job: PyTorchJob | TrainJob | Target,
    tmp_path: Path,
    nodes: int | None = None,
    procs_per_node: int | None = None,
    base_env: dict[str, str] | None = None,
    read_only: ReadOnly | None = None,
) -> RehearsalPlan:
    return plan_rehearsal(
        job if isinstance(job, Target) else _target(job),
        workspace=tmp_path / "ws",
        log_dir=tmp_path / "logs",
        master_port=40000,
        nodes=nodes,
        procs_per_node=procs_per_node,
        base_env=SHELL if base_env is None else base_env,
        python="/venv/bin/python",
        read_only=read_only,
    )


def _torchrun(tmp_path: Path, node: int) -> tuple[str, ...]:
    logs = str(tmp_path / "logs" / f"node{node}")
    return (
        "/venv/bin/python",
        "-m",
        "torch.distributed.run",
        "--redirects",
        "3",
        "--log-dir",
        logs,
    )


# -- the plan: read from the effective pods ----------------------------------------------------


def test_plan_defaults_cap_the_size_and_list_every_change(tmp_path: Path) -> None:
    job = _job(
        "train.py",
        nodes=4,
        resources=Resources(cpu=64, memory="512Gi", gpu=8),
        env={"NCCL_IB_DISABLE": "0", "DATA": "/mnt/data/x", "CFG": "/workspace/c.yaml"},
        shm_size="20Gi",
        volumes=[Volume(claim="datasets", path="/mnt/does-not-exist-here")],
        restart_policy="ExitCode",
    )
    plan = _plan(job, tmp_path)
    assert (plan.nodes, plan.procs_per_node) == (2, 2)
    ws = tmp_path / "ws"
    assert plan.changes == (
        "nodes 4 → 2 (rehearsal default on one CPU machine; pass --nodes 4 to rehearse the "
        "full size)",
        "procs_per_node (one per GPU) 8 → 2 (rehearsal default on one CPU machine; pass "
        "--procs-per-node 8 to rehearse the full size)",
        "resources.gpu 8 → 0 (CPU rehearsal: CUDA_VISIBLE_DEVICES is empty, so scripts take "
        "their CPU path and gloo instead of NCCL)",
        "MASTER_ADDR rehearsal-master-0 → 127.0.0.1 and MASTER_PORT 23456 → 40000 (every node "
        "runs on this machine)",
        f"/workspace → {ws} (a writable directory; train.py read-only in it, as the pod mounts "
        "the ConfigMap)",
        "not inherited from this shell (the operator, torchrun or the rehearsal sets them): "
        "CUDA_VISIBLE_DEVICES, LOCAL_RANK, MASTER_ADDR, PET_NNODES, RANK, TORCHELASTIC_RUN_ID",
        f"env CFG '/workspace/c.yaml' → '{ws}/c.yaml'",
        "env NCCL_IB_DISABLE: GPU settings, passed on but ignored on CPU (NCCL and CUDA are "
        "not used; collectives run on gloo)",
        "OMP_NUM_THREADS=1 (all ranks share this machine's CPUs; set it in env to change)",
        "resources.cpu 64 and memory 512Gi per node are not enforced (all nodes share this "
        "machine)",
        "shm_size 20Gi: not applied (this machine's /dev/shm is used)",
        "volume 'datasets' at /mnt/does-not-exist-here is not mounted "
        "(/mnt/does-not-exist-here does not exist on this machine)",
        "restart_policy ExitCode: no restarts; the rehearsal stops at the first failure",
    )
    for launch in plan.launches:
        assert dict(launch.env) == {
            "PATH": "/venv/bin:/usr/bin",
            "HOME": "/root",
            "PYTHONUNBUFFERED": "1",  # from the shell: the operator sets the same
            "NCCL_IB_DISABLE": "0",
            "DATA": "/mnt/data/x",
            "CFG": f"{ws}/c.yaml",
            "CUDA_VISIBLE_DEVICES": "",
            "OMP_NUM_THREADS": "1",
            **pytorchjob_env(job_name="rehearsal", **_at(launch.node_rank)),
        }
        assert launch.argv == (*_torchrun(tmp_path, launch.node_rank), str(ws / "train.py"))
        assert launch.wrapper == ()


def test_plan_explicit_sizes_and_bad_sizes(tmp_path: Path) -> None:
    job = _job("train.py", nodes=2, procs_per_node=2)
    plan = _plan(job, tmp_path, nodes=3, procs_per_node=2)
    assert (plan.nodes, plan.procs_per_node) == (3, 2)
    assert "nodes 2 → 3 (--nodes)" in plan.changes
    assert not [c for c in plan.changes if c.startswith("procs_per_node")]
    assert [launch.env["RANK"] for launch in plan.launches] == ["0", "1", "2"]
    assert plan.target.pod(2) == "rehearsal-worker-1"
    with pytest.raises(RehearsalError, match="--procs-per-node must be at least 1"):
        _plan(job, tmp_path, procs_per_node=0)
    with pytest.raises(RehearsalError, match="--nodes must be at least 1"):
        _plan(job, tmp_path, nodes=0)


def test_plan_command_jobs(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("")
    torchrun = _job(command=["torchrun", "--nproc-per-node=1", str(script)], args=["--a"])
    (launch,) = _plan(torchrun, tmp_path).launches
    assert launch.torchrun
    assert launch.argv == (*_torchrun(tmp_path, 0), "--nproc-per-node=1", str(script), "--a")
    python = _job(command=["python3", str(script)], args=["--config=/workspace/c.yaml"])
    (launch,) = _plan(python, tmp_path).launches
    assert launch.argv == ("/venv/bin/python", str(script), f"--config={tmp_path / 'ws'}/c.yaml")
    assert not launch.torchrun
    shell = _job(command=["bash", "-c", "echo hi"])
    (launch,) = _plan(shell, tmp_path).launches
    assert launch.argv == ("bash", "-c", "echo hi")
    in_image = _job(command=["python", "/app/train.py"])
    with pytest.raises(
        RehearsalError,
        match=r"command: /app/train.py is not on this machine: a command job runs code inside "
        r"its image \(registry.example.com/pytorch:2\), which a rehearsal cannot see",
    ):
        _plan(in_image, tmp_path)


def test_a_job_without_command_or_script_cannot_be_rehearsed(tmp_path: Path) -> None:
    # A TrainJob that neither ships a script nor names a command runs its image's entrypoint.
    job = TrainJob(name="bare", runtime="cpu", clusters=["local"])
    with pytest.raises(
        RehearsalError,
        match=r"jobs/team/job.py: TrainJob 'bare': the job runs its image's entrypoint "
        r"\(img:local\), which a rehearsal cannot see",
    ):
        _plan(job, tmp_path)


def test_auto_processes_are_one_per_gpu_of_the_pod_and_the_operator_env_follows(
    tmp_path: Path,
) -> None:
    # A command job without procs_per_node leaves nprocPerNode to the operator: "auto".
    script = tmp_path / "t.py"
    script.write_text("")
    job = _job(
        command=["torchrun", str(script)], nodes=2, resources=Resources(cpu=8, memory="8Gi", gpu=4)
    )
    target = _target(job)
    assert (target.procs_per_node, target.procs_auto) == (4, True)
    assert target.operator_env["PET_NPROC_PER_NODE"] == "auto"
    plan = _plan(target, tmp_path, procs_per_node=3)
    assert (
        "PET_NPROC_PER_NODE 'auto' → 3 (on the cluster torchrun starts one process per GPU; "
        "there are none here)"
    ) in plan.changes
    for launch in plan.launches:
        env = {k: launch.env[k] for k in OPERATOR_ENV}
        # envvar.go: WORLD_SIZE counts one process per pod when nprocPerNode is not a number.
        expected = pytorchjob_env(job_name="rehearsal", **_at(launch.node_rank, procs=1))
        assert env == {**expected, "PET_NPROC_PER_NODE": "3"}


def test_the_operator_env_recomputed_per_node_is_the_one_the_pods_get() -> None:
    jobs: list[PyTorchJob | TrainJob] = [
        _job("train.py", nodes=3, procs_per_node=2),
        _job(command=["bash", "-c", "true"], resources=Resources(cpu=1, memory="1Gi", gpu=2)),
        TrainJob(name="t", runtime="gpu", script=Script.file("train.py"), clusters=["local"]),
        TrainJob(name="t", runtime="cpu", nodes=3, script=Script.file("train.py")),
    ]
    for job in jobs:
        target = _target(job)
        for ps in target.effective.pod_sets:
            # trainkit's own blanking of the device runtime's variables (a pod without GPUs)
            # is for the NVIDIA runtime of a node, neither the job's nor the operator's.
            on_cluster = {
                e.name: e.value
                for e in ps.env
                if e.name not in target.env and not e.source.startswith("trainkit:")
            }
            assert {e.source for e in ps.env if e.name in on_cluster} == {
                "Training Operator" if target.kind == "PyTorchJob" else "Kubeflow Trainer"
            }
            recomputed = target.injected_env(
                nodes=target.nodes,
                procs_per_node=target.procs_per_node,
                node_rank=ps.first_rank,
                master_addr=target.operator_env[target.master_vars[0]],
                master_port=int(target.operator_env[target.master_vars[1]]),
            )
            if target.procs_auto:
                recomputed["PET_NPROC_PER_NODE"] = "auto"
            assert on_cluster == recomputed, job.describe()


def test_the_rehearsal_runs_what_the_effective_pods_run(tmp_path: Path) -> None:
    job = TrainJob(
        name="t", runtime="cpu", script=Script.file("train.py"), env={"USER_SHARED": "job"}
    )
    local, other = (_target(job, i) for i in (0, 1))
    # One job, two clusters: each cluster's runtime gives its own image and env.
    assert (local.cluster, local.image, other.cluster, other.image) == (
        "local",
        "img:local",
        "other",
        "img:other",
    )
    assert dict(local.env) == {
        "USER_FROM_RUNTIME": "runtime",
        "USER_SHARED": "job",
    }
    assert dict(other.env) == {"USER_FROM_RUNTIME": "other", "USER_SHARED": "job"}
    # A PyTorchJob's image per accelerator is the pod's image on each cluster.
    images = {"cuda": "img:cuda", "rocm": "img:rocm"}
    pytorchjob = _job("train.py", image=images, clusters=["local", "other"])
    assert [_target(pytorchjob, i).image for i in (0, 1)] == ["img:cuda", "img:rocm"]
    # Whatever the pod's container holds is what runs: here a variable added to the
    # pod of the model (as a network profile or a runtime patch would) reaches every node.
    ej = local.effective
    pod = ej.pod_sets[0]
    extra = EnvVar("USER_PROFILE", "rdma", "network profile 'rdma'")
    container = {**pod.main, "command": ["torchrun", "/workspace/train.py", "--from-pod"]}
    changed = dataclasses.replace(
        ej,
        pod_sets=(
            dataclasses.replace(
                pod,
                env=(*pod.env, extra),
                spec={**pod.spec, "containers": [container]},
            ),
        ),
    )
    target = target_of(changed, render_trainjob(ej.planned), {})
    assert target.env["USER_PROFILE"] == "rdma"
    plan = _plan(target, tmp_path, base_env={})
    assert all(launch.env["USER_PROFILE"] == "rdma" for launch in plan.launches)
    assert plan.launches[0].argv[-1] == "--from-pod"


def test_trainjob_plan_runtime_defaults_capped_like_a_pytorchjob(tmp_path: Path) -> None:
    path = _trainer_tree(
        tmp_path, 'TrainJob(name="big", runtime="gpu", script=Script.file("scripts/env_dump.py"))'
    )
    (d,) = load_file(path).definitions
    first, second = plan_job(d, tmp_path / "jobs")
    assert (first.cluster, second.cluster) == ("local", "other")  # the team's order
    plan = _plan(first, tmp_path)
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
    assert first.pod(1) == "big-r1-node-0-1"


def test_trainjob_first_cluster_is_the_jobs_own_first() -> None:
    job = TrainJob(
        name="pick", runtime="cpu", script=Script.file("env_dump.py"), clusters=["other", "local"]
    )
    assert [_target(job, i).cluster for i in (0, 1)] == ["other", "local"]
    other = _target(job)
    # img:other's runtime gives no sizes: one node of one process, and no resources to mention.
    assert (other.nodes, other.procs_per_node, other.cpu, other.memory) == (1, 1, None, None)


def test_the_workspace_is_writable_and_its_script_files_read_only(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    read_only = prepare_workspace(ws, {"train.py": "print('hi')\n"}, sys.executable)
    script = ws / "train.py"
    assert script.read_text() == "print('hi')\n"
    assert script.stat().st_mode & 0o777 == 0o444
    # As root file modes are ignored: the files are mounted read-only for each node instead.
    assert read_only.protection is (Protection.MOUNT if os.geteuid() == 0 else Protection.MODE)
    code = (
        "import errno\n"
        "open('out.txt', 'w').write('saved')\n"
        "try:\n"
        "    open('train.py', 'a').write('x')\n"
        "except OSError as e:\n"
        "    print(errno.errorcode[e.errno])\n"
    )
    argv = [*read_only.wrapper([script], sys.executable), sys.executable, "-c", code]
    done = subprocess.run(argv, cwd=ws, capture_output=True, text=True, check=True)
    # On the cluster the write fails with EROFS (a read-only mount): an OSError either way.
    assert done.stdout.strip() == ("EROFS" if os.geteuid() == 0 else "EACCES")
    assert (ws / "out.txt").read_text() == "saved"
    assert script.read_text() == "print('hi')\n"


def test_the_plan_says_how_the_script_files_are_kept_read_only(tmp_path: Path) -> None:
    target = _target(_job("train.py"))
    ws = tmp_path / "ws"

    def change(read_only: ReadOnly) -> tuple[str, tuple[str, ...]]:
        plan = _plan(target, tmp_path, read_only=read_only)
        (line,) = [c for c in plan.changes if c.startswith("/workspace")]
        return line, plan.launches[0].wrapper

    assert change(ReadOnly()) == (
        f"/workspace → {ws} (a writable directory; train.py read-only in it, as the pod mounts "
        "the ConfigMap)",
        (),
    )
    line, wrapper = change(ReadOnly(Protection.MOUNT))
    assert line.endswith(
        "as the pod mounts the ConfigMap; bind-mounted read-only for each node, since root "
        "ignores file modes)"
    )
    assert wrapper[0] == "/venv/bin/python" and wrapper[1].endswith("readonly_mounts.py")
    assert wrapper[2:] == (str(ws / "train.py"), "--")
    line, wrapper = change(
        ReadOnly(Protection.NONE, "unshare(CLONE_NEWNS): Operation not permitted")
    )
    assert line == (
        f"/workspace → {ws} (a writable directory holding train.py, which the pod mounts "
        "read-only from the ConfigMap (a write fails there with 'Read-only file system') but "
        "which stays writable here: root ignores file modes and read-only mounts were refused: "
        "unshare(CLONE_NEWNS): Operation not permitted)"
    )
    assert wrapper == ()


def test_examples_rehearse_the_pods_of_their_first_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    # Everything up to starting the nodes: the header and the changes, from the real examples.
    monkeypatch.setattr(runner._Run, "run", lambda self, timeout: None)
    out = io.StringIO()
    report = rehearse_file(
        REPO / "jobs/vision/resnet50_ddp.py", nodes=2, procs_per_node=2, timeout=240, out=out
    )
    text = out.getvalue()
    assert (report.file, report.cluster, report.world_size) == (
        "jobs/vision/resnet50_ddp.py",
        "gpu-east",
        4,
    )
    assert (
        "[rehearse] PyTorchJob 'resnet50-ddp' runs on clusters gpu-east, rocm-west; rehearsing "
        "its pods on its first cluster, gpu-east\n"
        "[rehearse] PyTorchJob 'resnet50-ddp' (jobs/vision/resnet50_ddp.py): 2 node(s) × 2 "
        "process(es) on CPU, world size 4\n"
        "[rehearse] pods of cluster 'gpu-east': image "
        "registry.example.com/ml/pytorch:2.5.1-cuda12.4\n"
    ) in text
    assert "procs_per_node 8 → 2 (--procs-per-node)" in report.changes
    assert "[rehearse] node 1 (resnet50-ddp-worker-0): " in text

    out = io.StringIO()
    report = rehearse_file(REPO / "jobs/vision/resnet50_trainjob.py", out=out)
    text = out.getvalue()
    assert (report.kind, report.nodes, report.procs_per_node) == ("TrainJob", 2, 2)
    assert report.runtime == "ClusterTrainingRuntime 'torch-2-5' of cluster 'gpu-east'"
    assert (
        "[rehearse] runtime: ClusterTrainingRuntime 'torch-2-5' of cluster 'gpu-east' "
        "(jobs/platform/runtimes.py:14)"
    ) in text
    assert "node 1 (resnet50-r1-node-0-1): " in text
    changes = "\n".join(report.changes)
    assert (
        "procs_per_node (one per GPU, from runtime 'torch-2-5') 8 → 2 (rehearsal default" in changes
    )
    assert "PET_MASTER_ADDR resnet50-r1-node-0-0.resnet50-r1 → 127.0.0.1" in changes

    out = io.StringIO()
    report = rehearse_file(
        REPO / "jobs/llm/llama_finetune_fsdp.py", nodes=2, procs_per_node=1, out=out
    )
    assert "[rehearse] pods of cluster 'a800-north': image " in out.getvalue()
    changes = "\n".join(report.changes)
    assert "nodes 4 → 2 (--nodes)" in changes
    assert "procs_per_node (one per GPU) 8 → 1 (--procs-per-node)" in changes
    assert "env CUDA_DEVICE_MAX_CONNECTIONS, NCCL_DEBUG, NCCL_IB_DISABLE: GPU settings" in changes
    assert "resources rdma/hca 1 per node are not allocated" in changes  # its network profile
    assert "volume 'llm-datasets' at /mnt/data is not mounted" in changes


def test_a_variable_from_a_secret_is_this_shells_or_reported_unset(tmp_path: Path) -> None:
    job = _job("train.py", env_refs={"HF_TOKEN": SecretKey(secret="hf", key="token")})
    granted = Team(name="team", clusters=["local", "other"], secrets={"hf": ["token"]})
    platform = [
        Definition(obj=granted, file=d.file, team=d.team) if isinstance(d.obj, Team) else d
        for d in PLATFORM
    ]
    d = Definition(obj=job, file="jobs/team/job.py", team="team", line=3, files={"train.py": ""})
    target = targets_for(d, platform)[0]
    assert dict(target.cluster_env) == {"HF_TOKEN": "Secret 'hf' key 'token'"}
    assert "HF_TOKEN" not in target.env  # its value is the cluster's, never a placeholder
    plan = _plan(target, tmp_path)
    assert (
        "env HF_TOKEN (Secret 'hf' key 'token' on the cluster) is not set: export HF_TOKEN to "
        "rehearse with a value"
    ) in plan.changes
    assert all("HF_TOKEN" not in launch.env for launch in plan.launches)
    plan = _plan(target, tmp_path, base_env={**SHELL, "HF_TOKEN": "s3cret"})
    assert "env HF_TOKEN (Secret 'hf' key 'token' on the cluster) taken from this shell" in (
        plan.changes
    )
    assert all(launch.env["HF_TOKEN"] == "s3cret" for launch in plan.launches)


# -- processes, without torch --------------------------------------------------------------------


def test_a_command_job_gets_the_node_env_without_torchrun(tmp_path: Path) -> None:
    job = _job(
        command=["python", str(FIXTURES / "env_dump.py")],
        args=["--x"],
        nodes=3,
        env={"DUMP_DIR": str(tmp_path)},
    )
    out = io.StringIO()
    report = rehearse(_target(job), nodes=3, timeout=60, out=out)
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
    assert (report.cluster, report.file) == ("local", "jobs/team/job.py")
    assert "[rehearse] pods of cluster 'local': image registry.example.com/pytorch:2" in (
        out.getvalue()
    )


def test_args_for_the_run_follow_the_pods_own_and_are_listed(tmp_path: Path) -> None:
    # `trainkit rehearse --args '...'`: a shorter run of a long job, say. They come after the
    # pods' args (argparse in the script takes an option's last value) on every node.
    job = _job(
        command=["python", str(FIXTURES / "env_dump.py")],
        args=["--steps", "1000"],
        nodes=2,
        env={"DUMP_DIR": str(tmp_path)},
    )
    out = io.StringIO()
    report = rehearse(_target(job), timeout=60, out=out, script_args=["--steps", "2", "a b"])
    dumps = {int(p.stem[4:]): json.loads(p.read_text()) for p in tmp_path.glob("rank*.json")}
    assert sorted(dumps) == [0, 1]
    assert all(d["argv"] == ["--steps", "1000", "--steps", "2", "a b"] for d in dumps.values())
    assert "args: --steps 2 'a b' appended to the pods' (--args)" in report.changes
    assert "[rehearse]   - args: --steps 2 'a b' appended to the pods' (--args)\n" in (
        out.getvalue()
    )


def test_args_for_the_run_are_split_as_a_shell_would_or_refused(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    given: dict[str, object] = {}
    monkeypatch.setattr("trainkit.rehearse.rehearse_file", lambda path, **kw: given.update(kw))
    assert main(["rehearse", "job.py", "--args", "--epochs 1 --name 'a b'"]) == 0
    assert given["script_args"] == ["--epochs", "1", "--name", "a b"]
    assert main(["rehearse", "job.py", "--args=--dry-run"]) == 0
    assert given["script_args"] == ["--dry-run"]
    assert main(["rehearse", "job.py"]) == 0
    assert given["script_args"] == []
    with pytest.raises(SystemExit) as exc:
        main(["rehearse", "job.py", "--args", "--name 'a b"])
    assert exc.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        'trainkit rehearse: error: argument --args: "--name \'a b" is not a list of words a '
        "shell could split (No closing quotation); quote the whole value once, e.g. "
        "--args '--name \"a b\"'"
    )


def test_args_for_the_run_are_refused_for_a_rayjob() -> None:
    # A RayJob's entrypoint is one shell command, not a script's argv: refused before any
    # Ray process starts.
    with pytest.raises(RehearsalError) as err:
        rehearse_file(REPO / "jobs/llm/lr_sweep_ray.py", script_args=["--trials", "1"])
    assert str(err.value) == (
        "jobs/llm/lr_sweep_ray.py: RayJob 'lr-sweep-ray': --args are appended to the "
        "command line of a job's ranks; a RayJob's entrypoint is one shell command: leave them "
        "out (change entrypoint= to run it otherwise)"
    )


def test_a_failing_node_fails_the_rehearsal_and_is_named() -> None:
    code = (
        "import os, sys; print('node', os.environ['RANK']); sys.exit(int(os.environ['RANK']) * 3)"
    )
    job = _job(command=["python", "-c", code], nodes=2)
    out = io.StringIO()
    with pytest.raises(RehearsalError) as err:
        rehearse(_target(job), timeout=60, out=out)
    message = str(err.value)
    assert (
        "jobs/team/job.py: PyTorchJob 'rehearsal': node 1 (pod rehearsal-worker-0) exited with "
        "code 3; the operator would mark the whole job Failed\n"
        "last lines of node1:\n"
        "  | node 1"
    ) in message
    assert "[node1] node 1" in out.getvalue()


def test_a_hung_rehearsal_is_stopped_at_the_timeout_and_nothing_survives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two nodes each start two ranks in sessions of their own (as torchrun does), each
    # rank a child; rank 0 and its child ignore SIGTERM. The run's clock (its deadline's)
    # starts once every rank has recorded its pids, then passes the timeout at once: the
    # timeout never races the start of the processes, and no real second is waited.
    env = {"PID_DIR": str(tmp_path), "IGNORE_SIGTERM_RANK": "0"}
    job = _job(command=["python", str(FIXTURES / "hang_tree.py")], nodes=2, env=env)
    records = lambda: sorted(tmp_path.glob("rank*.pid"))  # noqa: E731
    clock = ClockFrozenUntil(lambda: len(records()) == 4, timeout=3, bound=120)
    monkeypatch.setattr(runner, "_Run", functools.partial(runner._Run, clock=clock.monotonic))
    monkeypatch.setattr(runner, "STOP_GRACE_SECONDS", 0.1)  # rank 0 waits it out, then SIGKILL
    out = io.StringIO()
    with pytest.raises(RehearsalError, match=r"timed out after 3 s \(--timeout\)") as err:
        rehearse(_target(job), timeout=3, out=out)
    assert clock.since is not None  # the deadline was counted on the test's clock
    assert "with node(s) 0, 1 still running; every process of the rehearsal was stopped" in str(
        err.value
    )
    assert [p.name for p in records()] == ["rank0.pid", "rank1.pid", "rank2.pid", "rank3.pid"], (
        out.getvalue()
    )
    pids = {int(pid) for p in records() for pid in p.read_text().split()}
    assert len(pids) == 4 + 2 + 4  # four ranks, two nodes, four children
    assert not [pid for pid in pids if _running(pid)]
    assert "[rehearse] stopping node(s) 0, 1: SIGTERM, and SIGKILL after 0.1 s" in out.getvalue()


def test_ctrl_c_stops_every_process_and_the_command_exits_130(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    path = _trainer_tree(
        tmp_path,
        f"""PyTorchJob(
    name="hang",
    image="img:1",
    command=["python", {str(FIXTURES / "hang_tree.py")!r}],
    env={{"PID_DIR": {str(pid_dir)!r}}},
    resources=Resources(cpu=1, memory="1Gi"),
    clusters=["local"],
)""",
    )
    real_pump = runner._Run._pump
    interrupted = []

    def pump(self: runner._Run, final: bool = False) -> bool:  # Ctrl-C once both ranks wait
        got = real_pump(self, final)
        waiting = [line for line in self.recent if "waiting forever" in line]
        if not interrupted and len(waiting) == 2:
            interrupted.append(True)
            raise KeyboardInterrupt
        return got

    monkeypatch.setattr(runner._Run, "_pump", pump)
    monkeypatch.setattr(runner, "STOP_GRACE_SECONDS", 0.5)
    assert main(["rehearse", str(path), "--timeout", "120"]) == 130
    captured = capsys.readouterr()
    assert "[rehearse] interrupted; every process of the rehearsal was stopped" in captured.out
    assert "trainkit rehearse: interrupted" in captured.err
    pids = {int(pid) for p in pid_dir.glob("rank*.pid") for pid in p.read_text().split()}
    assert len(pids) == 2 + 1 + 2  # two ranks, one node, two children
    assert not [pid for pid in pids if _running(pid)]


# -- one torchrun run --------------------------------------------------------------------------


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


@pytest.mark.long
def test_a_trainjob_run_gets_trainers_env_and_the_pods_layout_and_names_the_failing_rank(
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
    script=Script.file("scripts/rank_probe.py"),
    args=["--config=/workspace/c.yaml"],
    env={{"USER_SHARED": "job", "DUMP_DIR": {str(dump)!r}}},
    clusters=["local"],
)""",
        script="rank_probe.py",
    )
    # Node 0 never fails by itself: no need to wait for it to report before stopping it.
    monkeypatch.setattr(runner, "FAILURE_GRACE_SECONDS", 0.2)
    out = io.StringIO()
    with pytest.raises(RehearsalError) as err:
        rehearse_file(path, timeout=120, out=out)
    text = out.getvalue()
    dumps = {int(p.stem[4:]): json.loads(p.read_text()) for p in dump.glob("rank*.json")}
    assert sorted(dumps) == [0, 1, 2, 3], text
    ports = set()
    for rank, d in dumps.items():
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
        # /workspace is writable, the script mounted from the ConfigMap is not.
        assert d["relative_write"] == "ok"
        assert d["own_file_write"] == ("EROFS" if os.geteuid() == 0 else "EACCES")
        assert f"[node{rank // 2}/rank{rank}] dumped the env of rank {rank}" in text
    assert len(ports) == 1 and ports != {"29500"}
    message = str(err.value)
    assert (
        "jobs/team/job.py: TrainJob 'envcheck': rank 2 on node 1 (pod envcheck-r1-node-0-1, "
        "local rank 0) exited with code 3; Kubeflow Trainer would mark the whole job Failed\n"
        "last lines of node1/rank2:\n"
    ) in message
    assert "  | rank 2 loading batch 17\n  | loss is nan at step 17; giving up" in message
    assert "[node1/rank2] loss is nan at step 17; giving up" in text
    assert "[rehearse] pods of cluster 'local': image img:local" in text
    assert "[rehearse] runtime: ClusterTrainingRuntime 'cpu' of cluster 'local' (jobs/" in text
    assert "runs on clusters" not in text  # one cluster: nothing to choose
    assert "node 1 (envcheck-r1-node-0-1): " in text
    assert (
        "not inherited from this shell: PYTHONUNBUFFERED (Kubeflow Trainer does not set it" in text
    )


# -- setup errors and choosing the job ---------------------------------------------------------


def test_missing_torch_is_a_setup_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "find_spec", lambda name: None)
    with pytest.raises(
        SetupError,
        match=re.escape(
            "install PyTorch's CPU build first (pip install torch --index-url "
            "https://download.pytorch.org/whl/cpu), then the extra: "
            "pip install 'trainkit-gitops[rehearse]'"
        ),
    ):
        rehearse(_target(_job("env_dump.py")))
    with pytest.raises(SetupError, match="PyTorch is not installed"):
        rehearse_file(REPO / "jobs/vision/resnet50_ddp.py")


def test_a_timeout_must_be_positive() -> None:
    with pytest.raises(RehearsalError, match="PyTorchJob 'rehearsal': --timeout must be positive"):
        rehearse(_target(_job("env_dump.py")), timeout=0)


def test_trainkit_imports_none_of_the_frameworks_it_rehearses() -> None:
    # The frameworks run only in the processes a rehearsal starts: an import costs seconds
    # (torch 2, DeepSpeed 3). Every module of trainkit's rehearsals and the command, imported
    # in an interpreter of its own: a test that ran before in this process may have imported a
    # framework itself (an in-process check failed so under xdist, with ray).
    code = (
        "import importlib, pkgutil, sys, trainkit.rehearse\n"
        "for m in pkgutil.walk_packages(trainkit.rehearse.__path__, 'trainkit.rehearse.'):\n"
        "    importlib.import_module(m.name)\n"
        "importlib.import_module('trainkit.cli.cmd_rehearse')\n"
        "names = ['deepspeed', 'jax', 'mpi4py', 'ray', 'torch', 'xgboost']\n"
        "print(' '.join(n for n in names if n in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""


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
    with pytest.raises(
        RehearsalError,
        match="no PyTorchJob, MPIJob, TrainJob, XGBoostJob, JAXJob or RayJob in this file",
    ):
        rehearse_file(REPO / "jobs/platform/teams.py")
    # A job of a kind rehearse does not run is named, with its kind, not "no job here".
    for path, kind, name in (
        ("jobs/vision/wide_deep_ps.py", "PaddleJob", "wide-deep-ps"),
        ("jobs/vision/mobilenet_ps.py", "TFJob", "mobilenet-ps"),
    ):
        with pytest.raises(RehearsalError) as e:
            rehearse_file(REPO / path)
        assert (
            f"{kind} '{name}': trainkit cannot rehearse a {kind} (its framework's launcher is "
            "not run here); rehearse runs PyTorchJob, MPIJob, TrainJob, XGBoostJob, JAXJob and RayJob. "
            f"`trainkit explain {name}` shows what its pods get"
        ) in str(e.value)
    loaded = load_file(team / "two.py").definitions
    assert choose_job(loaded, "b", "two.py").obj.describe() == "TrainJob 'b'"
    # Every job is planned with the platform, and there is none here.
    for name in ("a", "b"):
        with pytest.raises(DefinitionError, match="no Cluster is defined"):
            rehearse_file(team / "two.py", job_name=name)


def test_a_file_is_loaded_with_the_platform_in_one_run_and_no_other_team_s_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each run of the definitions starts a confined server of its own (a tenth of a second):
    # the file and the platform share one. Another team's file is not run: its problem does
    # not stop this rehearsal.
    path = _trainer_tree(
        tmp_path, 'TrainJob(name="t", runtime="cpu", script=Script.file("scripts/env_dump.py"))'
    )
    (tmp_path / "jobs" / "other").mkdir()
    (tmp_path / "jobs" / "other" / "bad.py").write_text("raise SystemExit('broken')\n")
    runs: list[list[str]] = []
    real = server.run

    def run(groups: Any, *args: Any, **kwargs: Any) -> Any:
        runs.append(sorted(Path(f).relative_to(tmp_path).as_posix() for g in groups for _, f in g))
        return real(groups, *args, **kwargs)

    monkeypatch.setattr(server, "run", run)
    monkeypatch.setattr(runner._Run, "run", lambda self, timeout: None)
    report = rehearse_file(path, out=io.StringIO())
    assert (report.kind, report.runtime) == (
        "TrainJob",
        "ClusterTrainingRuntime 'cpu' of cluster 'local'",
    )
    assert runs == [["jobs/platform/platform.py", "jobs/team/job.py"]]


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


def test_the_processes_are_listed_less_often_only_while_none_starts_or_ends() -> None:
    pace = ScanPace()
    assert not pace.due(SCAN_SECONDS / 2) and pace.due(SCAN_SECONDS)
    now, gaps = SCAN_SECONDS, []
    for found in ({1, 2}, {1, 2}, {1, 2}, {1, 2}, {1, 2}, {1, 2, 3}, {1, 3}, {1, 3}):
        pace.listed(now, found)
        gap = next(g / 100 for g in range(1, 1000) if pace.due(now + g / 100))
        gaps.append(gap)
        now += gap
    q, s = QUIET_SCAN_SECONDS, SCAN_SECONDS
    # A process starts (3) or ends (2): listed again at the fast pace, whatever came before.
    assert gaps == [s, 2 * s, 4 * s, q, q, s, s, 2 * s], gaps


def test_the_process_table_reads_parent_group_and_exit_whatever_a_process_is_named() -> None:
    # /proc/<pid>/stat is "pid (comm) state ppid pgrp ...", and comm may hold spaces and
    # parentheses (a process names itself: prctl PR_SET_NAME).
    name = "a) (b c"
    code = (
        f"import ctypes, sys; ctypes.CDLL(None).prctl(15, {name.encode()!r}, 0, 0, 0); "
        "print(flush=True); sys.stdin.read()"
    )
    with subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        start_new_session=True,
    ) as child:
        assert child.stdin is not None and child.stdout is not None
        child.stdout.readline()  # named now
        assert Path(f"/proc/{child.pid}/comm").read_text(encoding="utf-8") == name + "\n"
        assert process_table()[child.pid] == Proc(os.getpid(), child.pid, zombie=False)
        child.stdin.close()
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # exited, not collected yet
        assert process_table()[child.pid] == Proc(os.getpid(), child.pid, zombie=True)


def test_a_group_that_ended_is_forgotten_at_the_next_scan() -> None:
    # A rehearsal signals every group it learnt when it stops. One whose processes all ended
    # is dropped at the next scan: the kernel may give its number to another program's
    # process, which may lead a group of its own (the Ray cluster another test started).
    def session(code: str) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [sys.executable, "-c", code], stdin=subprocess.PIPE, start_new_session=True
        )

    with session("import sys; sys.stdin.read()") as live, session("") as ended:
        with session("") as zombie:
            ended.wait()
            os.waitid(os.P_PID, zombie.pid, os.WEXITED | os.WNOWAIT)  # exited, not collected
            groups = {live.pid, ended.pid, zombie.pid}
            forget_ended(process_table(), groups)
            assert groups == {live.pid, zombie.pid}  # a zombie still holds its group
            run = _Run.__new__(_Run)
            run.procs, run.groups = [], {live.pid, ended.pid}
            run._scan()
            ray = RayRun.__new__(RayRun)
            ray.proc, ray.groups = None, {live.pid, ended.pid}
            ray._scan()
            assert (run.groups, ray.groups) == ({live.pid}, {live.pid})
        assert live.stdin is not None
        live.stdin.close()
