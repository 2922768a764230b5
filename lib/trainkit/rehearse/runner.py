"""Running a rehearsal: start the nodes, stream their output, stop them all, judge the result."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from importlib.util import find_spec
from pathlib import Path
from typing import TextIO

from ..errors import Problem, RehearsalError, SetupError
from .buildlocks import BuildLocks, stale_message, uses_deepspeed
from .extras import CPU_TORCH, install_extra
from .launch import RehearsalPlan, plan_rehearsal
from .mpi import plan_mpi_rehearsal
from .outcome import RehearsalReport
from .output import (
    Follower,
    LauncherTracebacks,
    RankFailure,
    Source,
    cpu_hints,
    looks_like_peer_failure,
    parse_torchrun_failures,
)
from .ports import free_port
from .procs import descendants, forget_ended, kill_groups, live_in_groups, process_table
from .ray_target import RayJobTarget
from .stopping import (
    KILLED_WAIT_SECONDS,
    POLL_SECONDS,
    TAIL_LINES,
    ScanPace,
    run_stopping,
    say,
)
from .target import MPIJobTarget, Target
from .workspace import prepare_workspace

__all__ = ["rehearse", "require_framework", "require_torch"]

FAILURE_GRACE_SECONDS = 2.0
"""After a node fails, how long the others get to exit and report their own failures."""
STOP_GRACE_SECONDS = 3.0
"""Between SIGTERM (torchrun then stops its workers) and SIGKILL."""
# The line that says why a native crash happened (a C++ exception that ends the process, a
# signal report); its backtrace follows and fills the tail. Python tracebacks are shortened
# and shown whole already.
_CAUSE = re.compile(r"terminate called|what\(\):|Process received signal")
_SIGNALLED = {-int(signal.SIGTERM), -int(signal.SIGKILL)}


def require_torch() -> None:
    """Raise SetupError unless this interpreter can import torch (never imports it)."""
    if find_spec("torch") is None:
        raise SetupError(
            [
                Problem(
                    file="trainkit",
                    message=f"rehearse runs the training script with torchrun, but PyTorch is "
                    f"not installed for {sys.executable}; install PyTorch's CPU build first "
                    f"({CPU_TORCH}), then the extra: {install_extra('rehearse')}",
                )
            ]
        )
    if os.name != "posix":
        raise SetupError("rehearse needs Linux or macOS (it runs each node in its own session)")


# Kinds whose pods run one framework process each, not torchrun: (module, extra, what).
_FRAMEWORKS = {
    "XGBoostJob": ("xgboost", "xgboost", "XGBoost with its collective tracker"),
    "JAXJob": ("jax", "jax", "JAX (CPU) with jax.distributed"),
}


def require_framework(kind: str, file: str = "trainkit", obj: str = "") -> None:
    """Raise SetupError unless this interpreter can run a ``kind`` rehearsal: torch for the
    kinds torchrun or mpirun start, the job's framework for an XGBoostJob or a JAXJob (never
    imports it)."""
    if kind not in _FRAMEWORKS:
        require_torch()
        return
    module, extra, what = _FRAMEWORKS[kind]
    if find_spec(module) is None:
        raise SetupError(
            [
                Problem(
                    file=file,
                    obj=obj,
                    message=f"a {kind} is rehearsed with {what}, but {module} is not "
                    f"installed for {sys.executable}; install the extra: "
                    f"{install_extra(extra)}",
                )
            ]
        )
    if os.name != "posix":
        raise SetupError("rehearse needs Linux or macOS (it runs each node in its own session)")


def rehearse(
    target: Target,
    *,
    file: str | None = None,
    nodes: int | None = None,
    procs_per_node: int | None = None,
    timeout: float = 300.0,
    out: TextIO | None = None,
    ray_address: str | None = None,
    script_args: Sequence[str] = (),
) -> RehearsalReport:
    """Run ``target``'s pods on this machine as ``nodes`` by ``procs_per_node`` processes.

    ``target`` is one job's pods on one cluster (``plan_job`` or ``targets_for``);
    its script files are those of the ConfigMap the pods mount. ``file`` names
    the definition in messages (by default the target's). Output goes to ``out``
    (default stdout), each line prefixed ``[nodeN/rankR]`` (``[nodeN]`` for the
    launcher itself). Raises RehearsalError when a process exits non-zero or
    ``timeout`` seconds pass; every process started is stopped in all cases,
    also on KeyboardInterrupt.

    A RayJob runs its entrypoint on a local Ray cluster of its pods instead (``ray.py``):
    ``nodes`` caps the nodes of each worker group, ``procs_per_node`` the CPUs of each node;
    with ``ray_address`` (HOST:PORT) it runs on that running Ray cluster, started by the user.

    ``script_args`` are appended to the command line of the job's script (or command) after
    the args its pods get, e.g. a shorter run of it; the list of changes says so.
    """
    out = sys.stdout if out is None else out
    file = file or target.file
    script_args = tuple(script_args)
    if script_args and isinstance(target, RayJobTarget):
        raise RehearsalError(
            [
                Problem(
                    file=file,
                    obj=target.describe(),
                    message="--args are appended to the command line of a job's "
                    "ranks; a RayJob's entrypoint is one shell command: leave them out (change "
                    "entrypoint= to run it otherwise)",
                )
            ]
        )
    if script_args:
        target = replace(target, args=(*target.args, *script_args))
    if isinstance(target, RayJobTarget):
        from .ray import rehearse_ray  # imports this module

        return rehearse_ray(
            target, file=file, nodes=nodes, procs_per_node=procs_per_node, timeout=timeout,
            out=out, ray_address=ray_address,
        )  # fmt: skip
    if ray_address is not None:
        raise RehearsalError(
            [
                Problem(
                    file=file,
                    obj=target.describe(),
                    message=f"--ray-address is for a RayJob; {target.describe()} is rehearsed "
                    "without Ray: leave it out",
                )
            ]
        )
    require_framework(target.kind, file, target.describe())
    if timeout <= 0:
        raise RehearsalError(
            [Problem(file=file, obj=target.describe(), message="--timeout must be positive")]
        )
    python = sys.executable
    with tempfile.TemporaryDirectory(
        prefix=f"trainkit-rehearse-{target.name}-", ignore_cleanup_errors=True
    ) as tmp:
        workspace = Path(tmp) / "workspace"
        read_only = prepare_workspace(workspace, target.files, python)
        if isinstance(target, MPIJobTarget):
            plan = plan_mpi_rehearsal(
                target,
                workspace=workspace,
                log_dir=Path(tmp) / "logs",
                master_port=free_port(),
                nodes=nodes,
                procs_per_node=procs_per_node,
                inherited=dict(os.environ),
                python=python,
                file=file,
                read_only=read_only,
            )
        else:
            plan = plan_rehearsal(
                target,
                workspace=workspace,
                log_dir=Path(tmp) / "logs",
                master_port=free_port(),
                nodes=nodes,
                procs_per_node=procs_per_node,
                python=python,
                file=file,
                read_only=read_only,
            )
        if script_args:
            plan = replace(
                plan,
                changes=(
                    *plan.changes,
                    f"args: {shlex.join(script_args)} appended to the pods' (--args)",
                ),
            )
        _header(plan, file, out)
        start = time.monotonic()
        _Run(plan, out, file).run(timeout)
        seconds = time.monotonic() - start
    say(
        out,
        f"succeeded: {plan.nodes} node(s) × {plan.procs_per_node} process(es) in {seconds:.1f} s",
    )
    return RehearsalReport(
        job=target.name,
        file=file,
        nodes=plan.nodes,
        procs_per_node=plan.procs_per_node,
        changes=plan.changes,
        commands=tuple(launch.command_line for launch in plan.launches),
        seconds=seconds,
        kind=target.kind,
        cluster=target.cluster,
        runtime=target.runtime,
    )


def _header(plan: RehearsalPlan, file: str, out: TextIO) -> None:
    t = plan.target
    say(
        out,
        f"{t.describe()} ({file}): {plan.nodes} node(s) × {plan.procs_per_node} "
        f"process(es) on CPU, world size {plan.world_size}",
    )
    say(out, f"pods of cluster {t.cluster!r}: image {t.image}")
    pr = t.effective.planned.runtime
    if pr is not None:
        d = pr.definition
        where = f"{d.file}:{d.line}" if d.line else d.file
        say(out, f"runtime: {t.runtime} ({where})")
    say(out, "changed for the rehearsal:")
    for change in plan.changes:
        say(out, f"  - {change}")
    for launch in plan.launches:
        say(
            out,
            f"node {launch.node_rank} ({t.pod(launch.node_rank)}): {launch.command_line}",
        )


@dataclass(frozen=True)
class _Failed:
    node: int
    rank: int | None
    code: int


class _Run:
    def __init__(
        self,
        plan: RehearsalPlan,
        out: TextIO,
        file: str,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.plan = plan
        self.clock = clock
        """What the deadline, the failure grace and the build locks' quiet period are counted
        in (stopping the processes waits in real seconds)."""
        self.out = out
        self.file = file
        self.procs: list[subprocess.Popen[bytes]] = []
        self.followers: list[Follower] = []
        self.tails: defaultdict[Source, deque[str]] = defaultdict(lambda: deque(maxlen=TAIL_LINES))
        self.recent: deque[str] = deque(maxlen=TAIL_LINES)
        self.causes: dict[Source, str] = {}
        """Per source, the first line that names a native crash: the backtrace printed after
        it pushes it out of the tail."""
        self.groups: set[int] = set()
        self.exits: dict[int, int] = {}
        """Node rank → exit code, in the order the nodes ended by themselves."""
        self.launcher_tracebacks: dict[int, LauncherTracebacks] = {}
        self.stopping = False
        """Once set, torchrun's own lines (its reaction to being stopped) are not shown."""
        self.last_lines: list[str] = []
        t = plan.target
        deepspeed = (isinstance(t, MPIJobTarget) and t.launch == "deepspeed") or uses_deepspeed(
            t.files
        )
        self.build_locks = BuildLocks(plan.launches[0].env) if deepspeed else None
        """The locks of DeepSpeed's op builds, which its ranks would wait on without end."""
        self.own: set[int] = set()
        """The processes below the launchers at the last scan."""
        self.stale_lock: Path | None = None

    # -- running ---------------------------------------------------------------

    def run(self, timeout: float) -> None:
        deadline = self.clock() + timeout
        timed_out = run_stopping(
            self._start, lambda: self._wait(deadline), self._stop, self._problem, self.out
        )
        running = [n for n in range(len(self.procs)) if n not in self.exits]
        self._stop()
        failed = [n for n, code in self.exits.items() if code != 0]
        if failed:
            raise RehearsalError([self._problem(self._failure_message(failed))])
        if self.stale_lock is not None:
            raise RehearsalError([self._problem(stale_message(self.stale_lock))])
        if timed_out:
            raise RehearsalError([self._problem(self._timeout_message(timeout, running))])

    def _start(self) -> None:
        for launch in self.plan.launches:
            n = launch.node_rank
            launch.log_dir.mkdir(parents=True, exist_ok=True)
            node_log = launch.log_dir.parent / f"node{n}.log"
            try:
                with node_log.open("wb") as fh:
                    proc = subprocess.Popen(
                        launch.run_argv,
                        env=dict(launch.env),
                        cwd=self.plan.workspace,
                        stdin=subprocess.DEVNULL,
                        stdout=fh,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
            except OSError as e:
                raise RehearsalError(
                    [self._problem(f"cannot start node {n}: {launch.argv[0]}: {e.strerror}")]
                ) from None
            self.procs.append(proc)
            self.groups.add(proc.pid)
            self.followers.append(
                Follower(node_log.parent, node_log.name, (n, None), f"[node{n}] ")
            )
            if not launch.torchrun:
                continue
            self.launcher_tracebacks[n] = LauncherTracebacks()
            for local in range(self.plan.procs_per_node):
                rank = self.plan.global_rank(n, local)
                for stream in ("stdout", "stderr"):
                    self.followers.append(
                        Follower(
                            launch.log_dir,
                            f"*/attempt_*/{local}/{stream}.log",
                            (n, rank),
                            f"[node{n}/rank{rank}] ",
                        )
                    )

    def _wait(self, deadline: float) -> bool:
        """Until every node ended, a failure's grace passed, or the deadline (→ True)."""
        first_failure: float | None = None
        pace = ScanPace()
        while True:
            got = self._pump()
            now = self.clock()
            if pace.due(now):
                self._scan()
                pace.listed(now, self.own)
                if self.build_locks is not None:
                    self.stale_lock = self.build_locks.check(now, self.own)
                    for build in self.build_locks.builds:
                        say(
                            self.out,
                            f"DeepSpeed's {build.name} op is being built in {build}; the ranks "
                            "wait for the build (a minute or more on a busy machine)",
                        )
                    self.build_locks.builds.clear()
                    if self.stale_lock is not None:
                        return False
            for n, proc in enumerate(self.procs):
                if n not in self.exits and (code := proc.poll()) is not None:
                    self.exits[n] = code
            if len(self.exits) == len(self.procs):
                return False
            if any(code != 0 for code in self.exits.values()):
                # The operator fails the whole job; let the other nodes report first.
                first_failure = first_failure or now
                if now - first_failure >= FAILURE_GRACE_SECONDS:
                    return False
            if now >= deadline:
                self.last_lines = list(self.recent)
                return True
            if not got:
                time.sleep(POLL_SECONDS)

    def _pump(self, final: bool = False) -> bool:
        got = False
        for f in self.followers:
            lines = f.read(final)
            got = got or bool(lines)
            node, rank = f.source
            shorten = self.launcher_tracebacks.get(node) if rank is None else None
            if shorten is not None:
                if self.stopping:
                    continue
                lines = [out for line in lines for out in shorten.feed(line)]
                if final:
                    lines += shorten.flush()
            for line in lines:
                text = f.prefix + line
                self.out.write(text + "\n")
                self.tails[f.source].append(line)
                self.recent.append(text)
                if f.source not in self.causes and _CAUSE.search(line):
                    self.causes[f.source] = line
        if got:
            self.out.flush()
        return got

    # -- stopping --------------------------------------------------------------

    def _scan(self) -> None:
        """Learn the process groups of everything below the launchers still running."""
        table = process_table()
        forget_ended(table, self.groups)
        roots = [p.pid for p in self.procs if p.returncode is None]
        own = os.getpgrp()
        below = descendants(table, roots)
        self.own = below
        for pid in below:
            pgid = table[pid].pgid
            if pgid > 1 and pgid != own:
                self.groups.add(pgid)

    def _settled(self) -> bool:
        if any(p.poll() is None for p in self.procs):
            return False
        return not live_in_groups(process_table(), self.groups)

    def _settle(self, seconds: float) -> bool:
        end = time.monotonic() + seconds
        while not self._settled():
            if time.monotonic() >= end:
                return False
            self._pump()
            time.sleep(POLL_SECONDS)
        return True

    def _stop(self) -> None:
        """Stop every process the rehearsal started: SIGTERM, then SIGKILL."""
        interrupted = False
        try:
            self._scan()
            if not self._settled():
                self._pump()
                self.stopping = True
                running = [str(n) for n, p in enumerate(self.procs) if p.poll() is None]
                if running:
                    say(
                        self.out,
                        f"stopping node(s) {', '.join(running)}: SIGTERM, and SIGKILL "
                        f"after {STOP_GRACE_SECONDS:g} s",
                    )
                kill_groups(self.groups, signal.SIGTERM)
                self._settle(STOP_GRACE_SECONDS)
        except KeyboardInterrupt:  # a second Ctrl-C: stop hard, then let it through
            interrupted = True
        if not self._settled():
            self._scan()
            roots = {p.pid for p in self.procs}
            # Workers first, so their launchers (still alive) collect them.
            kill_groups(self.groups - roots, signal.SIGKILL)
            self._settle(0.5)
            kill_groups(self.groups, signal.SIGKILL)
            # A killed process ends when it is next scheduled, later on a loaded machine:
            # rehearse returns only once nothing it started runs.
            self._settle(KILLED_WAIT_SECONDS)
        for proc in self.procs:
            proc.wait()
        if self.build_locks is not None:
            for lock in self.build_locks.release_ours():
                say(self.out, f"removed {lock}: a build of this rehearsal was stopped holding it")
        self._pump(final=True)
        for f in self.followers:
            f.close()
        if interrupted:
            raise KeyboardInterrupt

    # -- judging ---------------------------------------------------------------

    def _problem(self, message: str) -> Problem:
        return Problem(file=self.file, obj=self.plan.target.describe(), message=message)

    def _where(self, node: int, rank: int | None) -> str:
        pod = self.plan.target.pod(node)
        if rank is None:
            return f"node {node} (pod {pod})"
        local = rank - self.plan.global_rank(node, 0)
        return f"rank {rank} on node {node} (pod {pod}, local rank {local})"

    def _failures(self, failed_nodes: list[int]) -> list[_Failed]:
        """Failed ranks, the likely root cause first."""
        ranks: list[tuple[RankFailure, int]] = []
        for n in failed_nodes:
            launch = self.plan.launches[n]
            if launch.torchrun:
                log = launch.log_dir.parent / f"node{n}.log"
                text = log.read_text(encoding="utf-8", errors="replace")
                ranks.extend((f, n) for f in parse_torchrun_failures(text))
        genuine = [(f, n) for f, n in ranks if f.exitcode not in _SIGNALLED] or ranks

        def order(item: tuple[RankFailure, int]) -> tuple[bool, int]:
            f, n = item
            return looks_like_peer_failure(self.tails[(n, f.rank)]), self._last_output(n, f.rank)

        found = [_Failed(n, f.rank, f.exitcode) for f, n in sorted(genuine, key=order)]
        reported = {f.node for f in found}
        found += [_Failed(n, None, self.exits[n]) for n in failed_nodes if n not in reported]
        return found

    def _last_output(self, node: int, rank: int) -> int:
        return max((f.mtime_ns() for f in self.followers if f.source == (node, rank)), default=0)

    def _failure_message(self, failed_nodes: list[int]) -> str:
        first, *others = self._failures(failed_nodes)
        lines = [
            f"{self._where(first.node, first.rank)} exited with code {first.code}; "
            f"{self.plan.target.operator} would mark the whole job Failed"
        ]
        tail = list(self.tails[(first.node, first.rank)])
        if not tail and first.rank is not None:
            tail = list(self.tails[(first.node, None)])
        label = f"node{first.node}" + (f"/rank{first.rank}" if first.rank is not None else "")
        cause = self.causes.get((first.node, first.rank)) or self.causes.get((first.node, None))
        if cause is not None and cause not in tail:
            lines.append(f"first error of {label}: {cause}")
        if tail:
            lines.append(f"last lines of {label}:")
            lines.extend(f"  | {line}" for line in tail)
        else:
            lines.append(f"{label} printed nothing")
        lines.extend(f"hint: {h}" for h in cpu_hints(tail))
        if others:
            lines.append(
                "also failed: "
                + ", ".join(f"{self._where(f.node, f.rank)} with code {f.code}" for f in others)
            )
        return "\n".join(lines)

    def _timeout_message(self, timeout: float, running: list[int]) -> str:
        nodes = ", ".join(str(n) for n in running)
        lines = [
            f"timed out after {timeout:g} s (--timeout) with node(s) {nodes} still running; "
            "every process of the rehearsal was stopped"
        ]
        if self.last_lines:
            lines.append("last lines before the timeout:")
            lines.extend(f"  | {line}" for line in self.last_lines)
        lines.extend(f"hint: {h}" for h in cpu_hints(self.last_lines))
        for lock in self.build_locks.paths() if self.build_locks is not None else ():
            lines.append(
                f"hint: {lock} exists: DeepSpeed's ranks wait while it does; a build stopped "
                "midway leaves it behind (delete it if no build runs)"
            )
        return "\n".join(lines)
