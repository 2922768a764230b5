"""The plan's Kueue cohorts: what each ClusterQueue holds of its nominal quota and borrows.

Cases from kubernetes-sigs/kueue v0.19.2 pkg/cache/scheduler/resource_test.go (TestAvailable)
and resource_node_test.go (TestCohortLendable), adapted to flat cohorts (trainkit writes no
Cohort object with quota of its own: a ClusterQueue that lends everything stands for it).
A hypothesis property compares ``cohort_shares`` with a port of resource_node.go's tree walk
(``addUsage`` from zero, then ``available``).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from trainkit.plan import format_markdown, format_text
from trainkit.plan.cohorts import cohort_shares
from trainkit.plan.facts import (
    Amounts,
    ClusterReport,
    ObjectChange,
    PlanReport,
    QueueSide,
    QueueUse,
)

D = Decimal


def cq(
    cpu: str,
    *,
    borrow: str | None = None,
    lend: str | None = None,
    cohort: str | None = "cohort",
    flavors: int = 1,
) -> dict[str, Any]:
    """A rendered ClusterQueue spec quoting ``cpu`` in each of ``flavors`` flavors."""
    entry: dict[str, Any] = {"name": "cpu", "nominalQuota": cpu}
    if borrow is not None:
        entry["borrowingLimit"] = borrow
    if lend is not None:
        entry["lendingLimit"] = lend
    spec: dict[str, Any] = {
        "resourceGroups": [
            {
                "coveredResources": ["cpu"],
                "flavors": [{"name": f"f{i}", "resources": [entry]} for i in range(flavors)],
            }
        ]
    }
    if cohort is not None:
        spec["cohortName"] = cohort
    return spec


def cpu(n: int | str) -> dict[str, Decimal]:
    return {"cpu": D(n)}


def test_a_queue_without_a_cohort_holds_its_nominal_quota() -> None:
    # TestAvailable "base cqs": no cohort, the nominal quota is all there is.
    shares = cohort_shares(
        {"cq1": cq("0", cohort=None), "cq2": cq("5", cohort=None)}, {"cq2": cpu(8)}
    )
    assert shares["cq1"].holds == cpu(0) and shares["cq2"].holds == cpu(5)
    assert shares["cq2"].borrows == {} and shares["cq2"].cohort is None


def test_a_queue_borrows_what_its_cohort_leaves_unused() -> None:
    # TestAvailable "cq borrows from cohort": 10 of its own, 10 lent by the cohort; 11 used.
    shares = cohort_shares({"cq1": cq("10"), "lender": cq("10")}, {"cq1": cpu(11)})
    assert shares["cq1"].holds == cpu(20)
    assert shares["cq1"].borrows == cpu(1)
    assert shares["lender"].borrows == {}


def test_limits_are_respected_as_in_kueue_s_test() -> None:
    # TestAvailable "lending and borrowing limits respected" (the cohort's own 10 stand as
    # cq4): cq1 uses 20, cq2 10, cq3 6 (5 of them its own): cq1 could hold 24 (4 left),
    # cq2 12 (its borrowing limit of 2), cq3 10 (4 left).
    specs = {
        "cq1": cq("10"),
        "cq2": cq("10", borrow="2"),
        "cq3": cq("10", lend="5"),
        "cq4": cq("10"),
    }
    demand = {"cq1": cpu(20), "cq2": cpu(10), "cq3": cpu(6)}
    shares = cohort_shares(specs, demand)
    assert {n: s.holds["cpu"] for n, s in shares.items()} == {
        "cq1": D(24),
        "cq2": D(12),
        "cq3": D(10),
        # Kueue's available is 4 (35 - (20 + 10 + 1)) while cq1 borrows its quota; the plan
        # counts a queue's own nominal quota first (given back as cq1's jobs finish).
        "cq4": D(10),
    }
    assert shares["cq1"].borrows == cpu(10)
    assert shares["cq2"].borrows == {} and shares["cq3"].borrows == {}
    # With nothing used, each holds its potentially available: 35, 12, 40, 35.
    idle = cohort_shares(specs, {})
    assert [idle[n].holds["cpu"] for n in ("cq1", "cq2", "cq3", "cq4")] == [
        D(35),
        D(12),
        D(40),
        D(35),
    ]


def test_a_lending_limit_keeps_the_rest_of_the_quota_from_the_cohort() -> None:
    # TestCohortLendable: what the queues lend is their lending limit, not their quota.
    shares = cohort_shares({"a": cq("8", lend="2"), "b": cq("2", lend="2")}, {"b": cpu(10)})
    assert shares["b"].holds == cpu(4)  # its 2 and a's 2 lent
    assert shares["b"].borrows == cpu(2)


def test_a_borrowing_limit_over_several_flavors_adds_up() -> None:
    # Summed over flavors: two flavors of 4 with a borrowing limit of 1 each.
    shares = cohort_shares({"a": cq("4", borrow="1", flavors=2), "b": cq("8")}, {"a": cpu(12)})
    assert shares["a"].nominal == cpu(8) and shares["a"].holds == cpu(10)
    assert shares["a"].borrows == cpu(2)


def test_queues_that_together_want_more_than_the_cohort_lends_wait() -> None:
    # TestAvailable "cq oversubscription spills into cohort": what one borrows, the others
    # lack. Two queues using all of their own quota have nothing to lend each other.
    shares = cohort_shares({"a": cq("10"), "b": cq("10")}, {"a": cpu(15), "b": cpu(15)})
    assert shares["a"].holds == cpu(10) and shares["a"].borrows == {}
    # A third lends 10: enough for both.
    specs = {"a": cq("10"), "b": cq("10"), "c": cq("10")}
    shares = cohort_shares(specs, {"a": cpu(15), "b": cpu(15)})
    assert shares["a"].holds == cpu(15) and shares["a"].borrows == cpu(5)
    # It uses 2 itself: each borrower is shown as the other leaves it (3 of the 8), over.
    shares = cohort_shares(specs, {"a": cpu(15), "b": cpu(15), "c": cpu(2)})
    assert shares["a"].holds == cpu(13) and shares["a"].borrows == cpu(3)
    assert shares["c"].holds == cpu(10)
    # A borrowing limit bounds what another queue's demand takes from the pool.
    specs["b"] = cq("10", borrow="1")
    shares = cohort_shares(specs, {"a": cpu(15), "b": cpu(15), "c": cpu(2)})
    assert shares["a"].holds == cpu(17) and shares["a"].borrows == cpu(5)
    assert shares["b"].holds == cpu(11) and shares["b"].borrows == cpu(1)


def _kueue_holds(specs: dict[str, dict[str, Any]], demand: dict[str, Decimal]) -> dict[str, Any]:
    """resource_node.go, one resource, one flavor, flat cohorts: usage added from zero with
    ``addUsage``, then ``available`` + the queue's own usage."""
    node = {}
    for name, spec in specs.items():
        (entry,) = spec["resourceGroups"][0]["flavors"][0]["resources"]
        n = D(entry["nominalQuota"])
        lend = entry.get("lendingLimit")
        borrow = entry.get("borrowingLimit")
        local = max(D(0), n - D(lend)) if lend is not None else D(0)  # localQuota
        node[name] = (spec.get("cohortName"), n, local, None if borrow is None else D(borrow))
    subtree: dict[str, Decimal] = {}
    usage: dict[str, Decimal] = {}
    for cohort, n, local, _ in node.values():
        if cohort is not None:  # accumulateFromChild
            subtree[cohort] = subtree.get(cohort, D(0)) + n - local
            usage.setdefault(cohort, D(0))
    for name, (cohort, n, local, borrow) in node.items():
        val = demand.get(name, D(0))
        if borrow is not None:  # no queue is admitted beyond its nominal and borrowing limit
            val = min(val, n + borrow)
        local_available = max(D(0), local - D(0))  # LocalAvailable before this usage
        if cohort is not None and val > local_available:  # addUsage bubbles up the rest
            usage[cohort] += val - local_available
    out = {}
    for name, (cohort, n, local, borrow) in node.items():
        used = demand.get(name, D(0))
        if borrow is not None:
            used = min(used, n + borrow)
        if cohort is None:
            out[name] = n
            continue
        parent = subtree[cohort] - usage[cohort]
        if borrow is not None:
            stored, in_parent = n - local, max(D(0), used - local)
            parent = min(stored - in_parent + borrow, parent)
        available = max(D(0), local - used) + parent
        # The plan counts the queue's own nominal quota first (what others borrow of it
        # comes back as their jobs finish).
        out[name] = max(n, available + used)
    return out


