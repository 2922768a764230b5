"""One Ray cluster for the rehearsals that test what happens to an entrypoint, not the start
and stop of its cluster: they run with ``--ray-address`` on it, as a user rehearses on the
Ray cluster of a laptop (``ray start --head``).

A pytest plugin (``pytest_plugins = ["ray_fixtures"]`` in the test modules that use it):
one cluster for the test run, started when a test first asks for it (the xdist workers share
it) and stopped once the last test that uses it has ended (an idle cluster costs about 2 % of
a core), or else when the last worker using it ends. It is a head of four CPUs started as a
user starts one (on this machine's address; 127.0.0.1 reaches it), with a directory and
ports of its own (two suites run side by side), without the autoscaler (nothing to scale) and
starting a worker only for a task that needs one, stopped with every process it started. A
rehearsal on it is a Ray job of its own (its entrypoint is the job's driver, in an anonymous
namespace), so no test sees another's tasks or actors.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pytest

from run_directory import run_directory
from trainkit.rehearse.ports import free_port
from trainkit.rehearse.procs import descendants, process_table

# Bounds on waiting for Ray, generous for a loaded machine; never what a test asserts.
_START_SECONDS = 180.0
_STOP_SECONDS = 60.0
_READY = "Ray runtime started."


@dataclass(frozen=True)
class SharedRay:
    address: str
    """HOST:PORT of the head's GCS, what ``--ray-address`` takes."""
    directory: Path
    """Ray's temporary directory: every process of the cluster names it."""
    starter: int
    """The pid of ``ray start --block``, the parent of the head's processes."""

    def alive(self) -> bool:
        """Whether the cluster runs: ``ray start --block`` ends when a process of the head
        does (ray/scripts/scripts.py start). Read from that process's own /proc entries (the
        start waits on this ten times a second: a whole process table each time cost
        0.13-0.18 CPU-s per start on a busy machine, this 0.02)."""
        try:
            stat = Path(f"/proc/{self.starter}/stat").read_bytes()
        except OSError:  # ended and collected
            return False
        running = stat[stat.rfind(b")") + 2 :][:1] not in (b"Z", b"X")
        return running and str(self.directory) in _cmdline(self.starter)

    def processes(self) -> set[int]:
        """The cluster's running processes: below ``ray start``, or naming its directory."""
        table = process_table()
        found = descendants(table, [self.starter]) if self.starter in table else set()
        for pid, proc in table.items():
            if not proc.zombie and str(self.directory) in _cmdline(pid):
                found.add(pid)
        return {pid for pid in found if not table[pid].zombie}


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


@pytest.fixture
def shared_ray(_shared_ray_users: _Users) -> Iterator[SharedRay]:
    """The test run's Ray cluster, running (started by the first test that asks for it)."""
    ray = _shared_ray_users.join()
    yield ray
    _shared_ray_users.used()


@pytest.fixture(scope="session")
def _shared_ray_users(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[_Users]:
    root = run_directory(tmp_path_factory)
    # Every worker collects every test of the run, and knows how many use the cluster.
    uses = sum("shared_ray" in item.fixturenames for item in request.session.items)
    users = _Users(root / "shared-ray.json", root / "shared-ray.lock", uses)
    yield users
    users.leave()


@dataclass(frozen=True)
class _Users:
    """The cluster's record, shared by the xdist workers: the cluster, the workers using it,
    and how many of the run's tests that use it have ended. The last of them stops it (the
    run's first tests are its long ones, these among them: it would idle for the rest of the
    run); a worker that ends (a test failed with -x, or one crashed its worker) and leaves
    no other worker using it stops it too."""

    state: Path
    lock: Path
    uses: int
    """The tests of the run that use the cluster."""

    def join(self) -> SharedRay:
        with self._locked() as record:
            ray = _cluster(record)
            if ray is None or not ray.alive():
                if ray is not None:  # a cluster whose head went down: what is left of it goes
                    _stop(ray)
                ray = _start()
            record["cluster"] = asdict(ray) | {"directory": str(ray.directory)}
            record["users"] = sorted({*_running(record["users"]), os.getpid()})
        return ray

    def used(self) -> None:
        with self._locked() as record:
            record["used"] += 1
            if record["used"] >= self.uses:
                self._stop(record)

    def leave(self) -> None:
        with self._locked() as record:
            record["users"] = [u for u in _running(record["users"]) if u != os.getpid()]
            if not record["users"]:
                self._stop(record)

    @staticmethod
    def _stop(record: dict[str, Any]) -> None:
        ray = _cluster(record)
        if ray is not None:
            _stop(ray)
        record["cluster"] = None

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, Any]]:
        """The record, written back at the end of the block, under the lock."""
        with self.lock.open("a") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                record: dict[str, Any] = (
                    json.loads(self.state.read_text())
                    if self.state.exists()
                    else {"cluster": None, "users": [], "used": 0}
                )
                yield record
                self.state.write_text(json.dumps(record))
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)


