"""From a definition file to a rehearsal: which job, and for a TrainJob which runtime.

A PyTorchJob carries everything it runs with. A TrainJob names a runtime that
lives in ``jobs/platform/`` and may differ per cluster, so it is planned with
the platform definitions (the same ``build_plan`` as ``trainkit synth``) and
rehearsed with the runtime of its first cluster.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO

from ..errors import Problem, RehearsalError
from ..load import PLATFORM_DIR, Definition, LoadOptions, load_file, load_jobs
from ..model import PyTorchJob, Team, TrainJob
from ..plan import PlannedJob, build_plan
from .runner import RehearsalReport, rehearse, require_torch, say

__all__ = ["choose_job", "plan_trainjob", "rehearse_file"]


def rehearse_file(
    path: Path,
    *,
    job_name: str | None = None,
    root: Path | None = None,
    jobs_dir: Path | None = None,
    nodes: int | None = None,
    procs_per_node: int | None = None,
    timeout: float = 300.0,
    out: TextIO | None = None,
    load_options: LoadOptions | None = None,
) -> RehearsalReport:
    """Load the definition file ``path`` and rehearse its job (``job_name`` if several).

    ``jobs_dir`` (default: the ``jobs`` directory holding ``path``) is where a
    TrainJob's runtime is looked up, in its ``platform/``; a planning problem
    (an unknown runtime, …) raises DefinitionError.
    """
    require_torch()
    out = sys.stdout if out is None else out
    loaded = load_file(path, root, jobs_dir=jobs_dir, options=load_options).definitions
    rel = loaded[0].file if loaded else path.as_posix()
    d = choose_job(loaded, job_name, rel)
    if isinstance(d.obj, PyTorchJob):
        script = d.obj.script
        job: PyTorchJob | PlannedJob = d.obj
        text = d.files.get(script.filename) if script is not None else None
    else:
        planned = plan_trainjob(d, jobs_dir or _jobs_dir(path), root, load_options)
        job, text = planned[0], None
        if len(planned) > 1:
            say(
                out,
                f"{d.obj.describe()} runs on clusters "
                f"{', '.join(p.cluster.name for p in planned)}; rehearsing with the runtime "
                f"of its first cluster, {job.cluster.name}",
            )
    return rehearse(
        job,
        script_text=text,
        source_dir=path.parent,
        file=d.file,
        nodes=nodes,
        procs_per_node=procs_per_node,
        timeout=timeout,
        out=out,
    )


def choose_job(loaded: list[Definition], job_name: str | None, file: str) -> Definition:
    """The job ``job_name`` (``NAME`` or ``KIND/NAME``) of a file, or its only job."""
    defs = [d for d in loaded if isinstance(d.obj, PyTorchJob | TrainJob)]

    def refuse(message: str) -> RehearsalError:
        return RehearsalError([Problem(file=file, message=message)])

    if not defs:
        raise refuse("no PyTorchJob or TrainJob in this file; rehearse runs those")
    if job_name is None:
        if len(defs) > 1:
            raise refuse(f"{len(defs)} jobs here ({_list(defs)}); choose one with --job NAME")
        return defs[0]
    chosen = [d for d in defs if job_name in (_name(d), f"{_kind(d)}/{_name(d)}")]
    if not chosen:
        raise refuse(f"no job named {job_name!r} here; the file defines {_list(defs)}")
    if len(chosen) > 1:
        raise refuse(
            f"{len(chosen)} jobs named {job_name!r} here ({_list(chosen)}); choose one with "
            f"--job KIND/NAME, e.g. --job {_kind(chosen[0])}/{job_name}"
        )
    return chosen[0]


def plan_trainjob(
    d: Definition, jobs_dir: Path, root: Path | None = None, options: LoadOptions | None = None
) -> list[PlannedJob]:
    """The TrainJob of ``d`` planned on each of its clusters, its first cluster first.

    Only the platform definitions are planned with it: a problem in another
    team's job must not stop this one's rehearsal, and nothing else changes
    what this job resolves to.
    """
    platform = load_jobs(jobs_dir, root, only={PLATFORM_DIR}, options=options).definitions
    plan = build_plan([*platform, d])
    planned = [pj for cp in plan.clusters for pj in cp.jobs if pj.definition is d]
    assert planned, "build_plan refuses a job that runs on no cluster"
    team = next((t.obj for t in platform if isinstance(t.obj, Team) and t.obj.name == d.team), None)
    # The order place() goes through the clusters in: the job's, else the team's, else by name.
    assert isinstance(d.obj, PyTorchJob | TrainJob)
    order = [*(d.obj.clusters or []), *((team.clusters if team is not None else None) or [])]

    def rank(pj: PlannedJob) -> tuple[int, str]:
        name = pj.cluster.name
        return (order.index(name) if name in order else len(order), name)

    return sorted(planned, key=rank)


def _jobs_dir(path: Path) -> Path:
    # The rule load_file uses: the nearest enclosing directory named jobs.
    return next(p for p in path.resolve().parents if p.name == "jobs")


def _name(d: Definition) -> str:
    assert isinstance(d.obj, PyTorchJob | TrainJob)
    return d.obj.name


def _kind(d: Definition) -> str:
    return type(d.obj).__name__


def _list(defs: list[Definition]) -> str:
    return ", ".join(d.obj.describe() for d in defs)
