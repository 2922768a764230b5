"""How the suite itself runs: nothing in it races the clock (conftest's Hypothesis profile)."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

# Built at import, as every ``@settings(...)`` on a property test is: it inherits the
# profile only if conftest loaded it before the test modules were imported.
AS_A_TEST_SEES_IT = settings(max_examples=5)


def test_no_property_test_has_a_deadline_or_a_generation_time_limit() -> None:
    assert AS_A_TEST_SEES_IT.deadline is None
    assert HealthCheck.too_slow in AS_A_TEST_SEES_IT.suppress_health_check
    assert HealthCheck.filter_too_much not in AS_A_TEST_SEES_IT.suppress_health_check
