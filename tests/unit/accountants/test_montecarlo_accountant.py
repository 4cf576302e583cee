"""The registered Monte Carlo accountant on a toy scheme with a closed-form privacy curve."""

from __future__ import annotations

import math
import warnings

import attrs
import pytest

from minsep.accountants.monte_carlo import CalibrationSweep
from minsep.framework.errors import CalibrationError, ConfigurationError, NotAccountableError
from minsep.framework.interfaces import SamplingScheme, Strategy
from minsep.framework.option_groups import configure
from minsep.framework.registries import accountants
from minsep.framework.results import Result
from tests.contracts.base import AccountantContract
from tests.unit.montecarlo_toys import SubsampledGaussianToy, ToyScheme, ToyStrategy

FAST = {"samples": 40_000, "pilot_samples": 10_000, "seed": 7, "run": {"chunk_size": 10_000}}


@pytest.fixture
def accountant() -> object:
    return accountants.get("monte_carlo").example()


class TestMonteCarloContractOnToys(AccountantContract):
    @pytest.fixture
    def pairs(self) -> list[tuple[SamplingScheme, Strategy]]:
        return [
            (ToyScheme(accountable=False), ToyStrategy()),
            (ToyScheme(rate=0.2), ToyStrategy()),
            (ToyScheme(rate=0.05), ToyStrategy()),
        ]


def test_registered_and_configurable() -> None:
    cls = accountants.get("monte_carlo")
    acc = cls(**FAST)
    assert acc.samples == 40_000 and acc.seed == 7
    with pytest.raises(ConfigurationError, match="sigma_high"):
        cls(sweep=CalibrationSweep(sigma_low=2.0, sigma_high=1.0))
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        acc.samples = 3  # type: ignore[misc]


def test_epsilon_result_carries_estimate_bound_and_provenance() -> None:
    acc = accountants.get("monte_carlo")(**FAST)
    scheme, sigma, delta = ToyScheme(rate=0.3), 0.7, 1e-3
    result = acc.epsilon(scheme, ToyStrategy(), sigma, delta)
    truth = SubsampledGaussianToy(rate=0.3).exact_epsilon(delta, sigma)
    assert result.method == "monte_carlo" and result.accountant == "monte_carlo"
    assert result.certified_epsilon >= truth
    assert abs(result.epsilon - truth) < 5 * (result.std_error or 0) + 2e-3
    assert result.samples == 40_000 and result.pilot_samples == 10_000
    assert result.seed == 7 and result.backend == "numpy"
    assert 0 < result.failure_probability < delta
    assert result.base_delta is not None and result.base_delta < delta
    assert result.seconds > 0
    assert result.scheme["scheme"] == scheme.name
    assert result.strategy["bands"] == 1
    assert "certified" in result.notes[0]
    again = Result.from_json(result.to_json())
    assert again == result
    # same seed, same answer
    assert acc.epsilon(scheme, ToyStrategy(), sigma, delta).certified_epsilon == (
        result.certified_epsilon
    )


def test_fresh_seed_is_reported_and_reproduces() -> None:
    acc = accountants.get("monte_carlo")(**{**FAST, "seed": None})
    first = acc.delta(ToyScheme(), ToyStrategy(), 1.0, 1.0)
    assert isinstance(first.seed, int)
    replay = attrs.evolve(acc, seed=first.seed).delta(ToyScheme(), ToyStrategy(), 1.0, 1.0)
    assert replay.delta == first.delta and replay.certified_delta == first.certified_delta


def test_delta_result_bounds_the_truth() -> None:
    acc = accountants.get("monte_carlo")(**FAST)
    result = acc.delta(ToyScheme(rate=0.3), ToyStrategy(), 0.7, 1.0)
    truth = SubsampledGaussianToy(rate=0.3).exact_delta(1.0, 0.7)
    assert result.certified_delta >= truth
    assert abs(result.delta - truth) < 5 * (result.std_error or 0)