QUOTAS = st.integers(min_value=0, max_value=20)


@st.composite
def cohorts(draw: Any) -> tuple[dict[str, dict[str, Any]], dict[str, Decimal]]:
    specs, demand = {}, {}
    for i in range(draw(st.integers(min_value=1, max_value=5))):
        n = draw(QUOTAS)
        lend = draw(st.none() | st.integers(min_value=0, max_value=n))
        borrow = draw(st.none() | QUOTAS)
        cohort = draw(st.sampled_from([None, "a", "b"]))
        if cohort is None:
            lend = borrow = None  # Kueue refuses limits without a cohort
        specs[f"q{i}"] = cq(
            str(n),
            borrow=None if borrow is None else str(borrow),
            lend=None if lend is None else str(lend),
            cohort=cohort,
        )
        demand[f"q{i}"] = D(draw(st.integers(min_value=0, max_value=50)))
    return specs, demand


@settings(max_examples=300, deadline=None)
@given(cohorts())
def test_the_plan_counts_a_cohort_as_kueue_s_resource_tree_does(
    case: tuple[dict[str, dict[str, Any]], dict[str, Decimal]],
) -> None:
    specs, demand = case
    shares = cohort_shares(specs, {n: {"cpu": v} for n, v in demand.items()})
    expected = _kueue_holds(specs, demand)
    for name, share in shares.items():
        assert share.holds["cpu"] == expected[name], name
        borrowed = share.borrows.get("cpu", D(0))
        assert borrowed == max(D(0), min(demand[name], expected[name]) - share.nominal["cpu"])
        entry = specs[name]["resourceGroups"][0]["flavors"][0]["resources"][0]
        if "borrowingLimit" in entry:
            assert borrowed <= D(entry["borrowingLimit"])


