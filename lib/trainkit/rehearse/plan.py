"""What a rehearsal runs: one launcher per simulated node with the operator's env.

Pure apart from reading ``os.environ`` and checking whether files exist: no
process is started here, so the env contract and the list of changes can be
tested without torch.
"""

from __future__ import annotations

import os
import posixpath
import re
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import Problem, RehearsalError
from ..injected_env import PYTORCHJOB_MASTER_PORT, pytorchjob_env, reserved_env_reason
from ..model import WORKSPACE, PyTorchJob

__all__ = [
    "DEFAULT_MAX_NODES",
    "DEFAULT_MAX_PROCS",
    "LOCAL_MASTER_ADDR",
    "NodeLaunch",
    "RehearsalPlan",
    "plan_rehearsal",
    "pod_name",
]

DEFAULT_MAX_NODES = 2
"""Without ``--nodes`` a rehearsal runs at most this many nodes."""
DEFAULT_MAX_PROCS = 2
"""Without ``--procs-per-node`` a rehearsal runs at most this many processes per node."""
LOCAL_MASTER_ADDR = "127.0.0.1"

# Set by torchrun (or its agent) for the processes it starts; a value inherited
# from the caller's shell (e.g. a rehearsal started inside another torchrun)
# must not leak into the simulated pods.
_LAUNCHER_ENV = {"ROLE_RANK", "ROLE_WORLD_SIZE", "ROLE_NAME", "GROUP_WORLD_SIZE"}
_LAUNCHER_PREFIXES = ("TORCHELASTIC_",)
_GPU_ONLY_PREFIXES = ("NCCL_", "TORCH_NCCL_", "CUDA_")
_PYTHON = re.compile(r"^python(\d+(\.\d+)*)?$")


@dataclass(frozen=True)
class NodeLaunch:
    """How one simulated node (pod) is started."""

    node_rank: int
    argv: tuple[str, ...]
    env: Mapping[str, str]
    """The complete environment of the node's process."""
    torchrun: bool
    """Whether ``argv`` is torchrun, which writes one log per rank under ``log_dir``."""
    log_dir: Path

    @property
    def command_line(self) -> str:
        return shlex.join(self.argv)


@dataclass(frozen=True)
class RehearsalPlan:
    job: PyTorchJob
    nodes: int
    procs_per_node: int
    workspace: Path
    """Stands in for the ConfigMap mounted at ``/workspace``; the working directory."""
    master_port: int
    launches: tuple[NodeLaunch, ...]
    changes: tuple[str, ...]
    """Every way the rehearsal differs from the job on the cluster, in words."""

    @property
    def world_size(self) -> int:
        return self.nodes * self.procs_per_node

    def global_rank(self, node_rank: int, local_rank: int) -> int:
        return node_rank * self.procs_per_node + local_rank


def pod_name(job: str, node_rank: int) -> str:
    """The operator's pod for a node rank: node 0 is the Master, node i is Worker i-1."""
    return f"{job}-master-0" if node_rank == 0 else f"{job}-worker-{node_rank - 1}"


def plan_rehearsal(
    job: PyTorchJob,
    *,
    workspace: Path,
    log_dir: Path,
    master_port: int,
    nodes: int | None = None,
    procs_per_node: int | None = None,
    base_env: Mapping[str, str] | None = None,
    python: str = sys.executable,
    file: str = "<python>",
) -> RehearsalPlan:
    """The launches and the list of changes for rehearsing ``job`` on this machine.

    ``base_env`` (default ``os.environ``) stands in for the image's env; the
    job's env and the operator's env for each node are laid over it.
    """
    changes: list[str] = []
    n = _size(file, job, "nodes", job.nodes, nodes, "--nodes", DEFAULT_MAX_NODES, changes)
    job_procs = job.nprocs
    label = "procs_per_node"
    if job.procs_per_node is None and job.resources.gpu:
        label = "procs_per_node (one per GPU)"
    p = _size(
        file, job, label, job_procs, procs_per_node, "--procs-per-node", DEFAULT_MAX_PROCS, changes
    )

    if job.resources.gpu:
        changes.append(
            f"resources.gpu {job.resources.gpu} → 0 (CPU rehearsal: CUDA_VISIBLE_DEVICES is "
            "empty, so scripts take their CPU path and gloo instead of NCCL)"
        )
    changes.append(
        f"MASTER_ADDR {pod_name(job.name, 0)} → {LOCAL_MASTER_ADDR} and MASTER_PORT "
        f"{PYTORCHJOB_MASTER_PORT} → {master_port} (every node runs on this machine)"
    )
    if job.script is not None:
        changes.append(
            f"{WORKSPACE} → {workspace} (holds {job.script.filename}, as the ConfigMap would)"
        )

    env = _base_env(os.environ if base_env is None else base_env, python, changes)
    env.update(_user_env(job, workspace, changes))
    env["CUDA_VISIBLE_DEVICES"] = ""
    if "OMP_NUM_THREADS" not in env:
        # torchrun sets this for its workers when procs_per_node > 1; here every
        # node shares one machine, so single-threaded ranks avoid oversubscription.
        env["OMP_NUM_THREADS"] = "1"
        changes.append(
            "OMP_NUM_THREADS=1 (all ranks share this machine's CPUs; set it in env to change)"
        )
    changes.extend(_not_applied(job))

    launches = []
    for node in range(n):
        node_env = dict(env)
        node_env.update(
            pytorchjob_env(
                job_name=job.name,
                nodes=n,
                procs_per_node=p,
                node_rank=node,
                master_addr=LOCAL_MASTER_ADDR,
                master_port=master_port,
            )
        )
        node_logs = log_dir / f"node{node}"
        argv, torchrun = _argv(job, workspace, node_logs, python, file)
        launches.append(NodeLaunch(node, argv, node_env, torchrun, node_logs))
    return RehearsalPlan(
        job=job,
        nodes=n,
        procs_per_node=p,
        workspace=workspace,
        master_port=master_port,
        launches=tuple(launches),
        changes=tuple(changes),
    )


