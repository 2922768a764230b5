"""What a RayJob's rehearsal runs: KubeRay's Ray cluster on this machine, the entrypoint on its head.

KubeRay v1.7 (ray-project/kuberay, ray-operator/controllers/ray/) makes a RayJob a RayCluster
— a head pod and each worker group's pods, each running the ``ray start`` KubeRay generates
from its limits (common/pod.go generateRayStartCommand) — and, once the cluster is ready, a
submitter that runs ``ray job submit -- <entrypoint>`` (rayjob_controller.go). Ray's job
supervisor runs the entrypoint on the head, where RAY_ADDRESS points at the head's GCS
(common/pod.go setContainerEnvVars), and the RayJob is SUCCEEDED when it exits 0.

A rehearsal builds that cluster here (a node per pod, fewer and smaller, no GPUs: every
change is listed) and runs the entrypoint on it with the env the head's container and Ray's
job supervisor give it: ``ray_cluster.py`` does both in one process tree, ``ray_run.py``
follows it and stops every process it started when the entrypoint ends, fails, times out or
is interrupted. With ``--ray-address`` the entrypoint runs on a Ray cluster the user already
started on this machine instead (``ray start --head``), with the same env, and no cluster is
started or stopped. The plan is pure data; trainkit never imports ray (``pip install -e
'.[ray]'`` installs it for the interpreter running trainkit).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path
from typing import TextIO

from ..errors import Problem, RehearsalError, SetupError
from .extras import install_extra
from .launch import (
    DEFAULT_MAX_NODES,
    DEFAULT_MAX_PROCS,
    python_argv,
    shell_env,
    user_env,
    workspace_change,
)
from .outcome import RehearsalReport
from .ports import free_port
from .ray_run import OBJECT_STORE_MIB, RayNode, RayPlan, RayRun, ray_start_command
from .ray_target import RayGroup, RayJobTarget
from .stopping import say
from .workspace import ReadOnly, prepare_workspace

__all__ = ["RayNode", "RayPlace", "RayPlan", "plan_ray_rehearsal", "rehearse_ray", "require_ray"]

_CONNECT_SECONDS = 10.0
"""How long a connection to ``--ray-address`` may take to be accepted."""

# Inherited names that would point the rehearsal's Ray at another cluster or session; the
# pods get theirs from KubeRay, the entrypoint from Ray's job supervisor.
_RAY_PREFIX = "RAY_"


def require_ray(file: str = "trainkit", obj: str = "") -> None:
    """Raise SetupError unless this interpreter can import ray (never imports it)."""
    if find_spec("ray") is None:
        raise SetupError(
            [
                Problem(
                    file=file,
                    obj=obj,
                    message=f"a RayJob is rehearsed on a local Ray cluster, but ray is not "
                    f"installed for {sys.executable}; install the extra: "
                    f"{install_extra('ray')}",
                )
            ]
        )
    if os.name != "posix":
        raise SetupError("rehearse needs Linux or macOS (it runs each node in its own session)")


@dataclass(frozen=True)
class RayPlace:
    """Where a RayJob is rehearsed on this machine: its directories, Ray's ports, the
    interpreter, the shell it inherits and the definition file it names in messages."""

    workspace: Path
    log_dir: Path
    temp_dir: Path
    gcs_port: int
    dashboard_port: int
    inherited: Mapping[str, str]
    python: str
    file: str
    read_only: ReadOnly
    working_dir: Path | None = None


def plan_ray_rehearsal(
    t: RayJobTarget,
    place: RayPlace,
    *,
    nodes: int | None,
    procs_per_node: int | None,
    address: str | None = None,
) -> RayPlan:
    """The nodes, the entrypoint and the list of changes; ``--nodes`` caps the nodes of each
    worker group, ``--procs-per-node`` the CPUs of each node (Ray runs that many one-CPU
    tasks at once on it). With ``address`` (``--ray-address``, whose port is ``gcs_port``)
    no node is planned: the entrypoint joins the running cluster there."""
    if address is not None:
        return _plan_on_address(t, address, place)
    file, gcs_port, temp_dir = place.file, place.gcs_port, place.temp_dir
    changes = [
        f"Ray cluster: each pod is a node of one Ray cluster on this machine "
        f"(ray.cluster_utils.Cluster, this interpreter's Ray {_version('ray')}; the pods run "
        f"their image's), listening on 127.0.0.1 only (RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0), "
        f"its files in {temp_dir} (RAY_TMPDIR, removed afterwards), no usage stats "
        "(RAY_USAGE_STATS_ENABLED=0), no idle workers started ahead of the tasks "
        "(RAY_prestart_worker_first_driver=0), each node starting one worker at a time "
        "(RAY_worker_maximum_startup_concurrency=1), no autoscaler process (the nodes are "
        "the ones listed here)"
    ]
    node_cap = _cap(file, t, nodes, "--nodes", DEFAULT_MAX_NODES)
    cpu_cap = _cap(file, t, procs_per_node, "--procs-per-node", DEFAULT_MAX_PROCS)
    planned: list[RayNode] = []
    for g in t.groups:
        count = 1 if g.head else _capped(g, "nodes", g.nodes, nodes, node_cap, "--nodes", changes)
        cpus = _capped(g, "num-cpus", g.cpus, procs_per_node, cpu_cap, "--procs-per-node", changes)
        if not g.cpus:  # KubeRay passes no --num-cpus, and Ray counts the node's CPUs
            cpus = cpu_cap
            changes.append(f"{_label(g)}: no CPU limit (Ray counts the node's) → {cpus} CPU(s)")
        if g.scaling is not None:
            low, high = g.scaling
            changes.append(
                f"{_label(g)} autoscales between {low} and {high} nodes on the cluster; here it "
                f"keeps {count} (no autoscaler)"
            )
        for i in range(count):
            pod = t.node_pod(g.name, i)
            env = t.ray_env(g.name, pod, gcs_port, ray_start_command(g.head, cpus, g.memory_bytes))
            planned.append(RayNode(pod, g.name, g.head, cpus, g.memory_bytes, env))
    changes.extend(_resource_changes(t))
    changes.append(
        f"RAY_ADDRESS {t.operator_env.get('RAY_ADDRESS')} → 127.0.0.1:{gcs_port} and RAY_PORT "
        f"{t.operator_env.get('RAY_PORT')} → {gcs_port} (the head's GCS on a free port; the "
        f"workers' FQ_RAY_IP and RAY_IP → 127.0.0.1); RAY_CLUSTER_NAME {t.ray_cluster} and "
        "RAY_CLOUD_INSTANCE_ID: stand-ins for the names KubeRay generates"
    )
    changes.append(
        "entrypoint: run on the head with the env Ray's job supervisor gives it (RAY_ADDRESS, "
        "PYTHONUNBUFFERED=1, the runtime_env in RAY_JOB_CONFIG_JSON_ENV_VAR, which ray.init() "
        "applies to every task and actor of the job), not through `ray job submit`"
    )
    cluster_env = {
        "RAY_TMPDIR": str(temp_dir),
        # Ray's single-machine mode (its default on macOS): 127.0.0.1 stays 127.0.0.1
        # (ray/_private/services.py resolve_ip_for_localhost), so nothing listens on the
        # network and two rehearsals never meet.
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
        "RAY_USAGE_STATS_ENABLED": "0",
        # Each raylet starts a worker per CPU when the first driver connects
        # (prestart_worker_first_driver, src/ray/common/ray_config_def.h), each importing
        # ray; here a worker starts when a task or actor needs one.
        "RAY_prestart_worker_first_driver": "0",
        # A raylet starts as many workers at once as the machine has cores (at most the
        # node's CPUs: ray/_private/services.py start_raylet, maximum_startup_concurrency),
        # and starts more than a task asks for: with Ray 2.60, one one-CPU task on a node of
        # two CPUs got two workers. The rehearsal's nodes share one machine; one at a time
        # (worker_maximum_startup_concurrency, src/ray/common/ray_config_def.h, which
        # overrides the raylet's --maximum_startup_concurrency, src/ray/raylet/main.cc)
        # starts a worker per task or actor that needs one.
        "RAY_worker_maximum_startup_concurrency": "1",
    }
    return _with_entrypoint(t, place, tuple(planned), planned[0].env, cluster_env, changes, None)


def _plan_on_address(t: RayJobTarget, address: str, place: RayPlace) -> RayPlan:
    """The entrypoint alone, on the running Ray cluster at ``address``: the head's env as
    KubeRay sets it, RAY_ADDRESS pointing there."""
    head = next(g for g in t.groups if g.head)
    pod = t.node_pod(head.name, 0)
    gcs_port = place.gcs_port
    env = t.ray_env(head.name, pod, gcs_port, ray_start_command(True, head.cpus, head.memory_bytes))
    env["RAY_ADDRESS"] = address
    changes = [
        f"Ray cluster: the one running at {address} (--ray-address), not a cluster of the "
        "job's pods: its nodes, their CPUs, GPUs, memory and labels are that cluster's (no "
        "KubeRay node groups), the env KubeRay and the job give the pods reaches the "
        "entrypoint but not that cluster's workers, and a task starts in that cluster's "
        "directory unless the runtime_env has a working_dir; when the entrypoint ends, Ray "
        "stops the job's tasks and actors (a detached actor stays); the cluster keeps running",
        *_volume_changes(t),
        f"RAY_ADDRESS {t.operator_env.get('RAY_ADDRESS')} → {address} and RAY_PORT "
        f"{t.operator_env.get('RAY_PORT')} → {gcs_port} (--ray-address); RAY_CLUSTER_NAME "
        f"{t.ray_cluster} and RAY_CLOUD_INSTANCE_ID: stand-ins for the names KubeRay generates",
        "entrypoint: run on this machine with the env of the head's container and the env "
        "Ray's job supervisor gives it (RAY_ADDRESS, PYTHONUNBUFFERED=1, the runtime_env in "
        "RAY_JOB_CONFIG_JSON_ENV_VAR, which ray.init() applies to every task and actor of the "
        "job), not through `ray job submit`",
    ]
    return _with_entrypoint(t, place, (), env, {}, changes, address)


def _with_entrypoint(
    t: RayJobTarget,
    place: RayPlace,
    nodes: tuple[RayNode, ...],
    head_env: Mapping[str, str],
    cluster_env: Mapping[str, str],
    changes: list[str],
    address: str | None,
) -> RayPlan:
    """The entrypoint's argv and env (the head container's ``head_env``, what Ray's job
    supervisor adds) and the changes of every rehearsal of a RayJob."""
    workspace, working_dir, python = place.workspace, place.working_dir, place.python
    inherited, read_only = place.inherited, place.read_only
    if t.runtime_pip:
        changes.append(
            f"runtime_env pip {', '.join(t.runtime_pip)}: not installed (Ray installs them on "
            "every node when the job starts); the job imports this interpreter's packages: "
            + ", ".join(_installed(req) for req in t.runtime_pip)
        )
    if t.backoff_limit:
        changes.append(
            f"backoff_limit {t.backoff_limit}: no retries; the entrypoint runs once, and the "
            "rehearsal stops at its failure"
        )
    if t.files:
        changes.append(workspace_change(workspace, list(t.files), read_only))
    if working_dir is not None:
        changes.append(
            f"runtime_env working_dir → {working_dir} ({len(t.working_dir)} file(s), written "
            "from its ConfigMap): the entrypoint starts in it and ray.init() uploads it for "
            "every task, as Ray does with what `ray job submit` uploads from the submitter"
        )

    own = sorted(k for k in inherited if k.startswith(_RAY_PREFIX) or k == "PYTHONUNBUFFERED")
    if own:
        changes.append(
            "not inherited from this shell (KubeRay, Ray's job supervisor or the rehearsal "
            f"sets them): {', '.join(own)}"
        )
    rest = {k: v for k, v in inherited.items() if k not in own}
    base = shell_env(rest, t, python, changes)
    base.update(user_env(t, workspace, changes, rest))
    base |= {"CUDA_VISIBLE_DEVICES": "", **cluster_env}
    # dashboard/modules/job/job_supervisor.py _get_driver_env_vars: the supervisor's env (the
    # head container's and the runtime_env's env_vars) with the job config, RAY_ADDRESS and
    # unbuffered output; pip is left out, as it is not installed here.
    runtime_env: dict[str, object] = (
        {"env_vars": dict(t.runtime_env_vars)} if t.runtime_env_vars else {}
    )
    if working_dir is not None:
        # Ray 2.60.0 _private/worker.py init: a local working_dir in the job config is
        # uploaded by the driver (upload_working_dir_if_needed) and every worker starts in it.
        runtime_env["working_dir"] = str(working_dir)
    env = {**base, **head_env, **t.runtime_env_vars}
    env["RAY_JOB_CONFIG_JSON_ENV_VAR"] = json.dumps({"runtime_env": runtime_env, "metadata": {}})
    env["PYTHONUNBUFFERED"] = "1"
    files = [workspace / name for name in t.files]
    return RayPlan(
        target=t,
        nodes=nodes,
        gcs_port=place.gcs_port,
        dashboard_port=place.dashboard_port,
        temp_dir=place.temp_dir,
        workspace=workspace,
        log_dir=place.log_dir,
        argv=python_argv(t, workspace, python, place.file, working_dir),
        env=env,
        cluster_env=base,
        wrapper=read_only.wrapper(files, python),
        changes=tuple(changes),
        cwd=working_dir,
        address=address,
    )


def rehearse_ray(
    target: RayJobTarget,
    *,
    file: str,
    nodes: int | None,
    procs_per_node: int | None,
    timeout: float,
    out: TextIO,
    ray_address: str | None = None,
) -> RehearsalReport:
    """Run ``target``'s entrypoint on a local Ray cluster of its pods (see ``rehearse``), or
    on the running Ray cluster at ``ray_address`` (HOST:PORT of its GCS, with a node on this
    machine), which is neither started nor stopped."""
    require_ray(file, target.describe())
    if timeout <= 0:
        raise RehearsalError(
            [Problem(file=file, obj=target.describe(), message="--timeout must be positive")]
        )
    gcs = None
    if ray_address is not None:
        gcs = _reachable(file, target, ray_address, nodes, procs_per_node)
    if target.working_dir_uri is not None:
        raise RehearsalError(
            [
                Problem(
                    file=file,
                    obj=target.describe(),
                    field="runtime_env.working_dir",
                    message=f"{target.describe()} runs the archive {target.working_dir_uri} "
                    "(runtime_env working_dir), which a rehearsal does not download; "
                    "rehearse it with the archive's directory in the repository "
                    "(working_dir='scripts/<dir>')",
                )
            ]
        )
    python = sys.executable
    with (
        tempfile.TemporaryDirectory(
            prefix=f"trainkit-rehearse-{target.name}-", ignore_cleanup_errors=True
        ) as tmp,
        _ray_temp_dir(needed=gcs is None) as ray_tmp,
    ):
        workspace = Path(tmp) / "workspace"
        read_only = prepare_workspace(workspace, target.files, python)
        working_dir = _write_working_dir(Path(tmp) / "working_dir", target.working_dir)
        place = RayPlace(
            workspace=workspace, log_dir=Path(tmp) / "logs", temp_dir=ray_tmp,
            gcs_port=free_port() if gcs is None else gcs[1], dashboard_port=free_port(),
            inherited=dict(os.environ), python=python, file=file, read_only=read_only,
            working_dir=working_dir,
        )  # fmt: skip
        plan = plan_ray_rehearsal(
            target, place, nodes=nodes, procs_per_node=procs_per_node, address=ray_address
        )
        _header(plan, file, out)
        start = time.monotonic()
        RayRun(plan, out, file).run(timeout)
        seconds = time.monotonic() - start
    cluster = (
        f"a Ray cluster of {len(plan.nodes)} node(s)"
        if ray_address is None
        else f"the Ray cluster at {ray_address}"
    )
    say(
        out,
        f"succeeded: the entrypoint exited with code 0 on {cluster} in {seconds:.1f} s; KubeRay "
        "would mark the RayJob SUCCEEDED",
    )
    return RehearsalReport(
        job=target.name,
        file=file,
        nodes=len(plan.nodes),
        procs_per_node=1,
        changes=plan.changes,
        commands=(plan.command_line,),
        seconds=seconds,
        kind=target.kind,
        cluster=target.cluster,
    )


def _reachable(
    file: str, t: RayJobTarget, address: str, nodes: int | None, procs_per_node: int | None
) -> tuple[str, int]:
    """``--ray-address``'s host and port, once something listens there; RehearsalError
    otherwise, and when the rehearsal would size a cluster it does not start."""

    def refuse(message: str) -> RehearsalError:
        return RehearsalError([Problem(file=file, obj=t.describe(), message=message)])

    how = (
        "give the address `ray start --head` prints, HOST:PORT of the head's GCS (for "
        "example 127.0.0.1:6379)"
    )
    sized = [flag for flag, v in (("--nodes", nodes), ("--procs-per-node", procs_per_node)) if v]
    if sized:
        raise refuse(
            f"{' and '.join(sized)} size the Ray cluster a rehearsal starts; with --ray-address "
            "the entrypoint runs on the cluster already there: leave "
            f"{'them' if len(sized) > 1 else 'it'} out"
        )
    if "://" in address:
        raise refuse(
            f"--ray-address {address!r}: a URL (Ray Client's ray://, the dashboard's http://) "
            f"is not where a driver connects; {how}"
        )
    host, _, port = address.rpartition(":")
    if (
        not host
        or not port.isdigit()
        or not 0 < int(port) < 65536
        or any(c.isspace() for c in host)
    ):
        raise refuse(f"--ray-address {address!r} is not HOST:PORT; {how}")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=_CONNECT_SECONDS):
            pass
    except OSError as e:
        raise refuse(
            f"--ray-address {address}: nothing answers there ({e.strerror or e}); start a Ray "
            "cluster on this machine with `ray start --head` and pass the address it prints, or "
            "leave --ray-address out to rehearse on a Ray cluster of the job's pods"
        ) from None
    return host, int(port)


def _write_working_dir(directory: Path, files: Mapping[str, str]) -> Path | None:
    """The repository ``working_dir``'s files at their paths, writable (Ray unpacks its copy
    so); None without one. The paths were checked when the repository was read
    (load/working_dir_files.py); one leaving ``directory`` is refused all the same."""
    if not files:
        return None
    for rel, text in sorted(files.items()):
        path = (directory / rel).resolve()
        if not path.is_relative_to(directory.resolve()):
            raise RehearsalError(f"working_dir path {rel!r} leaves the working directory")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return directory


def _cap(file: str, t: RayJobTarget, asked: int | None, flag: str, default: int) -> int:
    if asked is not None and asked < 1:
        raise RehearsalError(
            [Problem(file=file, obj=t.describe(), message=f"{flag} must be at least 1")]
        )
    return default if asked is None else asked


def _capped(
    g: RayGroup, what: str, value: int, asked: int | None, cap: int, flag: str, changes: list[str]
) -> int:
    if value <= cap:
        return value
    why = (
        f"{flag} {asked}"
        if asked is not None
        else f"rehearsal default on one CPU machine; pass {flag} {value} to rehearse the full size"
    )
    changes.append(f"{_label(g)}: {what} {value} → {cap} ({why})")
    return cap


def _label(g: RayGroup) -> str:
    return "head" if g.head else f"worker group {g.name!r}"


def _resource_changes(t: RayJobTarget) -> list[str]:
    out = []
    gpus = [f"{_label(g)} {g.gpus}" for g in t.groups if g.gpus]
    if gpus:
        out.append(
            f"resources.gpu → 0 ({', '.join(gpus)}): every node gets num-gpus 0 and an empty "
            "CUDA_VISIBLE_DEVICES, so a task or actor asking for GPUs waits forever here: a "
            "script rehearses by taking its CPU path when ray.cluster_resources() has no 'GPU'"
        )
    memory = [f"{_label(g)} {g.memory}" for g in t.groups if g.memory]
    if memory:
        out.append(
            f"memory ({', '.join(memory)}): each node's Ray memory resource, as KubeRay's "
            "`ray start --memory`, but not enforced (all nodes share this machine)"
        )
    out.append(
        f"object store {OBJECT_STORE_MIB} MiB per node (on the cluster Ray takes 30% of the "
        "pod's memory, in the /dev/shm KubeRay mounts)"
    )
    if t.extra_resources:
        listed = ", ".join(f"{k} {v}" for k, v in t.extra_resources.items())
        out.append(f"resources {listed} per node are not allocated (no devices here)")
    return out + _volume_changes(t)


def _volume_changes(t: RayJobTarget) -> list[str]:
    out = []
    for c in t.claims:
        here = "exists" if Path(c.path).exists() else "does not exist"
        out.append(
            f"volume {c.name!r} at {c.path} is not mounted ({c.path} {here} on this machine)"
        )
    return out


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "(not installed)"


def _installed(requirement: str) -> str:
    name = requirement.split(";")[0].strip()
    for sep in "[<>=!~ @":
        name = name.split(sep)[0]
    version = _version(name)
    return f"{name} {'not installed here' if version == '(not installed)' else version}"


@contextmanager
def _ray_temp_dir(*, needed: bool = True) -> Iterator[Path]:
    """A directory of this rehearsal's for Ray's session files (Ray's default, /tmp/ray, is
    shared by every Ray on the machine). Short: Ray's sockets live 70 characters below it,
    and a socket's path holds at most 107 (ray/_private/utils.py validate_socket_filepath).
    Not ``needed`` (no cluster is started), a path that is never created."""
    if not needed:
        yield Path(os.devnull)
        return
    # Where Ray would put /tmp/ray (ray/_common/utils.py get_default_system_temp_dir).
    base = os.environ.get("RAY_TMPDIR") or os.environ.get("TMPDIR") or "/tmp"
    if len(base) > 24 or not os.path.isdir(base):
        base = "/tmp"
    path = Path(tempfile.mkdtemp(prefix="tkray-", dir=base))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _header(plan: RayPlan, file: str, out: TextIO) -> None:
    t = plan.target
    cpus = sum(n.cpus for n in plan.nodes)
    if plan.address is None:
        say(
            out,
            f"{t.describe()} ({file}): a Ray cluster of {len(plan.nodes)} node(s) on CPU, "
            f"{cpus} CPU(s) in all, and the entrypoint on its head",
        )
    else:
        say(out, f"{t.describe()} ({file}): the entrypoint {plan.where}")
    say(out, f"pods of cluster {t.cluster!r}: image {t.image}")
    say(out, "changed for the rehearsal:")
    for change in plan.changes:
        say(out, f"  - {change}")
    for i, node in enumerate(plan.nodes):
        say(out, f"node {i} ({node.pod}): {node.start}")
    where = "on this machine" if plan.address is not None else f"on the head ({plan.nodes[0].pod})"
    say(out, f"entrypoint {where}: {plan.command_line}")
