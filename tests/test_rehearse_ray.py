"""RayJob rehearsal: KubeRay's Ray cluster on this machine (ray.cluster_utils, a node per pod),
the entrypoint on its head. ray is an extra that `make setup` installs: these tests never skip.

Every test that starts a cluster keeps it small (a head and at most two workers, of one or
two CPUs each), so each runs in seconds; none asserts how long anything took. Each rehearsal
has its own Ray directory and free ports, so two copies of the suite run side by side.

The tests of the cluster itself (its shape, its start and stop, Ctrl-C) rehearse on a Ray
cluster of the job's pods; those of what happens to an entrypoint run with ``--ray-address``
on one Ray cluster shared by the test run (``shared_ray``, ``ray_fixtures.py``), as a
user rehearses on a Ray cluster already running on a laptop.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import dataclasses
import functools
import io
import itertools
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import pytest

from conftest import ClockFrozenUntil, Run, Workspace
from trainkit import (
    Cluster,
    RayJob,
    RehearsalError,
    Resources,
    RuntimeEnv,
    Script,
    SetupError,
    Team,
    WorkerGroup,
)
from trainkit.load import PLATFORM_DIR, Definition, load_file, load_jobs
from trainkit.rehearse import (
    Protection,
    ReadOnly,
    prepare_workspace,
    ray_run,
    rehearse,
    rehearse_file,
    targets_for,
)
from trainkit.rehearse import ray as rehearse_ray
from trainkit.rehearse.procs import descendants, process_table
from trainkit.rehearse.ray import RayPlace, plan_ray_rehearsal
from trainkit.rehearse.ray_target import RayJobTarget
from trainkit.rehearse.stopping import POLL_SECONDS, QUIET_SCAN_SECONDS, SCAN_SECONDS

if TYPE_CHECKING:  # imported by pytest as a plugin, first: its asserts are rewritten
    from ray_fixtures import SharedRay

pytest_plugins = ["ray_fixtures"]  # one shared Ray cluster for the whole session

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "jobs/llm/lr_sweep_ray.py"
# One trial of one step: each trial is a task whose worker imports torch (about 3 CPU-s), and
# each step costs about 0.1 CPU-s more; the sweep's code runs the same for one trial as for
# sixteen, and a trial's loop the same for one step as for 300.
SMALL = ["--trials", "1", "--steps", "1"]
PLATFORM = [
    Definition(
        Cluster(
            name="local", server="https://l", gpus_per_node=8, scheduler="default",
            operators=["kuberay"],
        ),
        "jobs/platform/p.py", "platform",
    ),
    Definition(
        Team(name="team", clusters=["local"], ray_autoscaling=True),
        "jobs/platform/p.py", "platform",
    ),
]  # fmt: skip

# An entrypoint that looks at the cluster from a task, then fails.
PROBE = """\
import os, sys
import ray

ray.init()
groups = sorted(n["Labels"].get("ray.io/node-group", "?") for n in ray.nodes())
print("node groups", groups, "CPUs", int(ray.cluster_resources()["CPU"]),
      "GPUs", ray.cluster_resources().get("GPU", 0))

@ray.remote(num_cpus=1)
def probe(script):
    return (os.environ.get("FROM_RUNTIME_ENV"), os.environ.get("JOB_ENV"), os.getcwd(),
            os.access(script, os.W_OK))

runtime_env, job_env, cwd, writable = ray.get(probe.remote(os.path.abspath(__file__)))
print("task sees runtime_env", runtime_env, "job env", job_env,
      "cwd", "the workspace" if cwd == os.getcwd() else cwd, "script writable", writable)
print("driver sees runtime_env", os.environ.get("FROM_RUNTIME_ENV"))
print("giving up", flush=True)
sys.exit(3)
"""

# PROBE, which also lists the processes of the cluster below the rehearsal's driver (its
# parent): Ray's autoscaler, and the workers (a worker is "ray::" and its task, the two
# agents of each node aside).
PROBE_CLUSTER = PROBE.replace(
    'print("giving up", flush=True)\n',
    """\
def below(root):
    children = {}
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmd = f.read().replace(bytes(1), b" ").decode()
        except OSError:  # ended
            continue
        children.setdefault(int(stat[stat.rfind(")") + 2:].split()[1]), []).append((name, cmd))
    found, todo = [], [str(root)]
    while todo:
        for pid, cmd in children.get(int(todo.pop()), []):
            found.append(cmd)
            todo.append(pid)
    return found

