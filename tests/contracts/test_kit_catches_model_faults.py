"""The loss-model contract catches the three faults a plugin author planted in a correct model:
a flipped sign, a sampler ignoring the min-sep constraint, an off-by-one in the recursion.

Each fault runs through the whole contract (fixtures given by hand): the correct toy passes
every check, and each faulty one fails at least the checks named for it, so a failure is the
fault's and not the check's.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from minsep.framework.errors import ConfigurationError
from minsep.framework.interfaces import Direction
from minsep.framework.registries import accountants, schemes, strategies
from minsep.testing import LossModelContract, ZeroOutOracle, enumerate_law, min_sep_law
from tests.contracts.min_sep_toy import FlippedSign, IgnoresMinSep, MinSepToy, OffByOne
from tests.theorems import oracles
from tests.unit.montecarlo_toys import SubsampledGaussianToy


def _failing_checks(model: MinSepToy) -> set[str]:
    """The contract's checks that fail on ``model``, its oracle given as the fixture."""
    contract = LossModelContract()
    fixtures = {"loss_model": model, "zero_out_oracle": model.oracle()}
    failing = set()
    for name, check in inspect.getmembers(contract, inspect.ismethod):
        if not name.startswith("test_"):
            continue
        wanted = inspect.signature(check).parameters
        try:
            check(**{key: fixtures[key] for key in wanted})
        except AssertionError:
            failing.add(name)
    return failing


class TestCorrectMinSepToy(LossModelContract):
    @pytest.fixture
    def loss_model(self) -> MinSepToy:
        return MinSepToy()

    @pytest.fixture
    def zero_out_oracle(self, loss_model: MinSepToy) -> ZeroOutOracle:
        return loss_model.oracle()


def test_the_correct_toy_passes_every_check() -> None:
    assert _failing_checks(MinSepToy()) == set()


@pytest.mark.parametrize(
    ("model", "caught_by"),
    [
        (
            FlippedSign(),
            {
                "test_change_of_measure_under_p",
                "test_change_of_measure_under_q",
                "test_log_ratio_matches_the_zero_out_oracle",
            },
        ),
        (IgnoresMinSep(), {"test_change_of_measure_under_p"}),
        (
            OffByOne(),
            {"test_change_of_measure_under_p", "test_log_ratio_matches_the_zero_out_oracle"},
        ),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, MinSepToy) else "",
)
def test_each_planted_fault_fails_the_contract(model: MinSepToy, caught_by: set[str]) -> None:
    failing = _failing_checks(model)
    assert caught_by <= failing, f"{type(model).__name__}: only {sorted(failing)} failed"


# --- the oracle itself ---------------------------------------------------------------------------


def test_the_oracle_matches_the_one_pattern_at_a_time_theorem_oracle() -> None:
    """Vectorised enumeration = the theorem tests' per-pattern sum (banded C, warm chain)."""
    n, coefficients = 5, (1.0, 0.6, 0.3)
    law = oracles.b_min_sep_law(n, 0.3, 2, warm=True)
    oracle = ZeroOutOracle(matrix=oracles.strategy_matrix(coefficients, n), law=law)
    y = oracle.draw_outputs(16, Direction.REMOVE, 0.8, seed=3)
    expected = [oracles.b_min_sep_log_ratio(coefficients, row, 0.8, 0.3, 2, True) for row in y]
    np.testing.assert_allclose(oracle.log_ratio(y, 0.8), expected, rtol=0, atol=1e-12)


def test_a_mixture_reference_subtracts_its_own_density() -> None:
    """``Q`` a mixture too: ln P/Q = ln P/N(0) - ln Q/N(0)."""
    C = np.eye(2)
    p_law = {(1, 0): 0.5, (0, 1): 0.5}
    q_law = {(0, 0): 0.5, (1, 1): 0.5}
    oracle = ZeroOutOracle(matrix=C, law=p_law, reference=q_law)
    y = np.array([[0.3, -1.2]])
    expected = oracles.log_mixture_ratio(p_law, C, y[0], 1.1) - oracles.log_mixture_ratio(
        q_law, C, y[0], 1.1
    )
    np.testing.assert_allclose(oracle.log_ratio(y, 1.1), [expected], atol=1e-12)


def test_enumerate_law_keeps_positive_patterns_and_refuses_huge_enumerations() -> None:
    law = enumerate_law(3, lambda x: 0.0 if x[0] and x[1] else 1 / 6)
    assert len(law) == 6 and (1, 1, 0) not in law
    assert min_sep_law(4, 0.5, 4, warm=False)[(1, 0, 0, 0)] == 0.5
    with pytest.raises(ConfigurationError, match="exceed"):
        enumerate_law(40, lambda x: 1.0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"matrix": np.eye(2), "law": {(1, 0): 0.7}}, "sum to 1"),
        ({"matrix": np.eye(2), "law": {(1, 0, 0): 1.0}}, "n = 2"),
        ({"matrix": np.ones((2, 3)), "law": {(1, 0): 1.0}}, "square"),
    ],
)
def test_the_oracle_refuses_a_bad_law_or_matrix(kwargs: dict, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        ZeroOutOracle(**kwargs)


@pytest.mark.parametrize("direction", list(Direction))
def test_the_oracle_delta_matches_the_closed_form_of_one_subsampled_step(
    direction: Direction,
) -> None:
    """``delta(eps)`` by quadrature = the closed form of one Poisson-subsampled Gaussian step."""
    oracle = ZeroOutOracle(matrix=np.eye(1), law={(0,): 0.7, (1,): 0.3})
    exact = SubsampledGaussianToy(rate=0.3).exact_delta_direction(1.0, 1.2, direction)
    assert oracle.delta(1.0, 1.2, direction) == pytest.approx(exact, abs=1e-11)


@pytest.mark.slow
def test_the_oracle_delta_of_two_poisson_steps_is_within_the_pld_bound() -> None:
    """n = 2 (about 15 CPU-s): the pessimistic PLD of two composed steps is an upper bound on
    the exact delta, and a tight one at its default discretisation."""
    scheme = schemes.get("poisson")(n_steps=2, rate=0.3)
    pld = accountants.get("pld")().delta(scheme, strategies.get("identity")(), 1.2, 1.0).delta
    oracle = ZeroOutOracle(matrix=np.eye(2), law=min_sep_law(2, 0.3, 1, warm=False))
    exact = oracle.delta(1.0, 1.2, Direction.REMOVE, tolerance=1e-8)
    assert exact <= pld + 1e-8 and pld - exact < 1e-6


def test_the_oracle_delta_refuses_a_large_n() -> None:
    oracle = ZeroOutOracle(matrix=np.eye(3), law=min_sep_law(3, 0.3, 2, warm=False))
    with pytest.raises(ConfigurationError, match="too large for quadrature"):
        oracle.delta(1.0, 1.0, Direction.REMOVE)
