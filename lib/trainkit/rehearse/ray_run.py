"""Running a RayJob's rehearsal: the driver (``ray_cluster.py``) that starts the local Ray
cluster and the entrypoint, their output, the verdict, and stopping every process below it."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from ..errors import Problem, RehearsalError
from . import ray_cluster
from .output import Follower, Source, cpu_hints
from .procs import descendants, forget_ended, kill_groups, live_in_groups, process_table
from .ray_target import RayJobTarget
from .stopping import (
    KILLED_WAIT_SECONDS,
    POLL_SECONDS,
    SCAN_SECONDS,
    TAIL_LINES,
    ScanPace,
    run_stopping,
    say,
)

__all__ = [
    "OBJECT_STORE_MIB",
    "SHUTDOWN_SECONDS",
    "RayNode",
    "RayPlan",
    "RayRun",
    "ray_start_command",
]

DRIVER = Path(ray_cluster.__file__)
OBJECT_STORE_MIB = 150
"""Object store of each node (ray.cluster_utils.Cluster's default); small, as the machine's
/dev/shm is shared by every node."""
SHUTDOWN_SECONDS = 60.0
"""How long the driver may take to stop the entrypoint and shut the Ray cluster down."""
ENTRYPOINT_STOP_SECONDS = 3.0
"""Between SIGTERM and SIGKILL of the entrypoint (Ray's job supervisor waits 3 s:
RAY_JOB_STOP_WAIT_TIME_S, dashboard/modules/job/job_supervisor.py)."""
_CLUSTER: Source = (0, None)
_ENTRY: Source = (0, 0)


@dataclass(frozen=True)
class RayNode:
    """One pod of the RayJob, as a node of the local Ray cluster."""

    pod: str
    group: str
    head: bool
    cpus: int
    memory: int | None
    """Ray's memory resource in bytes (the pod's memory limit)."""
    env: Mapping[str, str]
    """What KubeRay sets on the node's Ray container, with this machine's values."""

    @property
    def start(self) -> str:
        return ray_start_command(self.head, self.cpus, self.memory)


def ray_start_command(head: bool, cpus: int, memory: int | None) -> str:
    """A node's ``ray start``, as KubeRay would generate it for this size."""
    return " ".join(
        [
            "ray start --head" if head else "ray start",
            f"--num-cpus={cpus}",
            *([f"--memory={memory}"] if memory is not None else []),
            "--num-gpus=0",
        ]
    )


@dataclass(frozen=True)
class RayPlan:
    target: RayJobTarget
    nodes: tuple[RayNode, ...]
    """The head first."""
    gcs_port: int
    dashboard_port: int
    temp_dir: Path
    """Ray's temporary directory (RAY_TMPDIR): this rehearsal's own."""
    workspace: Path
    log_dir: Path
    argv: tuple[str, ...]
    """The entrypoint, paths and interpreter mapped here."""
    env: Mapping[str, str]
    """The entrypoint's complete environment."""
    cluster_env: Mapping[str, str]
    """The environment every Ray process of the cluster inherits (each node adds its own)."""
    wrapper: tuple[str, ...]
    """What starts the cluster with the script files read-only (see ``workspace.py``)."""
    changes: tuple[str, ...]
    cwd: Path | None = None
    """Where the entrypoint starts: the runtime_env's working directory, else the workspace."""
    address: str | None = None
    """The running Ray cluster the entrypoint joins (``--ray-address``); ``nodes`` is then
    empty: the rehearsal starts no Ray cluster."""

    @property
    def command_line(self) -> str:
        return shlex.join(self.argv)

    @property
    def where(self) -> str:
        """Where the entrypoint runs, for messages."""
        if self.address is not None:
            return f"on the Ray cluster at {self.address} (--ray-address)"
        return f"on the head (pod {self.nodes[0].pod})"