cluster = below(os.getppid())
agents = ("ray::DashboardAgent", "ray::RuntimeEnvAgent")
print("autoscaler", any("autoscaler/_private/monitor.py" in c for c in cluster),
      "workers", sum(c.startswith("ray::") and not c.startswith(agents) for c in cluster))
print("giving up", flush=True)
""",
)
assert PROBE_CLUSTER != PROBE

# An entrypoint that never ends by itself, once a task of it runs on the cluster.
HANG = """\
import time
import ray

ray.init()

@ray.remote(num_cpus=1)
def forever():
    time.sleep(10**6)

ref = forever.remote()
print("waiting", flush=True)
ray.get(ref)
"""

# An entrypoint that never ends by itself and leaves Ray alone: stopping it is the rehearsal's
# (SIGTERM to its process group), whatever it runs; a task's worker is stopped with its node
# (the failing entrypoint's test leaves none behind).
WAIT = """\
import time

print("waiting", flush=True)
time.sleep(10**6)
"""


@functools.cache
def _example() -> RayJobTarget:
    """The example RayJob on its first cluster, with a short sweep (``SMALL``): loaded once
    for the plan tests, which only read it (a frozen target)."""
    (d,) = load_file(EXAMPLE).definitions
    d = dataclasses.replace(d, obj=d.obj.model_copy(update={"args": SMALL}))
    platform = load_jobs(REPO / "jobs", only={PLATFORM_DIR}).definitions
    target = targets_for(d, platform)[0]
    assert isinstance(target, RayJobTarget)
    return target


# HANG, whose task says when it runs (its output reaches the driver through Ray's log monitor).
HANG_IN_TASK = HANG.replace(
    "def forever():\n", "def forever():\n    print('task running', flush=True)\n"
)


def _job(script: str, **kw: Any) -> RayJobTarget:
    """A RayJob of one small head running ``script`` (text) on the test platform."""
    fields: dict[str, Any] = {
        "name": "rj",
        "image": "rayproject/ray:2.60.0",
        "script": Script.file("probe.py"),
        "head": Resources(cpu=1, memory="2Gi"),
    }
    job = RayJob(**(fields | kw))
    d = Definition(job, "jobs/team/rj.py", "team", line=3, files={"probe.py": script})
    (target,) = targets_for(d, PLATFORM)
    assert isinstance(target, RayJobTarget)
    return target


def _start_time(pid: int) -> str | None:
    """When ``pid`` started (in clock ticks since boot), or None when it runs no more."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    state, *rest = raw[raw.rfind(")") + 2 :].split()
    return None if state in "ZX" else rest[18]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""


_PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>


