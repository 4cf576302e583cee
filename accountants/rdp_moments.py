"""Exact integer-order Renyi moments of b-min-sep BandMF by a forward pass (docs/rdp-escort.md).

For ``P = sum_x pi(x) N(Cx, sigma^2 I)`` and ``Q = N(0, sigma^2 I)`` and an integer order
``lam >= 2`` (docs/rdp-escort.md §1)

    Z_lam = E_Q[(P/Q)^lam] = sum_{x_1..x_lam} prod_j pi(x_j) exp(sum_{j<l} <Cx_j, Cx_l> / sigma^2),

and ``D_lam(P||Q) = ln(Z_lam) / (lam - 1)``. When the pattern follows the b-min-sep chain with
``b >= bands`` (docs/math.md §3), ``<Cx_j, Cx_l>`` is a sum over pairs of participations less
than ``bands`` steps apart, and each chain's last participation is read off its countdown
state, so ``Z_lam`` is the total weight of a Markov chain on the joint state of the ``lam``
independent copies (docs/rdp-escort.md §2-§3). :func:`log_moment` runs that chain forward once.

Storage: an array of shape ``(b + 1,) * lam``. Slot ``(a + t) mod b`` of each axis holds
countdown ``a`` at step t (so a countdown move is a relabelling, not a copy) and slot ``b``
holds "joined at this step" while a step is processed. A step touches only the slices where
some chain is available, so it costs O(lam * (b + 1)^(lam - 1)), not O((b + 1)^lam).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from minsep.framework.errors import ConfigurationError
from minsep.framework.participation import ParticipationChain
from minsep.framework.validation import check_range

__all__ = [
    "DEFAULT_MAX_STATES",
    "MAX_STEP_EXPONENT",
    "RESCALE",
    "ColumnProducts",
    "check_order",
    "check_step_growth",
    "forward_step",
    "initial_state",
    "interaction_exponents",
    "log_moment",
    "memoryless_log_weights",
    "prepare",
    "step_exponent",
    "stored_states",
    "work",
]

#: Default memory budget: entries of the stored state array ``(b + 1)^lam`` (128 MiB).
DEFAULT_MAX_STATES = 2**24
#: Largest per-step growth exponent the float64 forward pass accepts (see step_exponent).
MAX_STEP_EXPONENT = 550.0
#: The stored mass is rescaled to 1 whenever it leaves [1/_RESCALE, _RESCALE].
RESCALE = 1e50


class ColumnProducts:
    """``G(d, t) = <C[:, t - d], C[:, t]>`` for banded Toeplitz C, tail columns included.

    Column s of C holds ``c_i`` in row ``s + i`` for ``i < k`` and ``s + i < n`` (docs/math.md
    §2), so for ``0 <= d < k`` and ``d <= t < n``

        G(d, t) = sum_{i=0}^{min(k - 1 - d, n - 1 - t)} c_i c_{i + d}

    (the last k - 1 columns are cut at row n). Built in O(k^2 + n k) time and O(k^2) memory.
    """

    def __init__(self, coefficients: np.ndarray, n_steps: int) -> None:
        c = np.asarray(coefficients, dtype=np.float64)
        self.bands = int(c.size)
        self.n_steps = int(n_steps)
        k = self.bands
        # prefix[d, m] = sum_{i <= m} c_i c_{i + d} for m <= k - 1 - d (constant beyond).
        self._prefix = np.zeros((k, k))
        for d in range(k):
            cum = np.cumsum(c[: k - d] * c[d:])
            self._prefix[d, : k - d] = cum
            self._prefix[d, k - d :] = cum[-1]
        self.full = self._prefix[:, k - 1].copy()  # untruncated autocorrelation

    def at(self, t: int) -> np.ndarray:
        """``G(d, t)`` for d = 0..k-1 (0 where the earlier column would precede step 0)."""
        k, n = self.bands, self.n_steps
        last = n - 1 - t
        out = self.full.copy() if last >= k - 1 else self._prefix[:, last].copy()
        if t < k - 1:
            out[t + 1 :] = 0.0
        return out

    @property
    def largest(self) -> float:
        """``max_{d,t} |G(d, t)|`` (attained by an untruncated column or pair)."""
        return float(np.max(np.abs(self._prefix))) if self.bands else 0.0


def check_order(owner: str, order: Any) -> int:
    """An integer Renyi order >= 2 (ConfigurationError naming ``order`` otherwise)."""
    check_range(owner, "order", order, low=2, integer=True)
    return int(order)


def stored_states(min_sep: int, order: int) -> int:
    """Entries of the forward pass's array: ``(b + 1)^lam`` (1 when b = 1: closed form)."""
    return 1 if min_sep == 1 else int((min_sep + 1) ** order)


