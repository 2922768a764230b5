"""What a rehearsal runs: one launcher per simulated node with the operator's env.

The same for PyTorchJobs and TrainJobs: what differs between them comes from
the job's Target (``target.py``), itself read from the pods the controllers
will create.

Pure apart from reading ``os.environ`` and checking whether files exist: no
process is started here, so the env contract, the layout and the list of
changes can be tested without torch.
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
from ..injected_env.training_operator_env import PYTORCHJOB
from ..model import WORKSPACE, Role
from ..model.operator_job import OperatorJob
from .target import Target, pod_name
from .workspace import Protection, ReadOnly

__all__ = [
    "DEFAULT_MAX_NODES",
    "DEFAULT_MAX_PROCS",
    "LOCAL_MASTER_ADDR",
    "NodeLaunch",
    "RehearsalPlan",
    "plan_rehearsal",
    "pod_name",
    "python_argv",
    "shell_env",
    "sized",
    "user_env",
    "workspace_change",
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
    """The node's command, as the pod's with paths under /workspace mapped here."""
    env: Mapping[str, str]
    """The complete environment of the node's process."""
    torchrun: bool
    """Whether ``argv`` is torchrun, which writes one log per rank under ``log_dir``."""
    log_dir: Path
    wrapper: tuple[str, ...] = ()
    """What starts ``argv`` with the script files read-only (see ``workspace.py``), if needed."""

    @property
    def command_line(self) -> str:
        return shlex.join(self.argv)

    @property
    def run_argv(self) -> tuple[str, ...]:
        return self.wrapper + self.argv


@dataclass(frozen=True)
class RehearsalPlan:
    target: Target
    nodes: int
    procs_per_node: int
    workspace: Path
    """Stands in for the pod's ``/workspace``; the working directory."""
    master_port: int
    launches: tuple[NodeLaunch, ...]
    changes: tuple[str, ...]
    """Every way the rehearsal differs from the job on the cluster, in words."""

    @property
    def world_size(self) -> int:
        return self.nodes * self.procs_per_node

    def global_rank(self, node_rank: int, local_rank: int) -> int:
        return node_rank * self.procs_per_node + local_rank


def plan_rehearsal(
    target: Target,
    *,
    workspace: Path,
    log_dir: Path,
    master_port: int,
    nodes: int | None = None,
    procs_per_node: int | None = None,
    base_env: Mapping[str, str] | None = None,
    python: str = sys.executable,
    file: str | None = None,
    read_only: ReadOnly | None = None,
) -> RehearsalPlan:
    """The launches and the list of changes for rehearsing ``target`` on this machine.

    ``base_env`` (default ``os.environ``) stands in for the image's env; the
    pod's env from the definitions and the operator's env for each node are
    laid over it. ``read_only`` says how ``workspace.prepare_workspace`` keeps
    the script files read-only (by default their mode does).
    """
    t = target
    file = file or t.file
    read_only = read_only or ReadOnly()
    changes: list[str] = []
    if t.one_process_per_pod and procs_per_node not in (None, 1):
        raise RehearsalError(
            [
                Problem(
                    file=file,
                    obj=t.describe(),
                    message=f"--procs-per-node: each pod of a {t.kind} runs one process (the "
                    "operator starts no launcher); rehearse more processes with --nodes",
                )
            ]
        )
    n = sized(file, t, t.nodes_label, t.nodes, nodes, "--nodes", DEFAULT_MAX_NODES, changes)
    p = sized(
        file,
        t,
        t.procs_label,
        t.procs_per_node,
        procs_per_node,
        "--procs-per-node",
        DEFAULT_MAX_PROCS,
        changes,
    )

    if t.gpus:
        changes.append(
            f"resources.gpu {t.gpus} → 0 (CPU rehearsal: CUDA_VISIBLE_DEVICES is "
            "empty, so scripts take their CPU path and gloo instead of NCCL)"
        )
    addr_var, port_var = t.master_vars
    changes.append(
        f"{addr_var} {t.operator_env.get(addr_var)} → {LOCAL_MASTER_ADDR} and {port_var} "
        f"{t.operator_env.get(port_var)} → {master_port} (every node runs on this machine)"
    )
    if t.files:
        changes.append(workspace_change(workspace, list(t.files), read_only))

    inherited = os.environ if base_env is None else base_env
    env = shell_env(inherited, t, python, changes)
    env.update(user_env(t, workspace, changes, inherited))
    env["CUDA_VISIBLE_DEVICES"] = ""
    if "OMP_NUM_THREADS" not in env:
        # torchrun sets this for its workers when procs_per_node > 1; here every
        # node shares one machine, so single-threaded ranks avoid oversubscription.
        env["OMP_NUM_THREADS"] = "1"
        changes.append(
            "OMP_NUM_THREADS=1 (all ranks share this machine's CPUs; set it in env to change)"
        )
    changes.extend(_not_applied(t, p))

    files = [workspace / name for name in t.files]
    wrapper = read_only.wrapper(files, python)
    launches = []
    for node in range(n):
        node_env = dict(env)
        node_env.update(
            t.injected_env(
                nodes=n,
                procs_per_node=p,
                node_rank=node,
                master_addr=LOCAL_MASTER_ADDR,
                master_port=master_port,
            )
        )
        node_logs = log_dir / f"node{node}"
        argv, torchrun = _argv(t, workspace, node_logs, python, file)
        launches.append(NodeLaunch(node, argv, node_env, torchrun, node_logs, wrapper))
    return RehearsalPlan(
        target=t,
        nodes=n,
        procs_per_node=p,
        workspace=workspace,
        master_port=master_port,
        launches=tuple(launches),
        changes=tuple(changes),
    )