def _subreaper(on: bool) -> None:
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    if libc.prctl(_PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


@dataclasses.dataclass
class _Watch:
    left: list[str] = dataclasses.field(default_factory=list)
    """Command lines of the processes started in the block still running at its end."""
    pids: list[int] = dataclasses.field(default_factory=list)
    """Their process ids, in the same order."""

    def survivors(self, out: str) -> list[str]:
        """What the rehearsal left running: any process it started (``left``), and any Ray
        process of its session directory anywhere on the machine."""
        (session,) = re.findall(r"its files in (\S+) \(RAY_TMPDIR", out)
        alive = list(self.left)
        for proc in Path("/proc").iterdir():
            pid = int(proc.name) if proc.name.isdigit() else 0
            if pid and _start_time(pid) is not None and session in _cmdline(pid):
                alive.append(_cmdline(pid))
        assert not Path(session).exists(), "Ray's session directory is removed"
        return alive


@contextmanager
def _watch() -> Iterator[_Watch]:
    """The processes the block starts below this test that are still running when it ends.

    For the block this process is a child subreaper (Linux): a process the block orphans is
    reparented here instead of to init, so every process it started is still below this one
    at the end, found without sampling while the rehearsal runs. What is found is listed
    (trainkit's loader aside, which stays for later loads), then killed."""
    me = os.getpid()
    before = {(pid, _start_time(pid)) for pid in descendants(process_table(), [me])}
    watch = _Watch()
    _subreaper(True)
    try:
        yield watch
    finally:
        try:
            table = process_table()
            left = [
                pid
                for pid in descendants(table, [me]) - {me}
                if not table[pid].zombie and (pid, _start_time(pid)) not in before
                and "trainkit.load" not in _cmdline(pid)
            ]  # fmt: skip
            watch.left = [_cmdline(pid) for pid in left]
            watch.pids = list(left)
            for pid in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            for pid in left:
                if table[pid].ppid == me:
                    with contextlib.suppress(ChildProcessError):
                        os.waitpid(pid, 0)
        finally:
            _subreaper(False)


def _plan(
    target: RayJobTarget,
    tmp_path: Path,
    nodes: int | None = None,
    procs_per_node: int | None = None,
    address: str | None = None,
    **kw: Any,
) -> rehearse_ray.RayPlan:
    args: dict[str, Any] = {
        "workspace": tmp_path / "ws", "log_dir": tmp_path / "logs", "temp_dir": tmp_path / "ray",
        "gcs_port": 4321, "dashboard_port": 4322, "inherited": {"PATH": os.environ["PATH"]},
        "python": "python3", "file": "jobs/llm/lr_sweep_ray.py", "read_only": ReadOnly(),
    }  # fmt: skip
    place = RayPlace(**(args | kw))
    return plan_ray_rehearsal(
        target, place, nodes=nodes, procs_per_node=procs_per_node, address=address
    )


# -- the plan, without processes ---------------------------------------------------------------


def test_the_plan_scales_the_cluster_down_and_lists_every_change(tmp_path: Path) -> None:
    inherited = {"PATH": os.environ["PATH"], "RAY_ADDRESS": "elsewhere:6379", "RANK": "3"}
    plan = _plan(_example(), tmp_path, nodes=1, procs_per_node=1, inherited=inherited)
    # KubeRay's head and one of the group's two workers, one CPU each, no GPU.
    assert [(n.pod, n.group, n.cpus) for n in plan.nodes] == [
        ("lr-sweep-ray-r3-local-head", "headgroup", 1),
        ("lr-sweep-ray-r3-local-gpu-worker-0", "gpu", 1),
    ]
    assert plan.nodes[1].start == "ray start --num-cpus=1 --memory=274877906944 --num-gpus=0"
    changes = "\n".join(plan.changes)
    for line in (
        "worker group 'gpu': nodes 2 → 1 (--nodes 1)",
        "head: num-cpus 8 → 1 (--procs-per-node 1)",
        "worker group 'gpu': num-cpus 32 → 1 (--procs-per-node 1)",
        "resources.gpu → 0 (worker group 'gpu' 8): every node gets num-gpus 0",
        "RAY_ADDRESS 127.0.0.1:6379 → 127.0.0.1:4321 and RAY_PORT 6379 → 4321",
        "not inherited from this shell (KubeRay, Ray's job supervisor or the rehearsal sets "
        "them): RAY_ADDRESS",
        "not inherited from this shell: RANK (KubeRay does not set it on the cluster",
        f"its files in {tmp_path / 'ray'} (RAY_TMPDIR, removed afterwards)",
        "no idle workers started ahead of the tasks (RAY_prestart_worker_first_driver=0), "
        "each node starting one worker at a time (RAY_worker_maximum_startup_concurrency=1), "
        "no autoscaler process (the nodes are the ones listed here)",
    ):
        assert line in changes
    assert plan.cluster_env["RAY_prestart_worker_first_driver"] == "0"  # the raylets read it
    assert plan.cluster_env["RAY_worker_maximum_startup_concurrency"] == "1"
    # Without --procs-per-node, each node's CPUs are capped for one machine, and it says how
    # to rehearse the full size.
    default = "\n".join(_plan(_example(), tmp_path, nodes=1).changes)
    assert (
        "head: num-cpus 8 → 2 (rehearsal default on one CPU machine; pass --procs-per-node 8 to "
        "rehearse the full size)"
    ) in default
    # The entrypoint: the spec's, python and /workspace mapped here, with the head's env and
    # what Ray's job supervisor adds.
    assert plan.argv == ("python3", str(tmp_path / "ws" / "lr_sweep.py"), *SMALL)
    env = plan.env
    assert (env["RAY_ADDRESS"], env["RAY_PORT"]) == ("127.0.0.1:4321", "4321")
    assert env["TOKENIZERS_PARALLELISM"] == "false"  # the runtime_env's env_vars
    assert json.loads(env["RAY_JOB_CONFIG_JSON_ENV_VAR"]) == {
        "runtime_env": {"env_vars": {"TOKENIZERS_PARALLELISM": "false"}},
        "metadata": {},
    }
    assert (env["PYTHONUNBUFFERED"], env["CUDA_VISIBLE_DEVICES"]) == ("1", "")
    assert env["RAY_TMPDIR"] == plan.cluster_env["RAY_TMPDIR"] == str(tmp_path / "ray")
    assert "RANK" not in env and "RANK" not in plan.cluster_env
    # What KubeRay sets on each node's container, with this machine's values.
    worker = plan.nodes[1].env
    assert worker["RAY_NODE_TYPE_NAME"] == "gpu" and worker["FQ_RAY_IP"] == "127.0.0.1"
    assert worker["RAY_ADDRESS"] == "127.0.0.1:4321"
    assert plan.nodes[0].env["RAY_CLOUD_INSTANCE_ID"] == "lr-sweep-ray-r3-local-head"


def test_the_plan_says_what_it_cannot_rehearse(tmp_path: Path) -> None:
    target = _job(
        "pass\n",
        workers=[
            WorkerGroup(
                name="cpu", nodes=3, min_nodes=1, max_nodes=5,
                resources=Resources(cpu=4, memory="8Gi"),
            )
        ],
        runtime_env=RuntimeEnv(pip=["surely-absent-package==1.0"]),
        backoff_limit=2,
    )  # fmt: skip
    plan = _plan(target, tmp_path)
    assert [n.group for n in plan.nodes] == ["headgroup", "cpu", "cpu"]
    changes = "\n".join(plan.changes)
    assert (
        "worker group 'cpu': nodes 3 → 2 (rehearsal default on one CPU machine; pass --nodes 3 "
        "to rehearse the full size)"
    ) in changes
    assert "worker group 'cpu' autoscales between 1 and 5 nodes on the cluster; here it" in (
        changes
    )
    assert (
        "runtime_env pip surely-absent-package==1.0: not installed (Ray installs them on every "
        "node when the job starts); the job imports this interpreter's packages: "
        "surely-absent-package not installed here"
    ) in changes
    assert "backoff_limit 2: no retries" in changes
    # pip is not handed to Ray, which would install it.
    assert json.loads(plan.env["RAY_JOB_CONFIG_JSON_ENV_VAR"])["runtime_env"] == {}
    with pytest.raises(RehearsalError, match="--nodes must be at least 1"):
        _plan(target, tmp_path, nodes=0)


def test_missing_ray_is_a_setup_error_naming_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rehearse_ray, "find_spec", lambda name: None)
    with pytest.raises(SetupError) as e:
        rehearse(_job("pass\n"), out=io.StringIO())
    assert (
        "jobs/team/rj.py: RayJob 'rj': a RayJob is rehearsed on a local Ray cluster, but ray is "
        "not installed for"
    ) in str(e.value)
    assert "install the extra: pip install 'trainkit-gitops[ray]'" in str(e.value)
    assert "-e " not in str(e.value)
    with pytest.raises(SetupError, match=r"pip install 'trainkit-gitops\[ray\]'"):
        rehearse_file(EXAMPLE, out=io.StringIO())


