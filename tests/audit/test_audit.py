"""The bad-input audit as pytest cases: one test per case.

The cases in ``catalogue.FAST`` (a spread over every area and defect class) run in the default
suite; the rest are marked ``slow`` (run by ``make test-all`` or ``pytest -m slow tests/audit``).
``python -m tests.audit`` runs them all and prints a table.
"""

from __future__ import annotations

import pytest

from tests.audit.catalogue import FAST, all_cases
from tests.audit.runner import EXPECTATIONS, Case, run_case, warm_up

CASES = all_cases()


def _param(case: Case) -> object:
    marks = () if case.id in FAST else (pytest.mark.slow,)
    return pytest.param(case, id=case.id, marks=marks)


@pytest.fixture(scope="module", autouse=True)
def _warm() -> None:
    warm_up()


def test_catalogue_is_large_and_consistent() -> None:
    ids = {case.id for case in CASES}
    assert len(ids) == len(CASES) >= 220
    assert FAST.issubset(ids), sorted(FAST - ids)
    assert all(case.expect in EXPECTATIONS for case in CASES)
    # every refusal names what it must name; subprocess cases are few and slow
    assert all(case.names for case in CASES if case.expect != "valid")
    assert not any(case.kind == "subprocess" for case in CASES if case.id in FAST)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_case(case: Case) -> None:
    verdict = run_case(case)
    assert verdict.passed, f"{case.id} (expected {case.expect}): {verdict.observed}"


def test_a_spinning_case_is_ended_by_its_cpu_budget_not_by_the_clock() -> None:
    """Issue 30, friction 9: the hang detector counts CPU seconds (the same on a loaded
    machine), so a slow machine cannot fail a case; a case that spins is still caught."""

    def spin() -> None:
        while True:
            pass

    verdict = run_case(Case(id="spin", area="audit", expect="valid", call=spin, timeout=1.0))
    assert not verdict.passed and "more than 1 CPU-s" in verdict.observed, verdict