def work(n_steps: int, min_sep: int, order: int) -> int:
    """Element operations of one forward pass, about ``n (3 lam + 2) (b + 1)^(lam - 1)``."""
    if min_sep == 1:
        return n_steps * (order + 1)
    return n_steps * (3 * order + 2) * int((min_sep + 1) ** (order - 1))


def step_exponent(order: int, sigma: float, products: ColumnProducts) -> float:
    """Largest log-growth of the stored mass in one step: ``lam (lam - 1) max|G| / sigma^2``.

    Each of the ``lam`` joins of a step multiplies by at most ``exp((lam - 1) max|G| /
    sigma^2)``; the float64 pass needs this below :data:`MAX_STEP_EXPONENT`.
    """
    return order * (order - 1) * products.largest / (sigma * sigma)


def log_moment(
    chain: ParticipationChain,
    coefficients: np.ndarray,
    sigma: float,
    order: int,
    *,
    max_states: int = DEFAULT_MAX_STATES,
) -> float:
    """``ln Z_lam = (lam - 1) D_lam(P||Q)`` for the chain's pattern law and strategy ``c``.

    Exact up to float64 rounding (docs/rdp-escort.md §3). Raises ConfigurationError for a
    non-integer order or one below 2, ``min_sep < bands``, a state array above ``max_states``
    entries, or a ``sigma`` so small that one step could overflow float64.
    """
    lam, products = prepare("log_moment", chain, coefficients, sigma, order, max_states)
    if chain.min_sep == 1:
        return _log_moment_memoryless(chain, products, float(sigma), lam)
    return _log_moment_transfer(chain, products, float(sigma), lam)


def prepare(
    owner: str,
    chain: ParticipationChain,
    coefficients: np.ndarray,
    sigma: float,
    order: int,
    max_states: int,
) -> tuple[int, ColumnProducts]:
    """Check the inputs of a forward pass; returns the order and the column products.

    Raises ConfigurationError for a non-integer order or one below 2, ``min_sep < bands``, a
    state array above ``max_states`` entries, or (b >= 2) a ``sigma`` so small that one step
    could overflow float64.
    """
    lam = check_order(owner, order)
    check_range(owner, "sigma", sigma, low=0.0, low_open=True)
    check_range(owner, "max_states", max_states, low=1, integer=True)
    c = np.asarray(coefficients, dtype=np.float64)
    b, n = chain.min_sep, chain.n_steps
    if b < c.size:
        raise ConfigurationError(
            f"{owner}.min_sep = {b} is invalid: must be >= bands = {c.size} (two "
            "participations of one unit must not share a band)"
        )
    states = stored_states(b, lam)
    if states > max_states:
        raise ConfigurationError(
            f"{owner}.order = {lam} is invalid: its state array has (min_sep + 1)^order = "
            f"{b + 1}^{lam} = {states} entries, above max_states = {max_states}; use a lower "
            "order or raise max_states"
        )
    products = ColumnProducts(c, n)
    if b > 1:
        check_step_growth(owner, lam, sigma, products)
    return lam, products


def check_step_growth(owner: str, lam: int, sigma: float, products: ColumnProducts) -> None:
    """ConfigurationError naming ``sigma`` when one forward step could grow the stored mass
    beyond ``exp(MAX_STEP_EXPONENT)`` (float64 overflow; :func:`step_exponent`), with the
    smallest sigma that fits."""
    exponent = step_exponent(lam, float(sigma), products)
    if exponent > MAX_STEP_EXPONENT:
        limit = math.sqrt(lam * (lam - 1) * products.largest / MAX_STEP_EXPONENT)
        raise ConfigurationError(
            f"{owner}.sigma = {sigma!r} is invalid for order {lam}: one step could grow "
            f"the mass by exp({exponent:.4g}), above exp({MAX_STEP_EXPONENT:g}) (float64); "
            f"must be >= {limit:.6g}"
        )