def test_the_shared_cluster_stops_once_the_last_test_using_it_ended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``shared_ray``'s bookkeeping (``ray_fixtures``), with stand-ins for the cluster: one
    start for the run's tests, a stop once the last of them (in any xdist worker) ended, and
    one when the last worker using it ends before that (-x, a crash)."""
    import ray_fixtures

    started: list[SharedRay] = []
    stopped: list[SharedRay] = []

    def start() -> SharedRay:
        started.append(ray_fixtures.SharedRay(f"127.0.0.1:{len(started)}", tmp_path, 1))
        return started[-1]

    monkeypatch.setattr(ray_fixtures, "_start", start)
    monkeypatch.setattr(ray_fixtures, "_stop", stopped.append)
    monkeypatch.setattr(ray_fixtures.SharedRay, "alive", lambda self: self not in stopped)
    state, lock = tmp_path / "shared-ray.json", tmp_path / "shared-ray.lock"

    def worker(uses: int) -> ray_fixtures._Users:
        return ray_fixtures._Users(state, lock, uses)

    mine, other = worker(3), worker(3)
    first = mine.join()
    mine.used()
    assert other.join() == first and started == [first] and stopped == []
    other.used()
    assert stopped == []
    assert mine.join() == first
    mine.used()
    assert stopped == [first]  # the third of three
    mine.leave()
    assert stopped == [first]
    # A worker ends before the run's tests that use the cluster did: the other still uses it.
    state.unlink()
    mine, other = worker(5), worker(5)
    second = mine.join()
    record = json.loads(state.read_text())
    state.write_text(json.dumps(record | {"users": [*record["users"], os.getppid()]}))
    mine.used()
    mine.leave()
    assert stopped == [first]
    state.write_text(json.dumps(json.loads(state.read_text()) | {"users": [os.getpid()]}))
    other.leave()  # the last worker using it
    assert stopped == [first, second]
    assert json.loads(state.read_text()) == {"cluster": None, "users": [], "used": 1}


def test_a_ray_rehearsal_lists_its_processes_less_often_while_none_starts_or_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """While the driver runs, the processes below it are listed at the node runner's pace
    (``ScanPace``): every SCAN_SECONDS while they change, down to once in QUIET_SCAN_SECONDS
    while they stay the same (each list reads every process of the machine), and fast again
    once one starts (a task's worker)."""
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] = round(now[0] + seconds, 6)

    monkeypatch.setattr(ray_run, "time", SimpleNamespace(monotonic=lambda: now[0], sleep=sleep))
    run = ray_run.RayRun.__new__(ray_run.RayRun)
    run.proc = SimpleNamespace(poll=lambda: None if now[0] < 8 else 0)  # type: ignore[assignment]
    listed: list[float] = []

    def scan() -> set[int]:
        listed.append(now[0])
        return {1, 2} if now[0] < 4 else {1, 2, 3}  # a worker starts at 4 s

    monkeypatch.setattr(run, "_scan", scan)
    monkeypatch.setattr(run, "_pump", lambda final=False: False)
    assert run._wait(deadline=100.0) is False  # the driver ended
    gaps = [round(b - a, 6) for a, b in itertools.pairwise(listed)]
    s, q = SCAN_SECONDS, QUIET_SCAN_SECONDS
    assert POLL_SECONDS < s < q
    assert gaps == [s, 2 * s, q, q, q, s, 2 * s, q, q, q], (listed, gaps)