class RayRun:
    """The driver (``ray_cluster.py``): its output, its end, and stopping everything below it."""

    def __init__(self, plan: RayPlan, out: TextIO, file: str) -> None:
        self.plan = plan
        self.out = out
        self.file = file
        logs = plan.log_dir
        self.result = logs / "result.json"
        self.entry_log = logs / "entrypoint.log"
        self.followers = [
            Follower(logs, "cluster.log", _CLUSTER, "[ray] "),
            Follower(logs, self.entry_log.name, _ENTRY, "[entrypoint] "),
        ]
        self.tails: dict[Source, deque[str]] = {
            s: deque(maxlen=TAIL_LINES) for s in (_CLUSTER, _ENTRY)
        }
        self.recent: deque[str] = deque(maxlen=TAIL_LINES)
        self.proc: subprocess.Popen[bytes] | None = None
        self.groups: set[int] = set()

    def run(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        timed_out = run_stopping(
            lambda: self._start(timeout),
            lambda: self._wait(deadline),
            self._stop,
            self._problem,
            self.out,
        )
        last = list(self.recent)
        self._stop()
        self._judge(timeout, timed_out, last)

    def _start(self, timeout: float) -> None:
        p = self.plan
        p.log_dir.mkdir(parents=True, exist_ok=True)
        spec = {
            "nodes": [
                {"pod": n.pod, "group": n.group, "head": n.head, "cpus": n.cpus,
                 "memory": n.memory, "env": dict(n.env)}
                for n in p.nodes
            ],
            "per_node_env": sorted({k for n in p.nodes for k in n.env}),
            "temp_dir": str(p.temp_dir / "ray"),  # Ray's default below RAY_TMPDIR
            "gcs_port": p.gcs_port,
            "dashboard_port": p.dashboard_port,
            "object_store_memory": OBJECT_STORE_MIB * 1024 * 1024,
            "start_timeout": timeout,
            "stop_grace": ENTRYPOINT_STOP_SECONDS,
            "argv": list(p.argv),
            "env": dict(p.env),
            "cwd": str(p.cwd or p.workspace),
            "entrypoint_log": str(self.entry_log),
            "result": str(self.result),
            "address": p.address,
            "parent": os.getpid(),
        }  # fmt: skip
        spec_file = p.log_dir / "spec.json"
        spec_file.write_text(json.dumps(spec), encoding="utf-8")
        # -P: the driver's directory holds this module, which must not shadow ray.
        argv = (*p.wrapper, sys.executable, "-P", str(DRIVER), str(spec_file))
        with (p.log_dir / "cluster.log").open("wb") as log:
            # The raylets' workers run in the workspace, as in the pods' /workspace.
            self.proc = subprocess.Popen(
                argv,
                env=dict(p.cluster_env),
                cwd=p.workspace,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.groups.add(self.proc.pid)

    def _wait(self, deadline: float) -> bool:
        """Until the driver ended (→ False) or the deadline passed (→ True)."""
        assert self.proc is not None
        pace = ScanPace()
        while self.proc.poll() is None:
            got = self._pump()
            now = time.monotonic()
            if pace.due(now):
                pace.listed(now, self._scan())
            if now >= deadline:
                return True
            if not got:
                time.sleep(POLL_SECONDS)
        return False

    def _pump(self, final: bool = False) -> bool:
        got = False
        for f in self.followers:
            for line in f.read(final):
                got = True
                text = f.prefix + line
                self.out.write(text + "\n")
                self.tails[f.source].append(line)
                self.recent.append(text)
        if got:
            self.out.flush()
        return got

    def _scan(self) -> set[int]:
        """Learn the process groups of everything below the driver while it runs (and forget
        those that ended); the processes below it."""
        table = process_table()
        forget_ended(table, self.groups)
        if self.proc is None or self.proc.poll() is not None:
            return set()
        own = os.getpgrp()
        below = descendants(table, [self.proc.pid])
        for pid in below:
            pgid = table[pid].pgid
            if pgid > 1 and pgid != own:
                self.groups.add(pgid)
        return below

    def _settled(self) -> bool:
        if self.proc is not None and self.proc.poll() is None:
            return False
        return not live_in_groups(process_table(), self.groups)

    def _settle(self, seconds: float) -> bool:
        end = time.monotonic() + seconds
        last_scan = 0.0
        while not self._settled():
            now = time.monotonic()
            if now >= end:
                return False
            if now - last_scan >= SCAN_SECONDS:
                self._scan()
                last_scan = now
            self._pump()
            time.sleep(POLL_SECONDS)
        return True

    def _stop(self) -> None:
        """The driver stops the entrypoint and shuts the cluster down; what outlives it, or
        a driver that takes too long, is SIGKILLed."""
        interrupted = False
        try:
            self._scan()
            if self.proc is not None and self.proc.poll() is None:
                self._pump()
                what = "the entrypoint" + ("" if self.plan.address else " and the Ray cluster")
                say(self.out, f"stopping {what} (SIGKILL after {SHUTDOWN_SECONDS:g} s)")
                self.proc.send_signal(signal.SIGTERM)
            self._settle(SHUTDOWN_SECONDS)
        except KeyboardInterrupt:  # a second Ctrl-C: stop hard, then let it through
            interrupted = True
        if not self._settled():
            self._scan()
            kill_groups(self.groups, signal.SIGKILL)
            # A killed process ends when it is next scheduled, later on a loaded machine.
            self._settle(KILLED_WAIT_SECONDS)
        if self.proc is not None:
            self.proc.wait()
        self._pump(final=True)
        for f in self.followers:
            f.close()
        if interrupted:
            raise KeyboardInterrupt

    def _judge(self, timeout: float, timed_out: bool, last: list[str]) -> None:
        code = self._entrypoint_code()
        if code is None and timed_out:
            where = (
                "with the entrypoint still running"
                if self.entry_log.exists()
                else "before the Ray cluster was up"
            )
            lines = [
                f"timed out after {timeout:g} s (--timeout) {where}; every process of the "
                "rehearsal was stopped"
            ]
            if last:
                lines += ["last lines before the timeout:", *(f"  | {line}" for line in last)]
            raise RehearsalError([self._problem("\n".join(lines))])
        if code is None:
            rc = self.proc.returncode if self.proc is not None else None
            lines = [f"the local Ray cluster did not start (its driver exited with code {rc})"]
            lines += self._tail("the Ray cluster", _CLUSTER)
            raise RehearsalError([self._problem("\n".join(lines))])
        if code == 0:
            return
        how = (
            f"was killed by {signal.Signals(-code).name}"
            if code < 0
            else f"exited with code {code}"
        )
        lines = [f"the entrypoint {how} {self.plan.where}; KubeRay would mark the RayJob FAILED"]
        lines += self._tail("the entrypoint", _ENTRY)
        tail = list(self.tails[_ENTRY])
        lines += [f"hint: {h}" for h in cpu_hints(tail)]
        pip = self.plan.target.runtime_pip
        if pip and any("No module named" in line for line in tail):
            lines.append(
                f"hint: runtime_env pip ({', '.join(pip)}) is not installed by a rehearsal; "
                f"install it for {sys.executable} to rehearse the job"
            )
        raise RehearsalError([self._problem("\n".join(lines))])

    def _entrypoint_code(self) -> int | None:
        try:
            return int(json.loads(self.result.read_text(encoding="utf-8"))["entrypoint"])
        except (OSError, ValueError, KeyError):
            return None

    def _tail(self, what: str, source: Source) -> list[str]:
        tail = list(self.tails[source])
        if not tail:
            return [f"{what} printed nothing"]
        return [f"last lines of {what}:", *(f"  | {line}" for line in tail)]

    def _problem(self, message: str) -> Problem:
        return Problem(file=self.file, obj=self.plan.target.describe(), message=message)
