"""From a definition file to a rehearsal: which job, and the pods of which cluster.

A job is planned with the platform definitions (the same ``build_plan``,
``render_groups`` and ``effective_jobs`` as ``trainkit synth``): its image may
differ per cluster or accelerator, a TrainJob takes most of what it runs with
from its runtime there, and the operators add their env. The rehearsal runs the
pods of the job's first cluster.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from ..effective import EffectiveJob
from ..errors import Problem, RehearsalError
from ..load import PLATFORM_DIR, Definition, LoadOptions, load_file, load_jobs
from ..model import JOB_KINDS, JAXJob, MPIJob, PyTorchJob, RayJob, Team, TrainJob, XGBoostJob
from ..resolve import PlannedJob, build_plan
from ..synth import effective_jobs, render_groups
from .outcome import RehearsalReport
from .ray import require_ray
from .ray_target import ray_target
from .runner import rehearse, require_framework
from .stopping import say
from .target import Target, rank_target

__all__ = ["choose_job", "plan_job", "rehearse_file", "target_of", "targets_for"]

# The kinds a rehearsal runs (a TFJob's TensorFlow and a PaddleJob's Paddle are not rehearsed).
_REHEARSED = (PyTorchJob, MPIJob, TrainJob, XGBoostJob, JAXJob, RayJob)


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
    ray_address: str | None = None,
    script_args: Sequence[str] = (),
) -> RehearsalReport:
    """Load the definition file ``path`` and rehearse its job (``job_name`` if several);
    a RayJob on the running Ray cluster at ``ray_address`` if given, with ``script_args``
    appended to its script's arguments (see ``rehearse``).

    ``jobs_dir`` (default: the ``jobs`` directory holding ``path``) is where the
    platform is looked up, in its ``platform/``; a planning problem (an unknown
    runtime, no cluster, …) raises DefinitionError.
    """
    out = sys.stdout if out is None else out
    # The file and the platform in one run of the definitions (plan_job loads the platform
    # by itself): a problem of either fails the rehearsal, both reported at once.
    loaded = load_file(
        path, root, jobs_dir=jobs_dir, options=load_options, with_dirs={PLATFORM_DIR}
    )
    rel = loaded.files[0]
    d = choose_job([x for x in loaded.definitions if x.file == rel], job_name, rel)
    # Before planning: a RayJob runs on Ray, XGBoost and JAX jobs on their framework, the
    # others with torchrun (or mpirun).
    if isinstance(d.obj, RayJob) and d.obj.ray_cluster is not None:
        raise RehearsalError(
            [
                Problem(
                    file=d.file,
                    obj=d.obj.describe(),
                    field="ray_cluster",
                    message=f"{d.obj.describe()} runs on RayCluster {d.obj.ray_cluster!r}, "
                    "whose image holds its code: trainkit cannot rehearse a job on an existing "
                    "Ray cluster; run its command against a local Ray cluster (`ray start "
                    "--head`, then the command with RAY_ADDRESS=auto)",
                )
            ]
        )
    if isinstance(d.obj, RayJob):
        require_ray(d.file, d.obj.describe())
    else:
        require_framework(type(d.obj).__name__, d.file, d.obj.describe())
    platform = [p for p in loaded.definitions if p.team == PLATFORM_DIR]
    targets = targets_for(d, platform)
    target = targets[0]
    if len(targets) > 1:
        say(
            out,
            f"{d.obj.describe()} runs on clusters {', '.join(t.cluster for t in targets)}; "
            f"rehearsing its pods on its first cluster, {target.cluster}",
        )
    return rehearse(
        target, file=d.file, nodes=nodes, procs_per_node=procs_per_node, timeout=timeout,
        out=out, ray_address=ray_address, script_args=script_args,
    )  # fmt: skip


def choose_job(loaded: list[Definition], job_name: str | None, file: str) -> Definition:
    """The job ``job_name`` (``NAME`` or ``KIND/NAME``) of a file, or its only job."""
    defs = [d for d in loaded if isinstance(d.obj, _REHEARSED)]

    def refuse(message: str) -> RehearsalError:
        return RehearsalError([Problem(file=file, message=message)])

    others = [d for d in loaded if isinstance(d.obj, JOB_KINDS) and d not in defs]
    if job_name is not None:
        others = [d for d in others if job_name in (_any_name(d), f"{_kind(d)}/{_any_name(d)}")]
    if others and (not defs or (job_name is not None and not _named(defs, job_name))):
        # Name the kind: "no job here" about a file holding a TFJob reads as a loading bug.
        kinds = sorted({_kind(d) for d in others})
        first = others[0].obj
        assert isinstance(first, JOB_KINDS)
        raise refuse(
            f"{_list(others)}: trainkit cannot rehearse a {' or '.join(kinds)} (its framework's "
            f"launcher is not run here); rehearse runs {_rehearsed()}. "
            f"`trainkit explain {first.name}` shows what its pods get"
        )
    if not defs:
        raise refuse(
            "no PyTorchJob, MPIJob, TrainJob, XGBoostJob, JAXJob or RayJob in this file; "
            "rehearse runs those"
        )
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


def plan_job(
    d: Definition, jobs_dir: Path, root: Path | None = None, options: LoadOptions | None = None
) -> list[Target]:
    """The pods of the job of ``d`` on each of its clusters, its first cluster first.

    Only the platform definitions are planned with it: a problem in another
    team's job must not stop this one's rehearsal, and nothing else changes
    what this job resolves to.
    """
    platform = load_jobs(jobs_dir, root, only={PLATFORM_DIR}, options=options).definitions
    return targets_for(d, platform)


def target_of(
    ej: EffectiveJob, body: Mapping[str, Any], configmaps: Mapping[str, Mapping[str, Any]]
) -> Target:
    """The Target of ``ej``, from its rendered object ``body`` and the ConfigMaps of its
    cluster (name → object), which hold the script files its pods mount: a Ray cluster for
    a RayJob, ranks for every other kind."""
    if isinstance(ej.planned.job, RayJob):
        return ray_target(ej, body, configmaps)
    return rank_target(ej, body, configmaps)


def targets_for(d: Definition, platform: Sequence[Definition]) -> list[Target]:
    """The pods of the job of ``d`` planned with ``platform``, on each of its clusters in
    the order ``plan.place`` goes through them: the job's, else the team's, else by name."""
    plan = build_plan([*platform, d])
    groups = render_groups(plan)
    targets: list[Target] = []
    by_job = {id(ej.planned): ej for ej in effective_jobs(groups)}
    for _, items in groups:
        configmaps: dict[str, dict[str, Any]] = {
            r.body["metadata"]["name"]: r.body for r in items if r.body.get("kind") == "ConfigMap"
        }
        for r in items:
            pj = r.planned
            if isinstance(pj, PlannedJob) and pj.definition is d:
                targets.append(target_of(by_job[id(pj)], r.body, configmaps))
    assert targets, "build_plan refuses a job that runs on no cluster"
    team = next((t.obj for t in platform if isinstance(t.obj, Team) and t.obj.name == d.team), None)
    assert isinstance(d.obj, _REHEARSED)
    order = [*(d.obj.clusters or []), *((team.clusters if team is not None else None) or [])]

    def rank(t: Target) -> tuple[int, str]:
        return (order.index(t.cluster) if t.cluster in order else len(order), t.cluster)

    return sorted(targets, key=rank)


def _rehearsed() -> str:
    names = [k.__name__ for k in _REHEARSED]
    return ", ".join(names[:-1]) + " and " + names[-1]


def _any_name(d: Definition) -> str:
    assert isinstance(d.obj, JOB_KINDS)
    return d.obj.name


def _named(defs: list[Definition], job_name: str) -> bool:
    return any(job_name in (_name(d), f"{_kind(d)}/{_name(d)}") for d in defs)


def _name(d: Definition) -> str:
    assert isinstance(d.obj, _REHEARSED)
    return d.obj.name


def _kind(d: Definition) -> str:
    return type(d.obj).__name__


def _list(defs: list[Definition]) -> str:
    return ", ".join(d.obj.describe() for d in defs)
