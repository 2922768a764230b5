"""A RayJob rehearsal's Ray cluster and entrypoint, in one process tree (run by path).

``python -P ray_cluster.py SPEC`` reads the JSON written by ``ray.py``, starts the head and
the worker nodes of a Ray cluster on this machine with ``ray.cluster_utils.Cluster`` (every
Ray process it starts is its own, and ``shutdown()`` stops only those, where ``ray stop``
would stop every Ray process of the machine), runs the entrypoint once every node is up as
KubeRay's submitter has it run on the head, writes its exit code to SPEC's ``result`` file,
and shuts the cluster down; with no nodes in SPEC (``--ray-address``) it starts no cluster and
runs the entrypoint on the running one at SPEC's ``address``. SIGTERM stops the entrypoint
(SIGTERM, then SIGKILL, as Ray's job supervisor stops a job), then the cluster.

On Linux this process is the child subreaper of everything below it: a Ray process orphaned
while the cluster goes down is reparented here, not to init, and is killed before this
process exits, so the rehearsal leaves nothing behind; and it gets SIGTERM when the rehearsal
ends without stopping it (killed with SIGKILL).

``-P`` keeps this file's directory (``trainkit/rehearse``, which holds ``ray.py``) off
``sys.path``, where it would shadow ``ray``. Standard library and ray only.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import FrameType
from typing import Any

# <linux/prctl.h>
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


class _Stop(Exception):
    pass


def _raise_stop(signum: int, frame: FrameType | None) -> None:
    raise _Stop(signal.Signals(signum).name)


def _say(line: str) -> None:
    print(line, flush=True)


def main(spec_path: str) -> int:
    spec: dict[str, Any] = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    signal.signal(signal.SIGTERM, _raise_stop)
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        # A rehearsal killed outright (SIGKILL) cannot stop the cluster: its end does.
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != spec["parent"]:  # it ended before that took effect
            raise SystemExit(1)
    signal.signal(signal.SIGHUP, _raise_stop)
    entry: subprocess.Popen[bytes] | None = None
    cluster: Any = None
    try:
        if spec["nodes"]:
            from ray.cluster_utils import Cluster

            cluster = Cluster(shutdown_at_exit=True)  # at exit, also after an exception
            for node in spec["nodes"]:
                _add_node(cluster, node, spec)
                # Each Ray node installs a SIGTERM handler of its own, which stops that node only.
                signal.signal(signal.SIGTERM, _raise_stop)
            cluster.wait_for_nodes(timeout=spec["start_timeout"])
            _say(
                f"Ray cluster up: {len(spec['nodes'])} node(s); starting the entrypoint on the head"
            )
        else:
            _say(f"starting the entrypoint on the Ray cluster at {spec['address']}")
        with open(spec["entrypoint_log"], "wb") as log:
            entry = subprocess.Popen(
                spec["argv"],
                env=spec["env"],
                cwd=spec["cwd"],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        code = entry.wait()
        Path(spec["result"]).write_text(json.dumps({"entrypoint": code}), encoding="utf-8")
        _say(
            f"the entrypoint exited with code {code}"
            + ("; shutting the Ray cluster down" if cluster is not None else "")
        )
    except _Stop as e:
        _say(f"{e}: stopping the entrypoint" + (" and the Ray cluster" if spec["nodes"] else ""))
    finally:
        # Nothing may interrupt the shutdown; the rehearsal SIGKILLs what takes too long.
        for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(s, signal.SIG_IGN)
        if entry is not None and entry.poll() is None:
            _end(entry, float(spec["stop_grace"]))
        if cluster is not None:
            try:
                cluster.shutdown()
            except Exception as e:  # what is left is killed below
                _say(f"Ray's shutdown failed ({e!r}); killing its processes")
        _kill_descendants()
    return 0


def _add_node(cluster: Any, node: dict[str, Any], spec: dict[str, Any]) -> None:
    # KubeRay's env of the node's container (RAY_NODE_TYPE_NAME becomes the node's
    # ray.io/node-group label): what the node's raylet and its workers inherit.
    for name in spec["per_node_env"]:
        os.environ.pop(name, None)
    os.environ.update(node["env"])
    args: dict[str, Any] = {
        "num_cpus": node["cpus"],
        "num_gpus": 0,
        "object_store_memory": spec["object_store_memory"],
    }
    if node["memory"] is not None:
        args["memory"] = node["memory"]
    if node["head"]:
        args |= {
            "temp_dir": spec["temp_dir"],
            "gcs_server_port": spec["gcs_port"],
            "include_dashboard": False,
            # No autoscaler (ray/autoscaler/_private/monitor.py, started by the head unless
            # no_monitor: ray/_private/node.py start_head_processes): the nodes are fixed.
            "no_monitor": True,
            "dashboard_port": spec["dashboard_port"],
            # Ray's default 52365 would collide with another rehearsal's head; 0 binds any.
            "dashboard_agent_listen_port": 0,
        }
    # The head must be up before a worker joins it; workers start side by side.
    cluster.add_node(wait=node["head"], **args)
    _say(f"node {node['pod']} (group {node['group']}): {node['cpus']} CPU(s), 0 GPUs")


def _end(entry: subprocess.Popen[bytes], grace: float) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(entry.pid, signal.SIGTERM)
    try:
        entry.wait(grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(entry.pid, signal.SIGKILL)
        entry.wait()


def _kill_descendants() -> None:
    """SIGKILL every process still below this one, and collect them."""
    while rest := _descendants(os.getpid()):
        for pid in rest:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        # Orphans are this subreaper's children now: collect every exited child.
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, 0)[0] > 0:
                pass


def _descendants(root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid, ppid in _parents().items():
        children.setdefault(ppid, []).append(pid)
    found: set[int] = set()
    todo = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo.extend(children.get(pid, []))
    return found


def _parents() -> dict[int, int]:
    """Running processes of the machine: pid → parent pid (zombies left out)."""
    table: dict[int, int] = {}
    proc = Path("/proc")
    if (proc / "self" / "stat").exists():
        for entry in proc.iterdir():
            if entry.name.isdigit():
                try:
                    raw = (entry / "stat").read_text()
                except OSError:
                    continue
                state, ppid = raw[raw.rfind(")") + 2 :].split()[:2]
                if state not in "ZX":
                    table[int(entry.name)] = int(ppid)
        return table
    out = subprocess.run(
        ["ps", "-A", "-o", "pid=", "-o", "ppid=", "-o", "stat="],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3 and not parts[2].startswith("Z"):
            table[int(parts[0])] = int(parts[1])
    return table


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
