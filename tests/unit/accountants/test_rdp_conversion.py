"""The RDP-to-(ε, δ) conversion (:mod:`minsep.accountants.rdp_conversion`): sound against the
exact hockey-stick divergence of small discrete pairs, and the same numbers as dp_accounting's
``compute_epsilon`` / ``compute_delta`` on random inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant

from minsep.accountants.rdp_conversion import delta_of, epsilon_of


def _pair(rng: np.random.Generator, atoms: int) -> tuple[np.ndarray, np.ndarray]:
    p = rng.dirichlet(np.full(atoms, 0.5))
    q = rng.dirichlet(np.full(atoms, 0.5))
    return p, q


def _renyi(p: np.ndarray, q: np.ndarray, order: float) -> float:
    """D_order(P || Q) of two discrete laws with full support."""
    return math.log(float(np.sum(p**order * q ** (1.0 - order)))) / (order - 1.0)


def _hockey_stick(p: np.ndarray, q: np.ndarray, epsilon: float) -> float:
    """sup_S P(S) - e^eps Q(S), the exact delta of P against Q at epsilon."""
    return float(np.sum(np.maximum(p - math.exp(epsilon) * q, 0.0)))


@pytest.mark.parametrize("seed", range(40))
def test_the_conversion_bounds_the_exact_hockey_stick_divergence(seed: int) -> None:
    rng = np.random.default_rng(seed)
    p, q = _pair(rng, int(rng.integers(2, 7)))
    orders = (2, 3, 5, 8, 16, 32)
    divergences = [_renyi(p, q, order) for order in orders]
    for epsilon in (0.0, 0.1, 0.5, 1.0, 2.0, 4.0):
        bound, _ = delta_of(orders, divergences, epsilon)
        assert _hockey_stick(p, q, epsilon) <= bound * (1 + 1e-12) + 1e-15
    for delta in (1e-6, 1e-3, 0.05, 0.3):
        released, _ = epsilon_of(orders, divergences, delta)
        if math.isfinite(released):
            assert _hockey_stick(p, q, released) <= delta * (1 + 1e-9) + 1e-15


def test_the_total_variation_bound_gives_epsilon_zero() -> None:
    """A pair this close has TV <= sqrt(1 - e^-D) <= delta: epsilon 0 at every order."""
    divergence = 1e-8  # sqrt(1 - e^-D) = 1e-4
    assert epsilon_of((2, 4), (divergence, divergence), 2e-4) == (0.0, 2.0)
    delta, _ = delta_of((2,), (divergence,), 0.0)
    assert delta == pytest.approx(math.sqrt(-math.expm1(-divergence)), rel=1e-12)


def test_the_numbers_are_dp_accountings() -> None:
    rng = np.random.default_rng(7)
    for _ in range(3000):
        orders = sorted({int(v) for v in rng.integers(2, 300, int(rng.integers(1, 12)))})
        divergences = [float(v) for v in np.exp(rng.uniform(-12.0, 4.0, len(orders)))]
        delta = float(10 ** rng.uniform(-12.0, -0.3))
        epsilon = float(rng.uniform(0.0, 20.0))
        ours, order = epsilon_of(orders, divergences, delta)
        theirs, their_order = rdp_privacy_accountant.compute_epsilon(orders, divergences, delta)
        assert ours == pytest.approx(theirs, rel=1e-12, abs=1e-13)
        assert order == their_order
        ours, order = delta_of(orders, divergences, epsilon)
        theirs, their_order = rdp_privacy_accountant.compute_delta(orders, divergences, epsilon)
        assert ours == pytest.approx(theirs, rel=1e-12)
        assert order == their_order


def test_edges() -> None:
    assert epsilon_of((2,), (1.0,), 0.0) == (math.inf, 2.0)
    assert epsilon_of((2, 3), (math.inf, 0.5), 1e-3)[1] == 3.0
    assert delta_of((2,), (math.inf,), 5.0) == (1.0, 2.0)
    assert delta_of((2,), (0.0,), 0.0) == (0.0, 2.0)


@pytest.mark.parametrize(
    ("orders", "divergences", "word"),
    [((1,), (0.1,), "orders must be > 1"), ((2,), (-0.1,), ">= 0"), ((2, 3), (0.1,), "as long"),
     ((), (), "non-empty"), ((2,), (math.nan,), ">= 0")],
)  # fmt: skip
def test_bad_input_is_refused(
    orders: tuple[float, ...], divergences: tuple[float, ...], word: str
) -> None:
    with pytest.raises(ValueError, match=word):
        epsilon_of(orders, divergences, 1e-3)
    with pytest.raises(ValueError, match=word):
        delta_of(orders, divergences, 1.0)