def _cluster(record: dict[str, Any]) -> SharedRay | None:
    known = record["cluster"]
    return None if known is None else SharedRay(**(known | {"directory": Path(known["directory"])}))


def _running(pids: list[int]) -> list[int]:
    """The workers among ``pids`` still running (one that crashed never leaves)."""
    table = process_table()
    return [pid for pid in pids if pid in table and not table[pid].zombie]


def _start() -> SharedRay:
    # Short: Ray's socket paths below it hold at most 107 characters.
    directory = Path(tempfile.mkdtemp(prefix="tkrs-", dir="/tmp"))
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env |= {
        "RAY_TMPDIR": str(directory),
        "RAY_USAGE_STATS_ENABLED": "0",
        # As a rehearsal starts its own (trainkit/rehearse/ray.py): a worker per task.
        "RAY_prestart_worker_first_driver": "0",
        "RAY_worker_maximum_startup_concurrency": "1",
    }
    argv = [
        str(Path(sys.executable).parent / "ray"), "start", "--head", "--block",
        f"--port={port}", f"--temp-dir={directory / 'ray'}",
        "--num-cpus=4", "--num-gpus=0", f"--object-store-memory={150 * 1024 * 1024}",
        "--include-dashboard=false", f"--dashboard-port={free_port()}",
        # Ray's fixed defaults (52365, 10002-19999) would meet another suite's cluster.
        "--dashboard-agent-listen-port=0", "--min-worker-port=0", "--max-worker-port=0",
        "--disable-usage-stats", "--no-monitor",  # nothing to autoscale
    ]  # fmt: skip
    log = directory / "start.log"
    # Started by a process that exits at once: the cluster is no worker's descendant, so
    # outlives the worker that started it and is not among what a test's watch finds.
    spawn = (
        "import subprocess, sys\n"
        "with open(sys.argv[1], 'wb') as log:\n"
        "    p = subprocess.Popen(sys.argv[2:], stdin=subprocess.DEVNULL, stdout=log,\n"
        "                         stderr=subprocess.STDOUT, start_new_session=True)\n"
        "print(p.pid)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", spawn, str(log), *argv],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    ray = SharedRay(f"127.0.0.1:{port}", directory, int(done.stdout))
    end = time.monotonic() + _START_SECONDS
    while _READY not in log.read_text(errors="replace"):
        if not ray.alive() or time.monotonic() > end:
            text = log.read_text(errors="replace")
            _stop(ray)
            pytest.fail(f"the shared Ray cluster did not start:\n{text}")
        time.sleep(0.1)
    return ray


def _stop(ray: SharedRay) -> None:
    """SIGKILL every process of the cluster until none runs (its processes outlive
    ``ray start`` when it is killed, and a raylet may start a worker meanwhile), then
    remove its directory."""
    end = time.monotonic() + _STOP_SECONDS
    while left := ray.processes():
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if time.monotonic() > end:
            raise RuntimeError(f"the shared Ray cluster's processes {sorted(left)} do not end")
        time.sleep(0.1)
    shutil.rmtree(ray.directory, ignore_errors=True)
