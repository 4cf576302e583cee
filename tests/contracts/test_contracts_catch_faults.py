"""The contracts have power: each broken toy fails the check written for its fault, and the
correct toys pass every check (so a failure is the fault's, not the check's)."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
import pytest

from minsep.accountants.gaussian import GaussianAccountant
from minsep.framework.interfaces import Direction, PrivacyLossModel, SamplingScheme, Strategy
from minsep.framework.registries import schemes, strategies
from minsep.framework.results import CalibrationResult
from minsep.testing import (
    AccountantContract,
    LossModelContract,
    assert_loss_model_matches_bruteforce,
    assert_mc_agrees_with_exact,
)
from minsep.testing.registered import loss_model_pairs
from tests.unit.montecarlo_toys import GaussianToy, NaNToy, SubsampledGaussianToy, ToyScheme


def _fails(contract: object, check: str, *args: Any) -> None:
    with pytest.raises((AssertionError, pytest.fail.Exception)):
        getattr(contract, check)(*args)


# --- loss models -------------------------------------------------------------------------------


@attrs.frozen
class SwappedDirections(SubsampledGaussianToy):
    """Evaluates each transcript as if drawn for the other direction."""

    def log_ratio(self, transcript: Any, sigma: float) -> Any:
        other = Direction.ADD if transcript.direction is Direction.REMOVE else Direction.REMOVE
        return super().log_ratio(attrs.evolve(transcript, direction=other), sigma)


@attrs.frozen
class SigmaBlind(GaussianToy):
    """Ignores sigma."""

    def log_ratio(self, transcript: Any, sigma: float) -> Any:
        return super().log_ratio(transcript, 1.0)


@attrs.frozen
class Mutating(GaussianToy):
    """Scales the transcript's normals in place on every evaluation."""

    def log_ratio(self, transcript: Any, sigma: float) -> Any:
        out = super().log_ratio(transcript, sigma)
        normals = transcript.z
        normals *= 1.5
        return out


@attrs.frozen
class Unseeded(GaussianToy):
    """Draws from a generator of its own instead of the given one."""

    def draw(self, n_samples: int, direction: Direction, rng: Any, backend: Any) -> Any:
        return super().draw(n_samples, direction, np.random.default_rng(), backend)


@attrs.frozen
class ShortDraw(GaussianToy):
    """Draws one sample too few."""

    def draw(self, n_samples: int, direction: Direction, rng: Any, backend: Any) -> Any:
        return super().draw(n_samples - 1, direction, rng, backend)


class TestCorrectToyLossModel(LossModelContract):
    @pytest.fixture(params=[GaussianToy(), SubsampledGaussianToy(rate=0.3)], ids=repr)
    def loss_model(self, request: pytest.FixtureRequest) -> PrivacyLossModel:
        return request.param  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("model", "check"),
    [
        (SwappedDirections(rate=0.3), "test_privacy_loss_is_positive_on_average_at_low_noise"),
        (SigmaBlind(), "test_log_ratio_vanishes_as_the_noise_grows"),
        (Mutating(), "test_a_transcript_is_reused_across_sigma"),
        (Unseeded(), "test_draws_are_reproducible_for_a_fixed_seed"),
        (ShortDraw(), "test_transcripts_have_the_requested_size_and_direction"),
        (NaNToy(), "test_log_ratio_is_finite_per_sample_for_several_sigmas"),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, PrivacyLossModel) else "",
)
def test_a_broken_loss_model_fails_its_check(model: PrivacyLossModel, check: str) -> None:
    _fails(LossModelContract(), check, model)


# --- accountants -------------------------------------------------------------------------------


@attrs.frozen
class Overeager(GaussianAccountant):
    """Calibrates to half the sigma the target needs."""

    def calibrate(
        self, scheme: SamplingScheme, strategy: Strategy, epsilon: float, delta: float
    ) -> CalibrationResult:
        result = super().calibrate(scheme, strategy, epsilon, delta)
        return attrs.evolve(result, sigma=result.sigma / 2)


