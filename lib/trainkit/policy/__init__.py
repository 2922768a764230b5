"""The platform's policy, checked on the pods the controllers will create.

Registries, package sources, accelerator stacks, GPUs per node, per-job and per-team GPU caps,
queue capacity and tolerations. Every check reads the effective pods
(``trainkit.effective``), never the definitions' own fields, so a GPU a
runtime adds or a TrainJob leaves in place is counted. Every message names the
rule (``Policy.registries``, ``Team.max_gpus``, ``Queue.capability``, …) and the
file that declares it, so the person who hits it knows whom to ask.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..effective import EffectiveJob
from ..errors import Problem
from ..resolve import Plan, PlannedRuntime
from .caps import check_caps, check_runtime_gpus, team_gpus, teams_over_cap
from .env_expansion import check_env_expansion
from .grace import check_grace
from .images import check_images
from .node_rules import check_node_labels
from .packages import check_packages
from .qos import check_qos
from .queues import (
    check_kueue_fit,
    check_kueue_topology,
    check_queue_fit,
    check_workload_priority,
)
from .sidecars import check_sidecars
from .tolerations import check_tolerations

__all__ = ["check_policy", "team_gpus", "teams_over_cap"]


def check_policy(
    plan: Plan,
    jobs: Sequence[EffectiveJob],
    runtimes: Sequence[tuple[PlannedRuntime, dict[str, Any]]],
) -> list[Problem]:
    """Every policy problem of the plan's jobs and runtimes, in a stable order."""
    problems: list[Problem] = []
    check_images(plan.index, jobs, runtimes, problems)
    check_packages(plan.index, jobs, problems)
    check_runtime_gpus(runtimes, problems)
    check_caps(plan.index, jobs, problems)
    check_queue_fit(plan.index, jobs, problems)
    check_kueue_fit(plan.index, jobs, problems)
    check_workload_priority(plan.index, jobs, problems)
    check_kueue_topology(plan.index, jobs, problems)
    check_tolerations(plan, problems)
    check_node_labels(plan, problems)
    check_qos(plan.index, jobs, runtimes, problems)
    check_sidecars(jobs, runtimes, problems)
    check_env_expansion(jobs, problems)
    check_grace(plan.index, jobs, problems)
    return list(dict.fromkeys(problems))