def _amounts(**kw: Any) -> Amounts:
    return Amounts.model_construct(**({"gpu": None, "cpu": None, "memory": None, "other": {}} | kw))


def _side(gpus: int, **kw: Any) -> QueueSide:
    return QueueSide.model_construct(
        **(
            {
                "requests": _amounts(gpu=gpus, cpu="0", memory="0"),
                "capability": None,
                "deserved": None,
                "guarantee": None,
                "over_capability": [],
                "above_deserved": [],
                "reclaimable": None,
                "cohort": None,
                "borrowing": None,
            }
            | kw
        )
    )


def _report(*queues: QueueUse) -> PlanReport:
    change = ObjectChange.model_construct(
        action="change", team="t", kind="PyTorchJob", namespace="t", name="j", fields=[]
    )
    cluster = ClusterReport.model_construct(
        cluster="k", gpu_resource="nvidia.com/gpu", changes=[change], queues=list(queues), teams=[]
    )
    return PlanReport.model_construct(
        baseline="main", baseline_found=True, note="", clusters=[cluster], argocd=[], migration=[]
    )


def test_a_queue_that_starts_borrowing_and_one_over_its_cohort_are_shown() -> None:
    nominal = _amounts(gpu=16)
    starts = QueueUse.model_construct(
        queue="llm",
        kind="ClusterQueue",
        before=_side(8, capability=nominal, cohort="h100"),
        after=_side(24, capability=nominal, cohort="h100", borrowing=_amounts(gpu=8)),
    )
    over = QueueUse.model_construct(
        queue="cv",
        kind="ClusterQueue",
        before=_side(16, capability=nominal, cohort="h100"),
        after=_side(
            40,
            capability=nominal,
            cohort="h100",
            borrowing=_amounts(gpu=4),
            over_capability=["gpu"],
        ),
    )
    text = format_text(_report(starts, over))
    assert "    llm (cohort h100)  GPU 8 → 24 of 16, borrows 0 → 8   cpu 0   memory 0\n" in text
    assert "    cv (cohort h100)   GPU 16 → 40 of 16, borrows 0 → 4 (over: jobs wait)" in text
    comment = format_markdown(_report(starts, over))
    assert (
        "> ⚠️ queue `cv` on `k` if every job in git ran at once: GPU 40 of 16 and 4 borrowed; "
        "over its nominal quota and what cohort `h100` can lend it, jobs wait for each other "
        "(not an error)"
    ) in comment
    assert "against each queue's nominal quota, and what it borrows from its cohort:" in comment


def test_a_volcano_queue_above_what_it_deserves_says_whether_it_is_reclaimable() -> None:
    def queue(reclaimable: bool) -> QueueUse:
        return QueueUse.model_construct(
            queue="q" if reclaimable else "r",
            kind="Queue",
            before=_side(4, deserved=_amounts(gpu=8), reclaimable=reclaimable),
            after=_side(
                12, deserved=_amounts(gpu=8), above_deserved=["gpu"], reclaimable=reclaimable
            ),
        )

    text = format_text(_report(queue(True), queue(False)))
    assert "    q  GPU 4 → 12, deserved 8 (above deserved: reclaimable)" in text
    assert "    r  GPU 4 → 12, deserved 8 (above deserved)   cpu 0" in text