def test_the_watch_finds_an_orphan_the_block_left_running() -> None:
    """What the rehearsal tests below rely on to find survivors: a process whose parent
    exits (here sh, which leaves its sleep behind) is still found below the test."""
    # Told by pid, not command line: on a loaded machine the orphan may not have exec'd
    # sleep yet when the table is read (its command line is still sh's).
    with _watch() as watch:
        run = subprocess.run(
            ["sh", "-c", "sleep 600 >/dev/null 2>&1 & echo $!"],
            check=True,
            capture_output=True,
            text=True,
        )
    assert watch.pids == [int(run.stdout)]
    # sh waits for what it killed, so nothing is left (a killed process that is not yet
    # reaped could still be running when the table is read).
    with _watch() as watch:
        subprocess.run(["sh", "-c", "sleep 600 & kill $!; wait $!"], check=False)
    assert watch.left == []


# -- a Ray cluster on this machine -------------------------------------------------------------


@pytest.mark.long
def test_the_example_sweeps_through_the_cli(
    ws: Workspace, cli: Callable[..., Run], shared_ray: SharedRay
) -> None:
    """The example through the CLI, as a user runs it, on the test run's Ray cluster: this
    tests the example and the command; the start and stop of a cluster of the job's pods
    (the same for an entrypoint that succeeds or fails) are the failing entrypoint's test."""
    source = ws.jobs / "llm" / "lr_sweep_ray.py"
    text = source.read_text(encoding="utf-8")
    short = text.replace('args=["--trials", "16", "--steps", "300"]', f"args={SMALL!r}")
    assert short != text
    source.write_text(short, encoding="utf-8")
    address = shared_ray.address
    with _watch() as watch:
        run = cli("rehearse", "jobs/llm/lr_sweep_ray.py", "--ray-address", address)
    assert run.code == 0, run.out + run.err
    assert (
        "[rehearse] RayJob 'lr-sweep-ray' (jobs/llm/lr_sweep_ray.py): the entrypoint on the Ray "
        f"cluster at {address} (--ray-address)\n"
        "[rehearse] pods of cluster 'gpu-east': image "
        "registry.example.com/ml/ray:2.60.0-py311-cu124\n"
        "[rehearse] changed for the rehearsal:\n"
    ) in run.out
    for line in (
        f"[rehearse] entrypoint on this machine: {sys.executable} /",
        " of 1 trials\n",
        f"[ray] starting the entrypoint on the Ray cluster at {address}\n",
        "[entrypoint] best: lr ",
        "KubeRay would mark the RayJob SUCCEEDED",
        "/workspace/lr_sweep.py --trials 1 --steps 1",
    ):
        assert line in run.out, run.out
    assert watch.left == []
    assert shared_ray.alive()
    # --nodes and --procs-per-node reach the rehearsal (which refuses them on an address).
    run = cli(
        "rehearse", "jobs/llm/lr_sweep_ray.py", "--ray-address", address, "--nodes", "1",
        "--procs-per-node", "2",
    )  # fmt: skip
    assert run.code == 1
    assert "--nodes and --procs-per-node size the Ray cluster a rehearsal starts" in run.err