def workspace_change(workspace: Path, names: list[str], read_only: ReadOnly) -> str:
    listed = ", ".join(names)
    if read_only.protection is Protection.NONE:
        return (
            f"{WORKSPACE} → {workspace} (a writable directory holding {listed}, which the pod "
            "mounts read-only from the ConfigMap (a write fails there with 'Read-only file "
            "system') but which stays writable here: root ignores file modes and read-only "
            f"mounts were refused: {read_only.reason})"
        )
    how = ""
    if read_only.protection is Protection.MOUNT:
        how = "; bind-mounted read-only for each node, since root ignores file modes"
    return (
        f"{WORKSPACE} → {workspace} (a writable directory; {listed} read-only in it, as the "
        f"pod mounts the ConfigMap{how})"
    )


def sized(
    file: str,
    job: Target,
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


def shell_env(
    inherited: Mapping[str, str], t: Target, python: str, changes: list[str]
) -> dict[str, str]:
    env: dict[str, str] = {}
    dropped = []
    for k, v in inherited.items():
        # Either operator's names, so a script never gets from this shell what
        # only the other operator would have given it.
        if (
            PYTORCHJOB.reason(k)
            or t.sets(k)
            or k in _LAUNCHER_ENV
            or k.startswith(_LAUNCHER_PREFIXES)
            or k == "CUDA_VISIBLE_DEVICES"
        ):
            dropped.append(k)
        else:
            env[k] = v
    # The Training Operator sets PYTHONUNBUFFERED=1 itself: dropping it changes nothing.
    dropped = [k for k in dropped if k != "PYTHONUNBUFFERED" or k not in t.operator_env]
    unset = sorted(k for k in dropped if PYTORCHJOB.reason(k) and not t.sets(k))
    dropped = sorted(k for k in dropped if k not in unset)
    if dropped:
        changes.append(
            f"not inherited from this shell ({t.operator}, torchrun or the rehearsal sets "
            f"them): {', '.join(dropped)}"
        )
    if unset:
        them = "them" if len(unset) > 1 else "it"
        changes.append(
            f"not inherited from this shell: {', '.join(unset)} ({t.operator} does not set "
            f"{them} on the cluster; set {them} in env if the script needs {them})"
        )
    # The image's torchrun and python: the interpreter that has torch comes first.
    bindir = str(Path(python).parent)
    path = env.get("PATH", "")
    if path.split(os.pathsep)[0] != bindir:
        env["PATH"] = os.pathsep.join([bindir, path]) if path else bindir
    return env


def user_env(
    t: Target, workspace: Path, changes: list[str], inherited: Mapping[str, str]
) -> dict[str, str]:
    env = {}
    gpu_only = []
    for k, v in t.env.items():
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
    # A rehearsal reads no cluster object: the value of such a variable is this shell's
    # (_base_env passed it on).
    for k, where in sorted(t.cluster_env.items()):
        if k in inherited:
            changes.append(f"env {k} ({where} on the cluster) taken from this shell")
        else:
            changes.append(
                f"env {k} ({where} on the cluster) is not set: export {k} to rehearse with a value"
            )
    for source in t.env_sources:
        changes.append(
            f"env_from {source}: its keys are variables on the cluster; here only those this "
            "shell exports are set"
        )
    return env


def _runs_otherwise(role: Role) -> bool:
    """Whether a role runs anything else than the job's (beyond its size and placement)."""
    what = {"image", "command", "args", "env"}
    return role.model_dump(include=what) != Role().model_dump(include=what)


def _not_applied(t: Target, procs_per_node: int) -> list[str]:
    out = []
    job = t.effective.planned.job
    master = job.roles().get("master") if isinstance(job, OperatorJob) else None
    # Every rehearsal node runs the first pod's container (target.py _training_pods).
    if master is not None and _runs_otherwise(master):
        out.append(
            "master=Role(...): every node here runs the Master's image, command, args and "
            "env; on the cluster the Workers run the job's own"
        )
    if t.cpu is not None or t.memory is not None:
        out.append(
            f"resources.cpu {t.cpu} and memory {t.memory} per node are not enforced "
            "(all nodes share this machine)"
        )
    if t.extra_resources:
        listed = ", ".join(f"{k} {v}" for k, v in t.extra_resources.items())
        out.append(f"resources {listed} per node are not allocated (no devices on CPU)")
    if t.shm_size is not None:
        out.append(f"shm_size {t.shm_size}: not applied (this machine's /dev/shm is used)")
    for c in t.claims:
        here = "exists" if Path(c.path).exists() else "does not exist"
        out.append(
            f"volume {c.name!r} at {c.path} is not mounted ({c.path} {here} on this machine)"
        )
    if t.restart_policy is not None and t.restart_policy != "Never":
        out.append(
            f"restart_policy {t.restart_policy}: no restarts; the rehearsal stops at the "
            "first failure"
        )
    if t.procs_auto:
        out.append(
            f"PET_NPROC_PER_NODE 'auto' → {procs_per_node} (on the cluster torchrun starts "
            "one process per GPU; there are none here)"
        )
    return out


def _torchrun(python: str, log_dir: Path) -> tuple[str, ...]:
    # Each rank's stdout/stderr goes to its own file under log_dir, which the
    # runner follows and prefixes; torchrun's other settings come from PET_*.
    return (python, "-m", "torch.distributed.run", "--redirects", "3", "--log-dir", str(log_dir))


def _argv(
    t: Target, workspace: Path, log_dir: Path, python: str, file: str, cwd: Path | None = None
) -> tuple[tuple[str, ...], bool]:
    args = tuple(_to_workspace(a, workspace) for a in t.args)
    if t.command is None:
        raise RehearsalError(
            [
                Problem(
                    file=file,
                    obj=t.describe(),
                    message=f"the job runs its image's entrypoint ({t.image}), which a "
                    "rehearsal cannot see. Rehearse a job that ships its script "
                    "(script=Script.file(...)) or names its command",
                )
            ]
        )
    command = [_to_workspace(c, workspace) for c in t.command]
    _check_command_files(t, [*command[1:], *args], cwd or workspace, file)
    program = posixpath.basename(command[0])
    if program == "torchrun":
        return (*_torchrun(python, log_dir), *command[1:], *args), True
    if _PYTHON.match(program):
        return (python, *command[1:], *args), False
    return (*command, *args), False


def python_argv(
    t: Target, workspace: Path, python: str, file: str, cwd: Path | None = None
) -> tuple[str, ...]:
    """The job's own command (not torchrun) with /workspace and the interpreter mapped here;
    its relative paths are read from ``cwd`` (default: the workspace)."""
    argv, _ = _argv(t, workspace, workspace, python, file, cwd)
    return argv


def _check_command_files(job: Target, tokens: Sequence[str], cwd: Path, file: str) -> None:
    """Say plainly when a command job runs a script that lives only in its image."""
    shipped = {cwd / name for name in job.files}  # written from the ConfigMap before the start
    for token in tokens:
        if token.startswith("-") or not token.endswith(".py"):
            continue
        path = Path(token) if os.path.isabs(token) else cwd / token
        if path not in shipped and not path.exists():
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
