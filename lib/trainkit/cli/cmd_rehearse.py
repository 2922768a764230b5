"""trainkit rehearse: a job's script run locally as the pods would run it."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from .options import (
    GivenPath,
    add_loading,
    load_options,
    positive,
)

__all__ = ["add", "run"]


def add(sub: Any) -> None:
    """Add the command to the parser's subcommands."""
    p = sub.add_parser(
        "rehearse",
        help="run a job's script locally as N nodes × P processes (torchrun, mpirun or a "
        "local Ray cluster)",
        description="Run the job's real script on this machine's CPU as the pods of its "
        "first cluster would run it (see `trainkit explain`): one torchrun per simulated node "
        "with exactly the env the Training Operator (PyTorchJob) or Kubeflow Trainer "
        "(TrainJob) injects (master mapped to 127.0.0.1, free ports), the env and args the "
        "pods get, and the script files read-only in a writable working directory, as on "
        "the cluster. An MPIJob runs its launcher's mpirun against a hostfile of this "
        "machine with mpi-operator's env (needs Open MPI's mpirun). A RayJob gets a Ray "
        "cluster of this machine, a head and each worker group's nodes with KubeRay's env, "
        "and its entrypoint runs against it (needs ray: pip install 'trainkit-gitops[ray]'); there "
        "--nodes caps each group's workers and --procs-per-node each node's Ray CPUs; "
        "--ray-address runs it on a Ray cluster already running on this machine instead. "
        "An XGBoostJob or JAXJob runs one process per simulated pod with the operator's env "
        "(needs xgboost or jax: pip install 'trainkit-gitops[xgboost]' or "
        "'trainkit-gitops[jax]'). "
        "GPU-only settings are downgraded and reported. Fails, naming the node and rank, if "
        "any process exits non-zero; stops every process at --timeout. Needs torch: pip "
        "install torch --index-url https://download.pytorch.org/whl/cpu (the CPU build), then "
        "pip install 'trainkit-gitops[rehearse]'.",
    )
    p.add_argument("file", help="definition file, e.g. jobs/vision/resnet50_ddp.py")
    p.add_argument(
        "--job",
        help="job name (name=), when the file defines several; KIND/NAME when jobs of "
        "two kinds share it",
    )
    p.add_argument(
        "--jobs",
        metavar="DIR",
        action=GivenPath,
        help="directory of definitions whose platform/ the job is planned with "
        "(default: the jobs/ directory holding FILE)",
    )
    p.add_argument(
        "--nodes", type=positive(int), help="simulated nodes (default: the job's, at most 2)"
    )
    p.add_argument(
        "--procs-per-node",
        type=positive(int),
        help="processes per node (default: the job's, at most 2)",
    )
    p.add_argument(
        "--timeout",
        type=positive(float),
        default=300.0,
        help="seconds before every process is stopped (default: 300)",
    )
    p.add_argument(
        "--ray-address",
        metavar="HOST:PORT",
        help="a RayJob: run the entrypoint on the Ray cluster already running here (the "
        "address `ray start --head` prints, e.g. 127.0.0.1:6379) instead of starting one of "
        "the job's pods; faster, but the nodes are that cluster's, and it keeps running",
    )
    p.add_argument(
        "--args",
        metavar="'ARG ...'",
        type=_words,
        default=[],
        help="arguments appended to the job's args= for this run, split as a shell would, "
        "e.g. --args '--epochs 1' for a shorter run (argparse takes an option's last "
        "value); one option alone needs =: --args=--dry-run. Not for a RayJob",
    )
    add_loading(p)
    p.set_defaults(func=run)


def _words(text: str) -> list[str]:
    """``--args``: the words of ``text``, split as a POSIX shell splits a command line."""
    try:
        return shlex.split(text)
    except ValueError as e:  # "No closing quotation", "No escaped character"
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a list of words a shell could split ({e}); quote the whole "
            "value once, e.g. --args '--name \"a b\"'"
        ) from None


def run(args: argparse.Namespace) -> int:
    from ..rehearse import rehearse_file

    # rehearse_file prints per-rank output and its own verdict as it goes.
    rehearse_file(
        Path(args.file),
        jobs_dir=Path(args.jobs) if args.jobs else None,
        job_name=args.job,
        nodes=args.nodes,
        procs_per_node=args.procs_per_node,
        timeout=args.timeout,
        out=sys.stdout,
        load_options=load_options(args),
        ray_address=args.ray_address,
        script_args=args.args,
    )
    return 0