def _size(
    file: str,
    job: PyTorchJob,
    what: str,
    value: int,
    asked: int | None,
    flag: str,
    cap: int,
    changes: list[str],
) -> int:
    if asked is not None:
        if asked < 1:
            raise RehearsalError(
                [Problem(file=file, obj=job.describe(), message=f"{flag} must be at least 1")]
            )
        if asked != value:
            changes.append(f"{what} {value} → {asked} ({flag})")
        return asked
    if value > cap:
        changes.append(
            f"{what} {value} → {cap} (rehearsal default on one CPU machine; "
            f"pass {flag} {value} to rehearse the full size)"
        )
        return cap
    return value


def _base_env(inherited: Mapping[str, str], python: str, changes: list[str]) -> dict[str, str]:
    env: dict[str, str] = {}
    dropped = []
    for k, v in inherited.items():
        if (
            reserved_env_reason(k)
            or k in _LAUNCHER_ENV
            or k.startswith(_LAUNCHER_PREFIXES)
            or k == "CUDA_VISIBLE_DEVICES"
        ):
            dropped.append(k)
        else:
            env[k] = v
    dropped = [k for k in dropped if k != "PYTHONUNBUFFERED"]  # the operator sets it to 1
    if dropped:
        changes.append(
            "not inherited from this shell (the operator, torchrun or the rehearsal sets "
            f"them): {', '.join(sorted(dropped))}"
        )
    # The image's torchrun and python: the interpreter that has torch comes first.
    bindir = str(Path(python).parent)
    path = env.get("PATH", "")
    if path.split(os.pathsep)[0] != bindir:
        env["PATH"] = os.pathsep.join([bindir, path]) if path else bindir
    return env


def _user_env(job: PyTorchJob, workspace: Path, changes: list[str]) -> dict[str, str]:
    env = {}
    gpu_only = []
    for k, v in job.env.items():
        if k == "CUDA_VISIBLE_DEVICES":
            changes.append(f"env CUDA_VISIBLE_DEVICES {v!r} → '' (CPU rehearsal)")
            continue
        if k.startswith(_GPU_ONLY_PREFIXES):
            gpu_only.append(k)
        local = _to_workspace(v, workspace)
        if local != v:
            changes.append(f"env {k} {v!r} → {local!r}")
        env[k] = local
    if gpu_only:
        changes.append(
            f"env {', '.join(sorted(gpu_only))}: GPU settings, passed on but ignored on CPU "
            "(NCCL and CUDA are not used; collectives run on gloo)"
        )
    return env


def _not_applied(job: PyTorchJob) -> list[str]:
    out = []
    res = job.resources
    out.append(
        f"resources.cpu {res.cpu} and memory {res.memory} per node are not enforced "
        "(all nodes share this machine)"
    )
    if job.shm_size is not None:
        out.append(f"shm_size {job.shm_size}: not applied (this machine's /dev/shm is used)")
    for v in job.volumes:
        here = "exists" if Path(v.path).exists() else "does not exist"
        out.append(
            f"volume {v.claim!r} at {v.path} is not mounted ({v.path} {here} on this machine)"
        )
    if job.restart_policy != "Never":
        out.append(
            f"restart_policy {job.restart_policy}: no restarts; the rehearsal stops at the "
            "first failure"
        )
    return out


def _torchrun(python: str, log_dir: Path) -> tuple[str, ...]:
    # Each rank's stdout/stderr goes to its own file under log_dir, which the
    # runner follows and prefixes; torchrun's other settings come from PET_*.
    return (python, "-m", "torch.distributed.run", "--redirects", "3", "--log-dir", str(log_dir))


def _argv(
    job: PyTorchJob, workspace: Path, log_dir: Path, python: str, file: str
) -> tuple[tuple[str, ...], bool]:
    args = tuple(_to_workspace(a, workspace) for a in job.args)
    if job.script is not None:
        return (*_torchrun(python, log_dir), str(workspace / job.script.filename), *args), True
    command = [_to_workspace(c, workspace) for c in job.command or []]
    _check_command_files(job, [*command[1:], *args], workspace, file)
    program = posixpath.basename(command[0])
    if program == "torchrun":
        return (*_torchrun(python, log_dir), *command[1:], *args), True
    if _PYTHON.match(program):
        return (python, *command[1:], *args), False
    return (*command, *args), False


def _check_command_files(job: PyTorchJob, tokens: Sequence[str], cwd: Path, file: str) -> None:
    """Say plainly when a command job runs a script that lives only in its image."""
    for token in tokens:
        if token.startswith("-") or not token.endswith(".py"):
            continue
        path = Path(token) if os.path.isabs(token) else cwd / token
        if not path.exists():
            raise RehearsalError(
                [
                    Problem(
                        file=file,
                        obj=job.describe(),
                        field="command",
                        message=f"{token} is not on this machine: a command job runs code "
                        f"inside its image ({job.image}), which a rehearsal cannot see. "
                        "Rehearse a job that ships its script (script=Script.file(...)), "
                        "or put the file at that path",
                    )
                ]
            )


def _to_workspace(value: str, workspace: Path) -> str:
    """``/workspace/x`` (also in ``--opt=/workspace/x``) → the local workspace."""
    head, sep, tail = value.partition("=")
    if sep and not head.startswith("/"):
        return head + sep + _to_workspace(tail, workspace)
    if value == WORKSPACE or value.startswith(WORKSPACE + "/"):
        return str(workspace) + value[len(WORKSPACE) :]
    return value
