"""RDP accounting of Poisson and cyclic Poisson through dp_accounting (paper §7.4's 0.627).

A scheme's exact route is a dp_accounting event (``scheme.dp_event``: the ``ceil(n/b)``-fold
composition of the Poisson(q)-subsampled Gaussian, docs/math.md §4). Composing the same event in
dp_accounting's :class:`~dp_accounting.rdp.RdpAccountant` instead of its PLD accountant gives the
RDP bound: valid but looser, since converting Rényi divergences to (ε, δ) loses a little. The
production script uses this route to test which accounting assumption the paper's σ ≈ 0.627 for
truncated cyclic Poisson rests on (paper/README.md, §7.4).

This module is a reference route for the paper script, not a registered accountant.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from minsep.accountants.pld import conservative_sigma
from minsep.framework.interfaces import SamplingScheme, Strategy
from minsep.framework.validation import check_range

#: Integer Rényi orders 2..256 plus dp_accounting's default fractional orders below 2 are not
#: used: the fractional-order series of dp_accounting fails to converge at these q and sigma
#: (it then drops the order with a warning), so integer orders give the same answer, quietly.
ORDERS: tuple[int, ...] = tuple(range(2, 257))


def rdp_epsilon(
    scheme: SamplingScheme,
    strategy: Strategy,
    sigma: float,
    delta: float,
    orders: Sequence[float] = ORDERS,
) -> float:
    """ε(δ) of ``scheme.dp_event(strategy, sigma)`` by dp_accounting's RDP accountant."""
    from dp_accounting.rdp import RdpAccountant

    check_range("rdp_epsilon", "delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    accountant = RdpAccountant(list(orders))
    accountant.compose(scheme.dp_event(strategy, sigma))
    absl = logging.getLogger("absl")
    level = absl.level
    absl.setLevel(logging.ERROR)
    try:
        return max(float(accountant.get_epsilon(delta)), 0.0)
    finally:
        absl.setLevel(level)


def rdp_calibrate(
    scheme: SamplingScheme,
    strategy: Strategy,
    epsilon: float,
    delta: float,
    *,
    rtol: float = 1e-5,
    orders: Sequence[float] = ORDERS,
) -> float:
    """The smallest σ (to a factor ``1 + rtol``, conservative) with RDP ε(δ) <= ``epsilon``."""
    check_range("rdp_calibrate", "epsilon", epsilon, low=0.0, low_open=True)

    def epsilon_at(sigma: float) -> float:
        return rdp_epsilon(scheme, strategy, sigma, delta, orders)

    sigma, _, _ = conservative_sigma(epsilon_at, epsilon, rtol=rtol)
    return sigma


__all__ = ["ORDERS", "rdp_calibrate", "rdp_epsilon"]