@pytest.mark.long
def test_a_failing_entrypoint_reports_its_exit_code_and_output(tmp_path: Path) -> None:
    """On a Ray cluster of the job's pods: its start, what it gives the entrypoint and its
    tasks, and its stop (the same when the entrypoint succeeds)."""
    target = _job(
        PROBE_CLUSTER,
        env={"JOB_ENV": "job"},
        runtime_env=RuntimeEnv(env_vars={"FROM_RUNTIME_ENV": "yes"}),
        # Two CPUs a node: Ray's default would start two workers for the task.
        head=Resources(cpu=2, memory="2Gi"),
        workers=[WorkerGroup(name="cpu", nodes=3, resources=Resources(cpu=2, memory="2Gi"))],
    )
    out = io.StringIO()
    with _watch() as watch, pytest.raises(RehearsalError) as e:
        rehearse(target, nodes=1, timeout=240, out=out)
    text = out.getvalue()
    assert (
        "[rehearse] RayJob 'rj' (jobs/team/rj.py): a Ray cluster of 2 node(s) on CPU, 4 CPU(s) "
        "in all, and the entrypoint on its head\n"
    ) in text
    for line in (
        "[rehearse]   - worker group 'cpu': nodes 3 → 1 (--nodes 1)\n",
        "[rehearse] node 1 (rj-local-cpu-worker-0): ray start --num-cpus=2 ",
        "[rehearse] entrypoint on the head (rj-local-head): ",
        "[ray] Ray cluster up: 2 node(s); starting the entrypoint on the head\n",
    ):
        assert line in text, text
    # No autoscaler, and a worker for the one task only (Ray's default starts more).
    assert "[entrypoint] autoscaler False workers 1\n" in text
    message = str(e.value)
    assert (
        "jobs/team/rj.py: RayJob 'rj': the entrypoint exited with code 3 on the head (pod "
        "rj-local-head); KubeRay would mark the RayJob FAILED\n"
        "last lines of the entrypoint:\n"
    ) in message
    assert "  | giving up" in message
    # KubeRay's group labels, no GPUs; the runtime_env reaches the tasks as Ray's job
    # supervisor passes it, and the job's env every node.
    assert "[entrypoint] node groups ['cpu', 'headgroup'] CPUs 4 GPUs 0" in text
    # The script is read-only for the tasks too (a read-only mount for the whole cluster
    # when running as root), unless this machine refuses read-only mounts to root.
    writable = prepare_workspace(tmp_path, {"t.py": ""}, sys.executable).protection is (
        Protection.NONE
    )
    assert (
        f"[entrypoint] task sees runtime_env yes job env job cwd the workspace script writable "
        f"{writable}\n"
    ) in text
    assert "[entrypoint] driver sees runtime_env yes" in text
    assert watch.survivors(text) == []