def memoryless_log_weights(
    chain: ParticipationChain, products: ColumnProducts, sigma: float, lam: int
) -> np.ndarray:
    """b = 1 (so one band): log-weight of ``m = 0..lam`` copies joining one step.

    Nothing is remembered between steps; ``m ~ Binomial(lam, p)`` copies join and interact
    pairwise with ``G(0, t) = c_0^2``, so the weight is
    ``C(lam, m) p^m (1 - p)^(lam - m) exp(m (m - 1) c_0^2 / (2 sigma^2))`` at every step.
    """
    from scipy.special import gammaln  # lazy: scipy.special costs ~0.15 s to import

    p = chain.probability
    m = np.arange(lam + 1, dtype=np.float64)
    log_binom = gammaln(lam + 1) - gammaln(m + 1) - gammaln(lam - m + 1)
    if p >= 1.0:
        log_weights = np.where(m == lam, 0.0, -np.inf)
    else:
        log_weights = log_binom + m * math.log(p) + (lam - m) * math.log1p(-p)
    g = float(products.at(chain.n_steps - 1)[0])  # k = 1: every column is c_0 e_t
    return np.asarray(log_weights + m * (m - 1) / 2.0 * g / sigma**2, dtype=np.float64)


def _log_moment_memoryless(
    chain: ParticipationChain, products: ColumnProducts, sigma: float, lam: int
) -> float:
    """``ln Z = n ln sum_m weight(m)`` (Mironov, Talwar & Zhang 2019, integer orders)."""
    from scipy.special import logsumexp  # lazy: scipy.special costs ~0.15 s to import

    return float(chain.n_steps * logsumexp(memoryless_log_weights(chain, products, sigma, lam)))


def _axis(axis: int, slot: int) -> tuple[slice | int, ...]:
    return (slice(None),) * axis + (slot,)


def initial_state(chain: ParticipationChain, lam: int) -> np.ndarray:
    """The ``(b + 1)^lam`` array of the initial joint law (slot b empty)."""
    start = np.zeros(chain.min_sep + 1)
    start[: chain.min_sep] = chain.initial_law()
    state = start
    for _ in range(lam - 1):
        state = np.multiply.outer(state, start)
    return state


def interaction_exponents(
    t: int, min_sep: int, products: ColumnProducts, sigma: float
) -> np.ndarray:
    """Per-slot exponent ``w`` at step t with a copy joining now (docs/rdp-escort.md §3).

    A copy whose last participation was ``1 <= d < k`` steps ago (``d <= t``) sits in slot
    ``(t - d) mod b`` and contributes ``G(d, t) / sigma^2``; slot b (joined at this very step)
    contributes ``G(0, t) / sigma^2``; every other slot 0.
    """
    b, k = min_sep, products.bands
    g = products.at(t)
    w = np.zeros(b + 1)
    d = np.arange(1, min(k - 1, t) + 1)
    w[(t - d) % b] = g[d] / (sigma * sigma)
    w[b] = g[0] / (sigma * sigma)
    return w


def forward_step(
    state: np.ndarray, t: int, chain: ParticipationChain, products: ColumnProducts, sigma: float
) -> float:
    """Advance ``state`` (in place) over step t; returns the change of its total mass."""
    b, p, lam = chain.min_sep, chain.probability, state.ndim
    free, after = t % b, (t + 1) % b
    grow = np.exp(interaction_exponents(t, b, products, sigma))
    outer = grow
    for _ in range(lam - 2):
        outer = np.multiply.outer(outer, grow)
    joined_weight = p * outer
    change = 0.0
    for j in range(lam):
        available = state[_axis(j, free)]
        before = float(available.sum())
        joined = available * joined_weight
        state[_axis(j, b)] = joined
        available *= 1.0 - p
        change += float(joined.sum()) - p * before
    for j in range(lam):
        declined = state[_axis(j, free)].copy()
        state[_axis(j, free)] = state[_axis(j, b)]
        state[_axis(j, after)] += declined
        state[_axis(j, b)] = 0.0
    return change


def _log_moment_transfer(
    chain: ParticipationChain, products: ColumnProducts, sigma: float, lam: int
) -> float:
    """The forward pass over the joint countdown state of ``lam`` copies (any b)."""
    state = initial_state(chain, lam)
    log_scale = 0.0
    mass = float(state.sum())
    for t in range(chain.n_steps):
        mass += forward_step(state, t, chain, products, sigma)
        if not (1.0 / RESCALE <= mass <= RESCALE):
            total = float(state.sum())
            state /= total
            log_scale += math.log(total)
            mass = 1.0
    return log_scale + math.log(float(state.sum()))
