"""One Ray cluster for the rehearsals that test what happens to an entrypoint, not the start
and stop of its cluster: they run with ``--ray-address`` on it, as a user rehearses on the
Ray cluster of a laptop (``ray start --head``).

A pytest plugin (``pytest_plugins = ["ray_fixtures"]`` in the test modules that use it), so
its session fixture is one for the test session, started when a test first asks for it: once
per xdist worker at most. It is a head of two CPUs started as a user starts one (on this
machine's address; 127.0.0.1 reaches it), with a directory and ports of its own (two suites
run side by side), stopped at the end of the session with every
process it started. A rehearsal on it is a Ray job of its own (its entrypoint is the job's
driver, in an anonymous namespace), so no test sees another's tasks or actors.
"""

from __future__ import annotations

import contextlib
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
        return proc is not None and not proc.zombie

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
def shared_ray() -> Iterator[SharedRay]:
    # Short: Ray's socket paths below it hold at most 107 characters.
    directory = Path(tempfile.mkdtemp(prefix="tkrs-", dir="/tmp"))
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env |= {
        "RAY_TMPDIR": str(directory),
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_prestart_worker_first_driver": "0",
    }
    argv = [
        str(Path(sys.executable).parent / "ray"), "start", "--head", "--block",
        f"--port={port}", f"--temp-dir={directory / 'ray'}",
        "--num-cpus=2", "--num-gpus=0", f"--object-store-memory={150 * 1024 * 1024}",
        "--include-dashboard=false", f"--dashboard-port={free_port()}",
        # Ray's fixed defaults (52365, 10002-19999) would meet another suite's cluster.
        "--dashboard-agent-listen-port=0", "--min-worker-port=0", "--max-worker-port=0",
        "--disable-usage-stats",
    ]  # fmt: skip
    log = directory / "start.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            argv, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    ray = SharedRay(f"127.0.0.1:{port}", directory, proc.pid)
    try:
        end = time.monotonic() + _START_SECONDS
        while _READY not in log.read_text(errors="replace"):
            if proc.poll() is not None or time.monotonic() > end:
                pytest.fail(f"the shared Ray cluster did not start:\n{log.read_text()}")
            time.sleep(0.1)
        yield ray
    finally:
        _stop(ray, proc)
        shutil.rmtree(directory, ignore_errors=True)


def _stop(ray: SharedRay, proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL every process of the cluster until none runs (its processes outlive
    ``ray start`` when it is killed, and a raylet may start a worker meanwhile)."""
    end = time.monotonic() + _STOP_SECONDS
    while left := ray.processes():
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        proc.poll()  # collect ``ray start``; init collects the rest
        if time.monotonic() > end:
            raise RuntimeError(f"the shared Ray cluster's processes {sorted(left)} do not end")
        time.sleep(0.1)
    proc.wait()