@attrs.frozen
class Wasteful(GaussianAccountant):
    """Calibrates to three times the sigma the target needs."""

    def calibrate(
        self, scheme: SamplingScheme, strategy: Strategy, epsilon: float, delta: float
    ) -> CalibrationResult:
        result = super().calibrate(scheme, strategy, epsilon, delta)
        return attrs.evolve(result, sigma=3 * result.sigma)


@attrs.frozen
class RefusesEverything(GaussianAccountant):
    """Supports no pair at all."""

    def why_not(self, scheme: SamplingScheme, strategy: Strategy) -> str | None:
        return "refuses everything"


@attrs.frozen
class SilentlyUnsupported(GaussianAccountant):
    """Says it cannot account a pair, then answers anyway."""

    def why_not(self, scheme: SamplingScheme, strategy: Strategy) -> str | None:
        return "cannot"

    def epsilon(
        self, scheme: SamplingScheme, strategy: Strategy, sigma: float, delta: float
    ) -> Any:
        return GaussianAccountant().epsilon(scheme, strategy, sigma, delta)


@pytest.fixture
def pairs() -> list[tuple[SamplingScheme, Strategy]]:
    return [(schemes.get("b_min_sep").example(), strategies.get("identity").example())]


class TestCorrectToyAccountant(AccountantContract):
    @pytest.fixture
    def accountant(self) -> GaussianAccountant:
        return GaussianAccountant()


@pytest.mark.parametrize(
    ("accountant", "check"),
    [
        (Overeager(), "test_calibrate_meets_the_target"),
        (Wasteful(), "test_calibrate_meets_the_target"),
        (RefusesEverything(), "test_epsilon_delta_consistent"),
        (RefusesEverything(), "test_calibrate_meets_the_target"),
        (SilentlyUnsupported(), "test_support_is_consistent"),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, GaussianAccountant) else "",
)
def test_a_broken_accountant_fails_its_check(
    accountant: GaussianAccountant, check: str, pairs: list[tuple[SamplingScheme, Strategy]]
) -> None:
    _fails(AccountantContract(), check, accountant, pairs)


# --- registration ------------------------------------------------------------------------------


def test_a_newly_registered_scheme_is_enumerated_for_the_contracts() -> None:
    """The registered-contract parameters come from the registry: a new scheme with a loss
    model joins the loss-model contract and the E[exp(-L)] = 1 check with no test edit."""
    name = "contract_probe_scheme"
    schemes.register(name)(ToyScheme)
    try:
        keys = set(loss_model_pairs())
        assert {f"{name}-{strategy}" for strategy in strategies.names()} <= keys
    finally:
        schemes.unregister(name)
    assert not any(key.startswith(name) for key in loss_model_pairs())


# --- assertion helpers -------------------------------------------------------------------------


def test_mc_agreement_allows_k_standard_errors_and_no_more() -> None:
    assert_mc_agrees_with_exact(1.04, 1.0, 0.01, k=5)
    with pytest.raises(AssertionError, match=r"6\.0 standard errors"):
        assert_mc_agrees_with_exact(1.06, 1.0, 0.01, k=5)
    with pytest.raises(AssertionError, match="standard error"):
        assert_mc_agrees_with_exact(1.0, 1.0, float("nan"))


def test_bruteforce_agreement_catches_a_small_error() -> None:
    outputs = np.arange(6.0).reshape(2, 3)

    def oracle(row: np.ndarray, sigma: float) -> float:
        return float(row.sum() / sigma)

    def exact(y: np.ndarray, sigma: float) -> np.ndarray:
        return y.sum(axis=1) / sigma

    assert_loss_model_matches_bruteforce(exact, oracle, outputs, (0.5, 2.0))
    with pytest.raises(AssertionError, match=r"sigma = 2\.0"):
        assert_loss_model_matches_bruteforce(
            lambda y, sigma: exact(y, sigma) + (sigma > 1) * 1e-6, oracle, outputs, (0.5, 2.0)
        )