@pytest.mark.long
def test_ctrl_c_stops_the_entrypoint_and_the_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    """Once the entrypoint runs on the head of the rehearsal's cluster (an entrypoint without
    Ray: an import of ray and a worker for its task cost 2 CPU-s and change nothing of how
    the rehearsal stops it and the cluster)."""
    real_pump = ray_run.RayRun._pump
    interrupted: list[bool] = []

    def pump(self: ray_run.RayRun, final: bool = False) -> bool:
        got = real_pump(self, final)
        if not interrupted and any("[entrypoint] waiting" in line for line in self.recent):
            interrupted.append(True)
            raise KeyboardInterrupt
        return got

    monkeypatch.setattr(ray_run.RayRun, "_pump", pump)
    out = io.StringIO()
    with _watch() as watch, pytest.raises(KeyboardInterrupt):
        rehearse(_job(WAIT), timeout=240, out=out)
    text = out.getvalue()
    assert "[rehearse] stopping the entrypoint and the Ray cluster (SIGKILL after 60 s)" in text
    assert "[ray] SIGTERM: stopping the entrypoint and the Ray cluster" in text
    assert "[rehearse] interrupted; every process of the rehearsal was stopped" in text
    assert watch.survivors(text) == []


@pytest.mark.long
def test_a_hung_entrypoint_is_stopped_at_the_timeout(
    monkeypatch: pytest.MonkeyPatch, shared_ray: SharedRay
) -> None:
    """On a running Ray cluster: the entrypoint is stopped, and Ray then stops the job's task
    (its driver is gone), while the cluster keeps running."""
    out = io.StringIO()
    clock = ClockFrozenUntil(lambda: "task running" in out.getvalue(), timeout=5)
    monkeypatch.setattr(
        ray_run, "time", SimpleNamespace(monotonic=clock.monotonic, sleep=time.sleep)
    )
    with _watch() as watch, pytest.raises(RehearsalError) as e:
        rehearse(_job(HANG_IN_TASK), timeout=5, out=out, ray_address=shared_ray.address)
    message = str(e.value)
    assert (
        "RayJob 'rj': timed out after 5 s (--timeout) with the entrypoint still running; every "
        "process of the rehearsal was stopped\n"
        "last lines before the timeout:\n"
    ) in message
    assert re.search(r"\| \[entrypoint\] \S*\(forever pid=\d+\)\S* task running", message)
    text = out.getvalue()
    assert "[rehearse] stopping the entrypoint (SIGKILL after 60 s)\n" in text
    assert watch.left == []
    # The task's worker ends once Ray sees its driver gone; the head's processes stay.
    _until(lambda: not _tasks(shared_ray, "ray::forever"), "the job's task still runs")
    assert shared_ray.alive()


def _tasks(ray: SharedRay, title: str) -> list[int]:
    """The cluster's workers running ``title`` (Ray renames a worker for its task)."""
    return [pid for pid in ray.processes() if _cmdline(pid).startswith(title)]


def _until(done: Callable[[], bool], what: str, bound: float = 120.0) -> None:
    """Wait for ``done`` (Ray acts on its own time); ``bound`` only ends a hung test."""
    end = time.monotonic() + bound
    while not done():
        assert time.monotonic() < end, what
        time.sleep(0.1)


# -- --ray-address: a Ray cluster the user started ------------------------------------------


@pytest.mark.long
def test_an_entrypoint_runs_on_the_ray_cluster_at_the_address(
    shared_ray: SharedRay, tmp_path: Path
) -> None:
    """Its exit code, its output and the runtime_env reach the user, from a job of its own
    on the running cluster, which no rehearsal stops."""
    target = _job(
        PROBE, env={"JOB_ENV": "job"}, runtime_env=RuntimeEnv(env_vars={"FROM_RUNTIME_ENV": "yes"})
    )
    out = io.StringIO()
    with _watch() as watch, pytest.raises(RehearsalError) as e:
        rehearse(target, timeout=240, out=out, ray_address=shared_ray.address)
    text = out.getvalue()
    assert (
        f"[rehearse] RayJob 'rj' (jobs/team/rj.py): the entrypoint on the Ray cluster at "
        f"{shared_ray.address} (--ray-address)\n"
    ) in text
    assert (
        f"Ray cluster: the one running at {shared_ray.address} (--ray-address), not a cluster "
        "of the job's pods: "
    ) in text
    assert f"[ray] starting the entrypoint on the Ray cluster at {shared_ray.address}\n" in text
    assert (
        "jobs/team/rj.py: RayJob 'rj': the entrypoint exited with code 3 on the Ray cluster at "
        f"{shared_ray.address} (--ray-address); KubeRay would mark the RayJob FAILED\n"
    ) in str(e.value)
    assert "  | giving up" in str(e.value)
    # The cluster's own node (no KubeRay groups) and CPUs; the runtime_env reaches the task,
    # the job's env only the entrypoint (the cluster's workers were started before it).
    assert "[entrypoint] node groups ['?'] CPUs 4 GPUs 0\n" in text
    assert "[entrypoint] task sees runtime_env yes job env None " in text
    assert "[entrypoint] driver sees runtime_env yes\n" in text
    assert watch.left == []
    assert shared_ray.alive()


