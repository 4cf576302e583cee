"""The PLD accountant's cost guard: refuse, before building, a PLD that cannot fit (issue 13 §2)."""

from __future__ import annotations

import time

import pytest
from dp_accounting import dp_event as events

from minsep.accountants.pld import DEFAULT_INTERVAL, PLDAccountant
from minsep.accountants.pld_cost import estimate_cost
from minsep.framework.errors import ConfigurationError
from minsep.framework.registries import schemes, strategies

IDENTITY = strategies.get("identity")()
DEMO = schemes.get("poisson").from_rate(1024, 1 / 256)


def test_a_tiny_sigma_is_refused_at_once_with_the_cost_and_the_floor() -> None:
    # Before: --sigma 1e-3 never finished (the cost grows like 1/sigma^2).
    start = time.process_time()
    with pytest.raises(ConfigurationError) as info:
        PLDAccountant().epsilon(DEMO, IDENTITY, 1e-3, 1e-3)
    assert time.process_time() - start < 5.0  # decided from the estimate, nothing built
    message = str(info.value)
    for part in ("sigma = 0.001", "GiB", "max_memory_gib = 1", "floor", "1/sigma^2"):
        assert part in message, message
    floor = PLDAccountant().sigma_floor(DEMO, IDENTITY)
    assert f"{floor:.4g}" in message
    assert 0.01 < floor < 0.1


def test_the_floor_is_where_the_estimate_meets_the_budget() -> None:
    accountant = PLDAccountant(max_memory_gib=0.05)
    floor = accountant.sigma_floor(DEMO, IDENTITY)
    budget = 0.05 * 2**30
    above = accountant.cost(DEMO, IDENTITY, floor)
    below = accountant.cost(DEMO, IDENTITY, floor / 1.01)
    assert above is not None and below is not None
    assert above.bytes <= budget < below.bytes
    with pytest.raises(ConfigurationError, match="sigma"):
        accountant.epsilon(DEMO, IDENTITY, floor / 1.01, 1e-3)


def test_the_estimate_grows_like_one_over_sigma_squared_and_the_grid() -> None:
    def points(sigma: float, vdi: float) -> float:
        event = events.SelfComposedDpEvent(
            events.PoissonSampledDpEvent(1 / 256, events.GaussianDpEvent(sigma)), 1024
        )
        cost = estimate_cost(event, vdi)
        assert cost is not None
        return cost.points

    assert points(1e-4, 1e-3) / points(1e-3, 1e-3) == pytest.approx(100.0, rel=0.05)
    assert points(0.5, 1e-4) == pytest.approx(10.0 * points(0.5, 1e-3), rel=1e-12)
    # The truncated event compares the replace-one pair: sensitivity 2.
    truncated = events.TruncatedSubsampledGaussianDpEvent(100, 0.5, 40, 0.2)
    plain = events.PoissonSampledDpEvent(0.5, events.GaussianDpEvent(0.1))
    a, b = estimate_cost(truncated, 1e-3), estimate_cost(plain, 1e-3)
    assert a is not None and b is not None and a.points == pytest.approx(b.points, rel=1e-12)
    assert estimate_cost(events.LaplaceDpEvent(1.0), 1e-3) is None


def test_calibration_at_a_huge_epsilon_stops_at_the_floor() -> None:
    # Before: calibrate at epsilon = 1e6 walked sigma down without end.
    scheme = schemes.get("poisson")(n_steps=8, rate=0.1)
    accountant = PLDAccountant(max_memory_gib=0.01)
    floor = accountant.sigma_floor(scheme, IDENTITY)
    result = accountant.calibrate(scheme, IDENTITY, 1e6, 1e-3)
    assert result.sigma == pytest.approx(floor, rel=1e-9)
    assert min(result.candidates) >= floor
    assert any("floor" in note for note in result.notes)
    assert accountant.epsilon(scheme, IDENTITY, result.sigma, 1e-3).epsilon <= 1e6


def test_ordinary_questions_are_not_refused() -> None:
    result = PLDAccountant().epsilon(DEMO, IDENTITY, 0.6, 1e-3)
    assert 1.0 < result.epsilon < 3.0


def test_the_grid_and_budget_are_user_choices_on_the_command_line() -> None:
    import argparse

    from minsep.framework.cli import common
    from minsep.framework.cli.compare_command import _add_arguments, setup_from_args

    parser = argparse.ArgumentParser()
    common.add_setup_arguments(parser)
    args = parser.parse_args(["--pld-interval", "2e-4", "--pld-memory-gib", "0.5"])
    accountant = common.build_accountant(args, "pld")
    assert isinstance(accountant, PLDAccountant)
    assert accountant.value_discretization_interval == 2e-4
    assert accountant.max_memory_gib == 0.5
    assert PLDAccountant().value_discretization_interval == DEFAULT_INTERVAL <= 5e-4

    compare = argparse.ArgumentParser()
    _add_arguments(compare)
    setup = setup_from_args(compare.parse_args(["--pld-interval", "2e-4"]))
    assert setup.accountant_options["value_discretization_interval"] == 2e-4


@pytest.mark.slow
def test_the_default_grid_is_within_0_05_percent_at_the_demo_question() -> None:
    # Measured: 0.004 % (DP-SGD, sigma 0.5897) against a 5e-5 grid; 1e-3 gave 0.016 %.
    fine = PLDAccountant(value_discretization_interval=5e-5).epsilon(DEMO, IDENTITY, 0.5897, 1e-3)
    default = PLDAccountant().epsilon(DEMO, IDENTITY, 0.5897, 1e-3)
    assert fine.epsilon <= default.epsilon <= fine.epsilon * 1.0005
