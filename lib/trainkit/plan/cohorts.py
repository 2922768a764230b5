"""Kueue cohorts in the plan: what each ClusterQueue would hold of its nominal quota and what
it would borrow from its cohort, if every job in git ran at once.

As kubernetes-sigs/kueue v0.19.2 counts it (pkg/cache/scheduler/resource_node.go):

- a ClusterQueue keeps ``nominalQuota - lendingLimit`` to itself (``localQuota``; nothing
  without a lending limit) and puts the rest of its nominal quota in its cohort's pool
  (``accumulateFromChild``);
- what its workloads use above that local quota counts against the pool (``addUsage``);
- it may hold its local quota plus what the pool has left, and at most
  ``nominalQuota + borrowingLimit`` where a borrowing limit is set (``available``);
- a ClusterQueue without a cohort holds its nominal quota, no more.

The plan counts each queue's own nominal quota as its own first: what the others borrow of it
comes back as their jobs finish, or at once where ``reclaimWithinCohort`` lets it preempt
(pkg/scheduler/preemption). Another queue's demand counts no higher than its nominal quota and
borrowing limit allow.

A workload's demand is the sum of its pod sets' requests times their counts
(pkg/workload/workload.go ``totalRequestsFromPodSets``), which ``Workload.requests`` computes.

trainkit writes a cohort as a name only (``spec.cohortName``; no Cohort object with quota of
its own or a parent), so every cohort here is flat. The plan does not pick flavors: each
amount is summed over the queue's flavors, which Kueue checks one flavor at a time. Every
queue's whole demand is counted at once, so where the cohort's queues want more than it
lends together, each is shown as the others left it: some jobs would wait.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ..kube.quantities import parse_quantity

__all__ = ["Share", "cohort_shares"]

_ZERO = Decimal(0)


@dataclass(frozen=True)
class Share:
    """One ClusterQueue's part of its cohort, per resource."""

    cohort: str | None
    nominal: dict[str, Decimal]
    """Its nominal quota, summed over its flavors."""
    holds: dict[str, Decimal]
    """The most it could hold beside the other queues' demand: its nominal quota alone without
    a cohort, else its local quota and what the pool leaves it, within its borrowing limit,
    and never less than its nominal quota."""
    borrows: dict[str, Decimal]
    """What its demand takes beyond its nominal quota, of what it could hold (only above 0)."""


@dataclass(frozen=True)
class _Quota:
    nominal: Decimal
    local: Decimal
    """``nominalQuota - lendingLimit``: never lent to the cohort."""
    borrowing_limit: Decimal | None
    """None: the cohort may lend without limit (a flavor without a borrowing limit)."""


def cohort_shares(
    specs: Mapping[str, Mapping[str, Any]], demand: Mapping[str, Mapping[str, Decimal]]
) -> dict[str, Share]:
    """Each ClusterQueue's share, from its rendered ``spec`` and its jobs' demand."""
    quotas = {name: _quotas(spec) for name, spec in specs.items()}
    cohorts: dict[str, list[str]] = defaultdict(list)
    for name, spec in specs.items():
        cohort = spec.get("cohortName")
        if isinstance(cohort, str) and cohort:
            cohorts[cohort].append(name)
    out: dict[str, Share] = {}
    for name, spec in specs.items():
        cohort = spec.get("cohortName")
        own, want = quotas[name], demand.get(name, {})
        nominal = {r: q.nominal for r, q in own.items()}
        if not isinstance(cohort, str) or not cohort:
            out[name] = Share(None, nominal, dict(nominal), {})
            continue
        members = cohorts[cohort]
        holds: dict[str, Decimal] = {}
        borrows: dict[str, Decimal] = {}
        for r in _names(own, want):
            q = own.get(r, _Quota(_ZERO, _ZERO, None))
            pool = sum((_lent(quotas[m].get(r)) for m in members), _ZERO)
            used_by_others = sum(
                (
                    _in_pool(quotas[m].get(r), demand.get(m, {}).get(r, _ZERO))
                    for m in members
                    if m != name
                ),
                _ZERO,
            )
            from_pool = pool - used_by_others
            if q.borrowing_limit is not None:
                from_pool = min(from_pool, q.nominal - q.local + q.borrowing_limit)
            # Its own nominal quota counts first: what the others borrow of it comes back as
            # their jobs finish (or at once, where reclaimWithinCohort lets it preempt).
            holds[r] = max(q.nominal, q.local + from_pool)
            taken = min(want.get(r, _ZERO), holds[r]) - q.nominal
            if taken > 0:
                borrows[r] = taken
        out[name] = Share(cohort, nominal, holds, borrows)
    return out


def _lent(q: _Quota | None) -> Decimal:
    """What the queue puts in its cohort's pool."""
    return _ZERO if q is None else q.nominal - q.local


def _in_pool(q: _Quota | None, want: Decimal) -> Decimal:
    """What the queue's demand takes from its cohort's pool: above its local quota, and no
    more than its nominal quota and borrowing limit let it hold."""
    if q is None:
        return _ZERO  # a queue without quota for the resource holds none of it
    if q.borrowing_limit is not None:
        want = min(want, q.nominal + q.borrowing_limit)
    return max(_ZERO, want - q.local)


def _names(own: Mapping[str, _Quota], want: Mapping[str, Decimal]) -> Iterable[str]:
    return sorted(set(own) | {r for r, v in want.items() if v})


def _quotas(spec: Mapping[str, Any]) -> dict[str, _Quota]:
    """Per resource, summed over the flavors; a borrowing limit counts only when every flavor
    quoting the resource has one (one without lets the cohort lend it without limit)."""
    nominal: dict[str, Decimal] = {}
    local: dict[str, Decimal] = {}
    borrow: dict[str, Decimal | None] = {}
    for group in _list(spec.get("resourceGroups")):
        for flavor in _list(_dict(group).get("flavors")):
            for res in _list(_dict(flavor).get("resources")):
                entry = _dict(res)
                name = str(entry.get("name"))
                n = _quantity(entry.get("nominalQuota")) or _ZERO
                nominal[name] = nominal.get(name, _ZERO) + n
                lend = _quantity(entry.get("lendingLimit"))
                kept = max(_ZERO, n - lend) if lend is not None else _ZERO
                local[name] = local.get(name, _ZERO) + kept
                limit = _quantity(entry.get("borrowingLimit"))
                if name not in borrow:
                    borrow[name] = limit
                else:
                    before = borrow[name]
                    borrow[name] = None if before is None or limit is None else before + limit
    return {r: _Quota(nominal[r], local[r], borrow[r]) for r in nominal}


def _quantity(value: Any) -> Decimal | None:
    return None if value is None else parse_quantity(str(value))


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