def _refused(tmp_path: Path, address: str, **kw: Any) -> str:
    with pytest.raises(RehearsalError) as e:
        rehearse(_job("pass\n"), timeout=60, out=io.StringIO(), ray_address=address, **kw)
    (problem,) = e.value.problems
    return str(problem)


def test_an_address_where_nothing_listens_is_refused_before_anything_starts(
    tmp_path: Path,
) -> None:
    # A bound port that does not listen refuses every connection, for as long as it is bound.
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        port = bound.getsockname()[1]
        with _watch() as watch:
            message = _refused(tmp_path, f"127.0.0.1:{port}")
    assert message == (
        f"jobs/team/rj.py: RayJob 'rj': --ray-address 127.0.0.1:{port}: nothing answers there "
        "(Connection refused); start a Ray cluster on this machine with `ray start --head` and "
        "pass the address it prints, or leave --ray-address out to rehearse on a Ray cluster "
        "of the job's pods"
    )
    assert watch.left == []


@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("6379", "is not HOST:PORT"),
        ("localhost:", "is not HOST:PORT"),
        ("localhost:http", "is not HOST:PORT"),
        ("localhost:70000", "is not HOST:PORT"),
        ("ray://localhost:10001", "a URL (Ray Client's ray://, the dashboard's http://) is not "
         "where a driver connects"),
    ],
)  # fmt: skip
def test_an_address_that_is_not_host_and_port_is_refused(
    tmp_path: Path, address: str, why: str
) -> None:
    assert _refused(tmp_path, address) == (
        f"jobs/team/rj.py: RayJob 'rj': --ray-address {address!r}"
        f"{': ' if why.startswith('a URL') else ' '}{why}; give the address `ray start --head` "
        "prints, HOST:PORT of the head's GCS (for example 127.0.0.1:6379)"
    )


def test_the_size_of_a_cluster_it_does_not_start_is_refused(tmp_path: Path) -> None:
    assert _refused(tmp_path, "127.0.0.1:6379", nodes=1, procs_per_node=2) == (
        "jobs/team/rj.py: RayJob 'rj': --nodes and --procs-per-node size the Ray cluster a "
        "rehearsal starts; with --ray-address the entrypoint runs on the cluster already "
        "there: leave them out"
    )
    assert _refused(tmp_path, "127.0.0.1:6379", nodes=1).endswith(": leave it out")


def test_a_ray_address_is_for_a_rayjob(cli: Callable[..., Run]) -> None:
    run = cli("rehearse", "jobs/vision/resnet50_ddp.py", "--ray-address", "127.0.0.1:6379")
    assert run.code == 1
    assert (
        "jobs/vision/resnet50_ddp.py: PyTorchJob 'resnet50-ddp': --ray-address is for a RayJob; "
        "PyTorchJob 'resnet50-ddp' is rehearsed without Ray: leave it out"
    ) in run.err, run.err


def test_the_plan_on_an_address_starts_no_node_and_says_so(tmp_path: Path) -> None:
    plan = _plan(_example(), tmp_path, address="10.0.0.5:6379", gcs_port=6379)
    assert plan.nodes == () and plan.address == "10.0.0.5:6379"
    assert plan.env["RAY_ADDRESS"] == "10.0.0.5:6379" and plan.env["RAY_PORT"] == "6379"
    assert plan.env["RAY_NODE_TYPE_NAME"] == "headgroup"  # the head container's env
    assert "RAY_TMPDIR" not in plan.env  # the cluster's own directory is Ray's to find
    changes = "\n".join(plan.changes)
    assert "its nodes, their CPUs, GPUs, memory and labels are that cluster's" in changes
    assert "RAY_ADDRESS 127.0.0.1:6379 → 10.0.0.5:6379 and RAY_PORT 6379 → 6379" in changes
    assert "num-cpus" not in changes and "object store" not in changes
