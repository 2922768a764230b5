"""Local rehearsal: run a job's real training script on one CPU machine.

``trainkit rehearse jobs/<team>/<job>.py`` starts one torchrun per simulated
node, each with the env Training Operator v1.9 would inject into that node's
pod (master address mapped to 127.0.0.1, a free port), the job's own env and
args, and the script in a temporary directory standing in for ``/workspace``.
Nothing here imports torch: it only has to be installed for the interpreter
running trainkit (``pip install -e '.[rehearse]'``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from ..errors import Problem, RehearsalError
from ..load import Definition, load_file
from ..model import PyTorchJob
from .plan import NodeLaunch, RehearsalPlan, plan_rehearsal
from .runner import RehearsalReport, rehearse, require_torch

__all__ = [
    "NodeLaunch",
    "RehearsalPlan",
    "RehearsalReport",
    "plan_rehearsal",
    "rehearse",
    "rehearse_file",
    "require_torch",
]


def rehearse_file(
    path: Path,
    *,
    job_name: str | None = None,
    root: Path | None = None,
    nodes: int | None = None,
    procs_per_node: int | None = None,
    timeout: float = 300.0,
    out: TextIO | None = None,
) -> RehearsalReport:
    """Load the definition file ``path`` and rehearse its PyTorchJob (``job_name`` if several)."""
    require_torch()
    loaded = load_file(path, root)
    rel = loaded[0].file if loaded else path.as_posix()
    defs = [d for d in loaded if isinstance(d.obj, PyTorchJob)]
    names = [d.obj.name for d in defs if isinstance(d.obj, PyTorchJob)]
    if not defs:
        raise RehearsalError(
            [Problem(file=rel, message="no PyTorchJob in this file; rehearse runs PyTorchJobs")]
        )
    if job_name is not None:
        chosen: list[Definition] = [
            d for d in defs if isinstance(d.obj, PyTorchJob) and d.obj.name == job_name
        ]
        if not chosen:
            raise RehearsalError(
                [
                    Problem(
                        file=rel,
                        message=f"no PyTorchJob named {job_name!r} here; "
                        f"the file defines {_names(names)}",
                    )
                ]
            )
    elif len(defs) > 1:
        raise RehearsalError(
            [
                Problem(
                    file=rel,
                    message=f"{len(defs)} PyTorchJobs here ({_names(names)}); "
                    "choose one with --job NAME",
                )
            ]
        )
    else:
        chosen = defs
    d = chosen[0]
    job = d.obj
    assert isinstance(job, PyTorchJob)
    script_text = d.files.get(job.script.filename) if job.script is not None else None
    return rehearse(
        job,
        script_text=script_text,
        source_dir=path.parent,
        file=d.file,
        nodes=nodes,
        procs_per_node=procs_per_node,
        timeout=timeout,
        out=out,
    )


def _names(names: list[str]) -> str:
    return ", ".join(repr(n) for n in names)
