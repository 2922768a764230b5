"""One Ray cluster for the rehearsals that test what happens to an entrypoint, not the start
and stop of its cluster: they run with ``--ray-address`` on it, as a user rehearses on the
Ray cluster of a laptop (``ray start --head``).

A pytest plugin (``pytest_plugins = ["ray_fixtures"]`` in the test modules that use it), so
its session fixture is one for the test run, started when a test first asks for it (the xdist
workers share it; the last to end stops it). It is a head of four CPUs started as a user
starts one (on this machine's address; 127.0.0.1 reaches it), with a directory and ports of
its own (two suites run side by side), without the autoscaler (nothing to scale) and starting
a worker only for a task that needs one, stopped at the end with every process it started. A rehearsal on it is a Ray job of its own (its entrypoint is the job's
driver, in an anonymous namespace), so no test sees another's tasks or actors.
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
from dataclasses import dataclass
from pathlib import Path

import pytest

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
        does (ray/scripts/scripts.py start)."""
        proc = process_table().get(self.starter)
        return (
            proc is not None and not proc.zombie and str(self.directory) in _cmdline(self.starter)
        )

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


@pytest.fixture(scope="session")
def shared_ray(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedRay]:
    base = tmp_path_factory.getbasetemp()
    # xdist gives each worker a directory below the run's root (popen-gwN).
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    state = root / "shared-ray.json"
    me = os.getpid()
    with _locked(root / "shared-ray.lock"):
        known = json.loads(state.read_text()) if state.exists() else None
        ray = (
            SharedRay(known["address"], Path(known["directory"]), known["starter"])
            if known
            else None
        )
        if ray is None or not ray.alive():
            if ray is not None:  # a cluster whose head went down: what is left of it goes too
                _stop(ray)
            ray, users = _start(), []
        else:
            users = _running(known["users"])
        _write(state, ray, [*users, me])
    try:
        yield ray
    finally:
        with _locked(root / "shared-ray.lock"):
            users = [u for u in _running(json.loads(state.read_text())["users"]) if u != me]
            if users:
                _write(state, ray, users)
            else:
                _stop(ray)
                state.unlink()


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _running(pids: list[int]) -> list[int]:
    """The workers among ``pids`` still running (one that crashed never leaves)."""
    table = process_table()
    return [pid for pid in pids if pid in table and not table[pid].zombie]


def _write(state: Path, ray: SharedRay, users: list[int]) -> None:
    record = {
        "address": ray.address,
        "directory": str(ray.directory),
        "starter": ray.starter,
        "users": users,
    }
    state.write_text(json.dumps(record))


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
