"""Monte Carlo epsilon of the b = 1 model (Poisson, identity strategy) against dp_accounting's
PLD of the Poisson-subsampled Gaussian composed n times (docs/math.md §4)."""

from __future__ import annotations

import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.pld import pld_privacy_accountant

from minsep.framework.backend import numpy_backend
from minsep.framework.interfaces import Direction
from minsep.schemes.losses import BMinSepLossModel

DELTA = 1e-3
SAMPLES = 400_000  # per direction; the estimate's relative spread is ~0.4% here


def delta_hat(losses: list[np.ndarray], epsilon: float) -> float:
    """max over directions of mean((1 - e^{eps - L})_+), computed as -expm1(min(eps - L, 0))."""
    return max(float(np.mean(-np.expm1(np.minimum(epsilon - L, 0.0)))) for L in losses)


def epsilon_hat(losses: list[np.ndarray], delta: float) -> float:
    """The epsilon where the (decreasing) delta_hat crosses ``delta``, by bisection."""
    low, high = 0.0, 50.0
    for _ in range(80):
        mid = 0.5 * (low + high)
        low, high = (mid, high) if delta_hat(losses, mid) > delta else (low, mid)
    return high


def pld_epsilon(n: int, p: float, sigma: float) -> float:
    accountant = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
    event = dp_event.PoissonSampledDpEvent(p, dp_event.GaussianDpEvent(sigma))
    accountant.compose(dp_event.SelfComposedDpEvent(event, n))
    return float(accountant.get_epsilon(DELTA))


@pytest.mark.parametrize(("n", "p", "sigma"), [(20, 0.1, 1.0), (10, 0.3, 1.5)])
def test_monte_carlo_epsilon_matches_the_poisson_pld(n: int, p: float, sigma: float) -> None:
    model = BMinSepLossModel(
        coefficients=(1.0,), n_steps=n, min_sep=1, probability=p, warm_start=False
    )
    backend = numpy_backend()
    losses = []
    for index, direction in enumerate(Direction):
        rng = backend.rng(np.random.SeedSequence([2026, n, index]))
        transcript = model.draw(SAMPLES, direction, rng, backend)
        losses.append(np.asarray(model.privacy_loss(transcript, sigma)))
    exact = pld_epsilon(n, p, sigma)
    assert 1.0 < exact < 3.0
    assert epsilon_hat(losses, DELTA) == pytest.approx(exact, rel=0.02)
