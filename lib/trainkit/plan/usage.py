"""What the queues and teams would hold if every job in git ran at once, before → after.

Information for the reviewer, never an error by itself: a finished job still in
git holds nothing, and an oversubscribed queue only makes jobs wait (Volcano
admits a gang when it fits what is left of the capability). What can never run
(one gang above its queue's capability) is refused by synth already.

A queue's requests are the sum of its jobs' gangs (``Gang.requests``, what
Volcano admits at once) and, in a hierarchy, of its children's: the capacity
plugin checks every ancestor (volcano-sh/volcano v1.12
pkg/scheduler/plugins/capacity/capacity.go ``realCapability``).

A Kueue ClusterQueue's requests are its jobs' Workloads (every pod set at once); it is shown
against its nominal quota, with what it borrows from its cohort (``cohorts.py``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ..effective import EffectiveJob
from ..kube.quantities import parse_quantity
from .cohorts import Share, cohort_shares
from .facts import Amounts, QueueSide, QueueUse, Resource, TeamUse
from .trees import Obj

__all__ = ["ClusterJobs", "format_amount", "queue_usage", "team_usage"]

_ROOT = "root"
_RESOURCES: tuple[Resource, ...] = ("gpu", "cpu", "memory")


@dataclass(frozen=True)
class ClusterJobs:
    """One side of one cluster: its jobs with their pods, and its Queue objects by name."""

    jobs: Sequence[tuple[Obj, EffectiveJob]]
    queues: Mapping[str, Obj]


def queue_usage(before: ClusterJobs, after: ClusterJobs, gpu_resource: str) -> list[QueueUse]:
    names = set(before.queues) | set(after.queues)
    sides = {}
    for label, side in (("before", before), ("after", after)):
        requests = _requests(side)
        names |= set(requests)
        specs = {
            n: _dict(o.body.get("spec")) for n, o in side.queues.items() if o.kind == "ClusterQueue"
        }
        sides[label] = (side, requests, cohort_shares(specs, requests))
    out = []
    for name in sorted(names):
        b = _side(name, *sides["before"], gpu_resource)
        a = _side(name, *sides["after"], gpu_resource)
        if a is not None or b is not None:
            obj = after.queues.get(name) or before.queues.get(name)
            kueue = obj is not None and obj.kind == "ClusterQueue"
            out.append(
                QueueUse.model_construct(
                    queue=name, kind="ClusterQueue" if kueue else "Queue", before=b, after=a
                )
            )
    return out


def _requests(side: ClusterJobs) -> dict[str, dict[str, Decimal]]:
    """Per queue: what the gangs using it or any queue below it request together (an
    elastic job's every Worker, an autoscaled Ray group's, up to the autoscaler's maximum)."""
    totals: dict[str, dict[str, Decimal]] = defaultdict(dict)
    for _, ej in side.jobs:
        gang = ej.gang
        if gang is not None and gang.queue:
            for queue in _lineage(gang.queue, side.queues):
                bucket = totals[queue]
                for resource, amount in (gang.at_most or gang.requests).items():
                    bucket[resource] = bucket.get(resource, Decimal(0)) + amount
            continue
        # Kueue admits the whole workload through the LocalQueue its label names, which
        # trainkit names after its ClusterQueue.
        if ej.workload is not None:
            bucket = totals[ej.workload.queue]
            for resource, amount in ej.workload.requests().items():
                bucket[resource] = bucket.get(resource, Decimal(0)) + amount
    return dict(totals)


def _lineage(name: str, queues: Mapping[str, Obj]) -> list[str]:
    """The queue and its ancestors up to (without) Volcano's root; a cycle ends the walk."""
    out = [name]
    while True:
        obj = queues.get(out[-1])
        parent = _dict(obj.body.get("spec")).get("parent") if obj is not None else None
        if not isinstance(parent, str) or parent == _ROOT or parent in out:
            return out
        out.append(parent)


def _side(
    name: str,
    side: ClusterJobs,
    requests: Mapping[str, Mapping[str, Decimal]],
    shares: Mapping[str, Share],
    gpu: str,
) -> QueueSide | None:
    obj = side.queues.get(name)
    if obj is None and name not in requests:
        return None
    wanted = requests.get(name, {})
    share = shares.get(name)
    if share is not None:
        # A ClusterQueue: its nominal quota, and what it borrows from its cohort.
        return QueueSide.model_construct(
            requests=_amounts(wanted, gpu, every=True),
            capability=_amounts(share.nominal, gpu, every=False),
            over_capability=_above(wanted, _text(share.holds), gpu),
            cohort=share.cohort,
            borrowing=_amounts(share.borrows, gpu, every=False) if share.borrows else None,
        )
    spec = _dict(obj.body.get("spec")) if obj is not None else {}
    limits = {
        "capability": _dict(spec.get("capability")) or None,
        "deserved": _dict(spec.get("deserved")) or None,
        "guarantee": _dict(_dict(spec.get("guarantee")).get("resource")) or None,
    }
    reclaimable = spec.get("reclaimable", True) if obj is not None else None
    return QueueSide.model_construct(
        requests=_amounts(wanted, gpu, every=True),
        capability=_limit(limits["capability"], gpu),
        deserved=_limit(limits["deserved"], gpu),
        guarantee=_limit(limits["guarantee"], gpu),
        over_capability=_above(wanted, limits["capability"], gpu),
        above_deserved=_above(wanted, limits["deserved"], gpu),
        reclaimable=reclaimable if isinstance(reclaimable, bool) else None,
    )


def _text(values: Mapping[str, Decimal]) -> dict[str, str]:
    return {k: format(v.normalize(), "f") for k, v in values.items()}


def _limit(raw: Mapping[str, Any] | None, gpu: str) -> Amounts | None:
    if raw is None:
        return None
    parsed = {k: v for k, v in ((k, parse_quantity(v)) for k, v in raw.items()) if v is not None}
    return _amounts(parsed, gpu, every=False)


def _above(
    wanted: Mapping[str, Decimal], raw: Mapping[str, Any] | None, gpu: str
) -> list[Resource]:
    if raw is None:
        return []
    out: list[Resource] = []
    others = sorted(k for k in raw if k not in (gpu, "cpu", "memory"))
    for resource in (*_RESOURCES, *others):
        key = gpu if resource == "gpu" else resource
        limit = parse_quantity(raw.get(key)) if key in raw else None
        if limit is not None and wanted.get(key, Decimal(0)) > limit:
            out.append(resource)
    return out


def _amounts(values: Mapping[str, Decimal], gpu: str, *, every: bool) -> Amounts:
    """Amounts of the three resources and any other named; ``every`` writes zeros for the
    three when not named."""

    def get(key: str) -> Decimal | None:
        return values.get(key, Decimal(0) if every else None)

    g, c, m = get(gpu), get("cpu"), get("memory")
    return Amounts.model_construct(
        gpu=int(g) if g is not None else None,
        cpu=format_amount("cpu", c) if c is not None else None,
        memory=format_amount("memory", m) if m is not None else None,
        other={
            k: format_amount(k, v)
            for k, v in sorted(values.items())
            if k not in (gpu, "cpu", "memory")
        },
    )


def format_amount(resource: str, value: Decimal) -> str:
    """A quantity as a person would write it: ``64``, ``500m``, ``512Gi``."""
    if value != value.to_integral_value():
        if resource == "cpu" and (value * 1000) == (value * 1000).to_integral_value():
            return f"{int(value * 1000)}m"
        return format(value.normalize(), "f")
    whole = int(value)
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        for unit, size in (("Ei", 1 << 60), ("Pi", 1 << 50), ("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):  # fmt: skip
            if whole >= size and whole % size == 0:
                return f"{whole // size}{unit}"
    return str(whole)


def team_usage(
    before: ClusterJobs, after: ClusterJobs, max_gpus: Mapping[str, int | None]
) -> list[TeamUse]:
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for i, side in enumerate((before, after)):
        for obj, ej in side.jobs:
            totals[obj.team][i] += ej.gpus()
    out = []
    for team, (b, a) in sorted(totals.items()):
        cap = max_gpus.get(team)
        out.append(
            TeamUse.model_construct(
                team=team,
                before=b,
                after=a,
                max_gpus=cap,
                over_before=cap is not None and b > cap,
                over_after=cap is not None and a > cap,
            )
        )
    return out


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
