"""Tolerations let pods onto tainted nodes; only the platform decides which (``Cluster.tolerations``)."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import Problem
from ..load import Definition
from ..model import JOB_KINDS, Cluster, RayJob, Toleration
from ..model.operator_job import OperatorJob
from ..resolve import Index, Plan, problem
from ..resolve.problems import known

__all__ = ["check_tolerations"]


def check_tolerations(plan: Plan, problems: list[Problem]) -> None:
    for cp in plan.clusters:
        for pr in cp.runtimes:
            _check(pr.definition, pr.runtime.tolerations, cp.cluster, plan.index, problems)
        for pj in cp.jobs:
            if isinstance(pj.job, JOB_KINDS):
                _check(pj.definition, pj.job.tolerations, cp.cluster, plan.index, problems)
            if isinstance(pj.job, OperatorJob):
                # A role's own tolerations replace the job's on its pods: the same grant.
                for field, role in pj.job.roles().items():
                    if role.tolerations is not None:
                        _check(
                            pj.definition, role.tolerations, cp.cluster, plan.index, problems,
                            f"{field}.",
                        )  # fmt: skip
            sub = pj.job.submitter if isinstance(pj.job, RayJob) else None
            if sub is not None and sub.tolerations is not None:
                # A RayJob's submitter pod, with its own tolerations: the same grant.
                _check(
                    pj.definition, sub.tolerations, cp.cluster, plan.index, problems, "submitter."
                )


def _check(
    d: Definition,
    tolerations: Sequence[Toleration],
    cluster: Cluster,
    index: Index,
    problems: list[Problem],
    prefix: str = "",
) -> None:
    allowed = cluster.tolerations
    for i, t in enumerate(tolerations):
        if any(a.covers(t) for a in allowed):
            continue
        problems.append(
            problem(
                d,
                f"toleration {t.describe()!r} is not allowed on cluster {cluster.name!r}; "
                f"Cluster.tolerations in {index.cluster_file(cluster.name)} allows "
                f"{known(a.describe() for a in allowed)}; remove it or ask the platform team "
                "to allow it",
                f"{prefix}tolerations[{i}]",
            )
        )
