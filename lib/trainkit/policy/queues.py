"""Whether each job's gang can ever be admitted by its queue.

Volcano admits a PodGroup only when its minimum resources fit the queue's
capability, and in a hierarchy the capability of every ancestor too
(volcano-sh/volcano v1.12 pkg/scheduler/plugins/capacity/capacity.go
``jobEnqueueable`` / ``realCapability``; plugins/proportion/proportion.go for
flat queues). A gang larger than that stays Pending forever, holding nothing
but hope: refuse it at synth.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

from ..effective import EffectiveJob
from ..errors import Problem
from ..kube.quantities import parse_quantity
from ..plan import Index, problem, queue_path

__all__ = ["check_queue_fit"]


def check_queue_fit(index: Index, jobs: Sequence[EffectiveJob], problems: list[Problem]) -> None:
    for ej in jobs:
        gang = ej.gang
        if gang is None or gang.queue is None or gang.queue not in index.queues:
            continue
        cluster = ej.planned.cluster
        for queue in queue_path(index, gang.queue):
            if queue.capability is None:
                continue
            over = []
            for name, limit in queue.capability.amounts(cluster.gpu_resource).items():
                cap = parse_quantity(limit)
                need = gang.requests.get(name, Decimal(0))
                if cap is not None and need > cap:
                    over.append((name, need, limit))
            if not over:
                continue
            via = "" if queue.name == gang.queue else f" (an ancestor of {gang.queue!r})"
            needs = ", ".join(f"{_amount(need)} {name}" for name, need, _ in over)
            caps = ", ".join(f"{limit} {name}" for name, _, limit in over)
            problems.append(
                problem(
                    ej.planned.definition,
                    f"the gang of {gang.min_member} pods needs {needs} on cluster "
                    f"{cluster.name!r}, but queue {queue.name!r}{via} can hold at most {caps} "
                    f"(Queue.capability in {index.queues[queue.name].file}): Volcano would never "
                    "admit it and the job would stay Pending; use fewer nodes or resources, or "
                    "another queue",
                    "queue" if ej.planned.job.queue else "nodes",
                )
            )


def _amount(value: Decimal) -> str:
    if value == value.to_integral_value():
        whole = int(value)
        for unit, size in (("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20)):
            if whole >= size and whole % size == 0:
                return f"{whole // size}{unit}"
        return str(whole)
    return format(value.normalize(), "f")
