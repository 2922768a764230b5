"""How the suite itself runs: nothing in it races the clock (conftest's Hypothesis profile),
the parallel workers start with their share of the long tests (conftest's ordering), and
tests run with the bytecode setting the suite was started with (conftest lifts it only while
the test modules are collected)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from conftest import pytest_collection_modifyitems

# Built at import, as every ``@settings(...)`` on a property test is: it inherits the
# profile only if conftest loaded it before the test modules were imported.
AS_A_TEST_SEES_IT = settings(max_examples=5)


def test_no_property_test_has_a_deadline_or_a_generation_time_limit() -> None:
    assert AS_A_TEST_SEES_IT.deadline is None
    assert HealthCheck.too_slow in AS_A_TEST_SEES_IT.suppress_health_check
    assert HealthCheck.filter_too_much not in AS_A_TEST_SEES_IT.suppress_health_check


@dataclass
class _Item:
    name: str
    long: bool

    def get_closest_marker(self, name: str) -> object | None:
        return object() if name == "long" and self.long else None


def test_each_xdist_worker_starts_with_its_share_of_the_long_tests(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def collection() -> list[Any]:
        return [_Item(f"t{i}", long=i in {3, 10, 11, 40, 41}) for i in range(51)]

    items = collection()
    short = [item.name for item in items if not item.long]
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "2")
    pytest_collection_modifyitems(items)
    # worksteal's first split of 51 tests between 2 workers: 25, then the other 26.
    first, second = [i.name for i in items[:25]], [i.name for i in items[25:]]
    assert (first[:3], second[:2]) == (["t3", "t11", "t41"], ["t10", "t40"])
    assert first[3:] + second[2:] == short  # the rest in their order, none lost

    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT")  # one process: the long ones first
    items = collection()
    pytest_collection_modifyitems(items)
    assert [i.name for i in items[:5]] == ["t3", "t10", "t11", "t40", "t41"]
    assert [i.name for i in items[5:]] == short


def test_tests_run_with_the_bytecode_setting_they_were_started_with() -> None:
    # conftest lets pytest cache the assert-rewritten test modules during collection; after
    # it, what a test (or a process it starts) writes follows -B / PYTHONDONTWRITEBYTECODE.
    assert sys.dont_write_bytecode == bool(sys.flags.dont_write_bytecode)
