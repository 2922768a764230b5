"""How long a pod may take to stop (``Policy.max_termination_grace_period``).

A pod that is deleted, preempted by Volcano or Kueue, or evicted keeps its node's GPUs until it
has stopped: its ``terminationGracePeriodSeconds`` after SIGTERM. A long one lets a job hold
GPUs that a preempting job was promised. Checked on the pods the controllers create, so a
runtime's or a platform patch's grace period reaches its jobs' pods.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..effective import EffectiveJob
from ..errors import Problem
from ..resolve import Index, problem

__all__ = ["check_grace"]


def check_grace(index: Index, jobs: Sequence[EffectiveJob], problems: list[Problem]) -> None:
    cap = index.rules.max_termination_grace_period
    where = index.policy.file if index.policy else "jobs/platform/"
    for ej in jobs:
        for ps in ej.pod_sets:
            grace = ps.spec.get("terminationGracePeriodSeconds")
            if isinstance(grace, int) and grace > cap:
                problems.append(
                    problem(
                        ej.planned.definition,
                        f"the {ps.role} pods may take {grace} s to stop after SIGTERM, holding "
                        f"their GPUs while a preempting job waits; Policy."
                        f"max_termination_grace_period in {where} allows at most {cap} s: "
                        "checkpoint sooner, or ask the platform team",
                        "termination_grace_period",
                    )
                )
                break  # one problem per job: the setting is the job's (or its runtime's)
