"""The RDP reference route of the paper scripts (paper/rdp.py) and §7.4's sigma ~ 0.627."""

from __future__ import annotations

import math

import pytest
from dp_accounting import dp_event
from dp_accounting.rdp import RdpAccountant

from minsep.accountants.pld import PLDAccountant
from minsep.framework.errors import ConfigurationError
from minsep.paper import production
from minsep.paper.rdp import ORDERS, rdp_calibrate, rdp_epsilon
from minsep.schemes import CyclicPoisson, Poisson
from minsep.strategies import BandedToeplitz, Identity


def test_rdp_epsilon_is_dp_accountings_rdp_of_the_schemes_event() -> None:
    scheme = CyclicPoisson.from_rate(64, 1 / 32, min_sep=4)
    strategy = BandedToeplitz.optimal(64, 4)
    direct = RdpAccountant(list(ORDERS))
    direct.compose(
        dp_event.SelfComposedDpEvent(
            dp_event.PoissonSampledDpEvent(0.125, dp_event.GaussianDpEvent(0.8)), 16
        )
    )
    assert rdp_epsilon(scheme, strategy, 0.8, 1e-5) == pytest.approx(direct.get_epsilon(1e-5))


def test_rdp_is_looser_than_the_exact_pld() -> None:
    scheme = Poisson.from_rate(100, 0.01)
    exact = PLDAccountant().epsilon(scheme, Identity(), 1.0, 1e-5).epsilon
    assert rdp_epsilon(scheme, Identity(), 1.0, 1e-5) > exact


def test_rdp_calibration_is_conservative() -> None:
    scheme = Poisson.from_rate(100, 0.01)
    orders = tuple(range(2, 33))
    sigma = rdp_calibrate(scheme, Identity(), 2.0, 1e-5, rtol=1e-3, orders=orders)
    assert rdp_epsilon(scheme, Identity(), sigma, 1e-5, orders) <= 2.0
    assert rdp_epsilon(scheme, Identity(), sigma / (1 + 2e-3), 1e-5, orders) > 2.0


def test_bad_input_names_the_parameter() -> None:
    scheme = Poisson.from_rate(10, 0.1)
    with pytest.raises(ConfigurationError, match="delta"):
        rdp_epsilon(scheme, Identity(), 1.0, 0.0)
    with pytest.raises(ConfigurationError, match="epsilon"):
        rdp_calibrate(scheme, Identity(), -1.0, 1e-5)


def test_padded_batch_rdp_reproduces_the_papers_0627() -> None:
    """§7.4: RDP with q = b·B_max/|D| = 256/7200 needs sigma in (0.6260, 0.6261], quoted rounded
    up as 0.627; with the expected batch it needs (0.6086, 0.6087] (paper/README.md)."""
    s = production.FULL
    strategy = BandedToeplitz.optimal(s.n_steps, s.bands)
    padded = CyclicPoisson.from_rate(s.n_steps, s.max_batch / s.dataset_size, min_sep=s.bands)
    assert padded.group_rate == pytest.approx(256 / 7200)
    assert rdp_epsilon(padded, strategy, 0.6261, s.delta) <= s.epsilon
    assert rdp_epsilon(padded, strategy, 0.6260, s.delta) > s.epsilon
    assert math.ceil(0.6260 * 1000 + 1e-9) / 1000 == production.PAPER_SIGMA_CYCLIC_TRUNCATED
    expected = CyclicPoisson.from_rate(s.n_steps, s.rate, min_sep=s.bands)
    assert rdp_epsilon(expected, strategy, 0.6087, s.delta) <= s.epsilon
    assert rdp_epsilon(expected, strategy, 0.6086, s.delta) > s.epsilon


@pytest.mark.slow
def test_padded_batch_rdp_calibration() -> None:
    s = production.FULL
    strategy = BandedToeplitz.optimal(s.n_steps, s.bands)
    padded = CyclicPoisson.from_rate(s.n_steps, s.max_batch / s.dataset_size, min_sep=s.bands)
    sigma = rdp_calibrate(padded, strategy, s.epsilon, s.delta)
    assert sigma == pytest.approx(0.62601, abs=5e-5)
    assert math.ceil(sigma * 1000) / 1000 == production.PAPER_SIGMA_CYCLIC_TRUNCATED