def test_calibrate_returns_a_sigma_that_is_truly_private() -> None:
    acc = accountants.get("monte_carlo")(**FAST)
    eps, delta = 2.0, 1e-3
    result = acc.calibrate(ToyScheme(rate=0.3), ToyStrategy(), eps, delta)
    model = SubsampledGaussianToy(rate=0.3)
    assert model.exact_delta(eps, result.sigma) <= delta
    # within a few sweep steps of the smallest truly private sigma
    assert model.exact_delta(eps, result.sigma / 1.01**6) > result.base_delta
    assert result.candidates == tuple(sorted(result.candidates, reverse=True))
    assert result.sigma in result.candidates
    assert result.certified and result.samples == 40_000
    with pytest.raises(CalibrationError):
        configure(acc, sigma_low=0.01, sigma_high=0.02).calibrate(
            ToyScheme(rate=0.3), ToyStrategy(), eps, delta
        )


def test_unaccountable_pair_names_the_reason() -> None:
    acc = accountants.get("monte_carlo")(**FAST)
    scheme = ToyScheme(accountable=False)
    assert acc.why_not(scheme, ToyStrategy()) == "toy scheme marked not accountable"
    with pytest.raises(NotAccountableError, match="Accountants that can"):
        acc.delta(scheme, ToyStrategy(), 1.0, 1.0)


def test_conjectured_models_warn() -> None:
    acc = accountants.get("monte_carlo")(**FAST)
    with pytest.warns(UserWarning, match="conjecture"):
        acc.delta(ToyScheme(conjecture=True), ToyStrategy(), 1.0, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        acc.delta(ToyScheme(), ToyStrategy(), 1.0, 1.0)


def test_workers_do_not_change_the_answer() -> None:
    acc = accountants.get("monte_carlo")(**{**FAST, "samples": 20_000, "pilot_samples": 5_000})
    one = acc.epsilon(ToyScheme(), ToyStrategy(), 1.0, 1e-2)
    two = configure(acc, workers=2).epsilon(ToyScheme(), ToyStrategy(), 1.0, 1e-2)
    assert (one.epsilon, one.certified_epsilon) == (two.epsilon, two.certified_epsilon)
    assert math.isfinite(one.certified_epsilon)


@pytest.mark.parametrize("precision", [0.2, 0.3, 1.0])
def test_a_loose_precision_coarsens_the_calibration_sweep_over_the_same_range(
    precision: float,
) -> None:
    """``--precision r`` verifies a sweep of ratio ``1 + r / 10`` (fewer sigmas, each an
    evaluation of every draw) spanning at least the default's range below its top."""
    default = CalibrationSweep()
    coarse = default.for_precision(precision)
    assert coarse.sweep_ratio == pytest.approx(1.0 + precision / 10.0)
    assert coarse.sweep_size < default.sweep_size
    assert coarse.sweep_ratio**coarse.sweep_size >= default.sweep_ratio**default.sweep_size
    assert coarse.sweep_guards == default.sweep_guards
    accountant = accountants.get("monte_carlo")(precision=precision)
    assert accountant.calibration_sweep == coarse


@pytest.mark.parametrize("precision", [None, 0.01, 0.05, 0.1])
def test_a_tight_or_absent_precision_keeps_the_calibration_sweep(
    precision: float | None,
) -> None:
    """Up to precision 0.1 the default sweep (ratio 1.01) stays; a finer one the caller set
    stays while ``1 + r / 10`` is not coarser."""
    assert CalibrationSweep().for_precision(precision) == CalibrationSweep()
    fine = CalibrationSweep(sweep_ratio=1.001, sweep_size=30)
    assert fine.for_precision(None if precision is None else 0.01) == fine
    assert CalibrationSweep(sweep_ratio=1.005).for_precision(0.1).sweep_ratio == pytest.approx(1.01)
