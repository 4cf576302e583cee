"""Exact draws from the escort R_lam of random-phase cyclic Poisson (docs/rdp-escort.md §10.6).

``R_lam = u^lam Q / Z_lam`` with ``u = b^-1 sum_g u_g`` is the mixture over ordered phase tuples
g, with probability ``b^-lam Z(g) / Z_lam``, of the escort of the fixed tuple: the tilted law of
the lam coin sequences, ``prod_j pi_{g_j}(x_j) exp(sum_{j<l} <Cx_j, Cx_l> / sigma^2) / Z(g)``,
followed by ``y ~ N(C sum_j x_j, sigma^2 I)``. Only ``sum_j x_j`` matters and Z(g) is symmetric,
so a multiset is drawn with probability ``#orderings * b^-lam Z(g) / Z_lam``; its coin
sequences come from forward filtering, backward sampling over the bit chain of
:mod:`~minsep.accountants.phase_moments`. Going back over step t, the copies of phase
``t mod b`` (the movers) had their bits replaced by this step's coins, and the step's weight
depends only on the state after it (the coins and the other copies' bits), so the movers' old
bits are drawn from the forward message before step t restricted to the other bits.

The weight ``W`` and its support bound ``s_lam(eps)`` are those of :mod:`.escort` (§6): they use
nothing but ``R_lam ∝ u^lam Q``. The result has the b-min-sep sampler's shape
(:class:`~minsep.accountants.escort.EscortDraw`).
"""

from __future__ import annotations

import math

import numpy as np

from minsep.accountants import phase_moments
from minsep.accountants.escort import EscortDraw
from minsep.accountants.rdp_moments import ColumnProducts
from minsep.framework.phase_mixture import PhaseMixture
from minsep.framework.validation import check_range

__all__ = ["sample_phase_escort_counts"]


def sample_phase_escort_counts(
    mixture: PhaseMixture,
    coefficients: np.ndarray,
    sigma: float,
    order: int,
    n_samples: int,
    rng: np.random.Generator,
    *,
    max_entries: int = phase_moments.DEFAULT_MAX_ENTRIES,
) -> EscortDraw:
    """``n_samples`` exact independent draws of ``sum_j x_j`` under the escort's tuple law.

    Same input checks as :func:`~minsep.accountants.phase_moments.log_moment`
    (ConfigurationError naming the parameter). The drawn multisets are replayed in groups whose
    stored messages, ``(n + 1) * rows * 2^lam`` floats, fit ``max_entries``.
    """
    from scipy.special import logsumexp  # lazy: scipy.special costs ~0.15 s to import

    owner = "sample_phase_escort_counts"
    lam, products = phase_moments.prepare(
        mixture, coefficients, sigma, order, max_entries, owner=owner
    )
    check_range(owner, "n_samples", n_samples, low=1, integer=True)
    b, n = mixture.phases, mixture.n_steps
    tuples = phase_moments.phase_tuples(b, lam)
    log_tuple = phase_moments.forward_pass(mixture, float(sigma), tuples.phases, products)
    log_weight = log_tuple + tuples.log_orderings
    log_total = float(logsumexp(log_weight))
    log_z = log_total - lam * math.log(b)
    law = np.exp(log_weight - log_total)
    picks = rng.choice(law.size, size=n_samples, p=law / law.sum())
    counts = np.zeros((n_samples, n), dtype=np.int8)
    chosen, inverse = np.unique(picks, return_inverse=True)
    per_group = max(1, max_entries // ((n + 1) * 2**lam))
    for start in range(0, chosen.size, per_group):
        group = chosen[start : start + per_group]
        draws = np.flatnonzero((inverse >= start) & (inverse < start + group.size))
        _backward(
            mixture,
            float(sigma),
            tuples.phases[group],
            products,
            inverse[draws] - start,
            draws,
            counts,
            rng,
        )
    return EscortDraw(counts=counts, log_z=log_z, order=lam)


def _backward(
    mixture: PhaseMixture,
    sigma: float,
    tuples: np.ndarray,
    products: ColumnProducts,
    rows: np.ndarray,
    draws: np.ndarray,
    counts: np.ndarray,
    rng: np.random.Generator,
) -> None:
    """Forward filtering over ``tuples``, then backward sampling of the ``draws`` whose tuple
    is ``tuples[rows]``; writes their counts."""
    b, n = mixture.phases, mixture.n_steps
    lam = tuples.shape[1]
    states = 2**lam
    messages = np.empty((n + 1, tuples.shape[0], states))
    phase_moments.forward_pass(mixture, sigma, tuples, products, messages)
    subsets = np.arange(states)
    # the final state: drawn from the last message
    state = _pick(messages[n][rows], rng)
    # movers[h][r]: bit mask of the copies of row r with phase h
    weights = 1 << np.arange(lam)
    movers = [((tuples == h) * weights).sum(axis=1) for h in range(b)]
    popcount = np.array([bin(s).count("1") for s in range(states)])
    for t in range(n - 1, -1, -1):
        mask = movers[t % b][rows]
        counts[draws, t] = popcount[state & mask]
        moving = np.flatnonzero(mask)
        if moving.size == 0:
            continue
        m = mask[moving, None]
        candidates = (state[moving, None] & ~m) | subsets[None, :]
        valid = (subsets[None, :] & ~m) == 0
        alpha = messages[t][rows[moving, None], candidates] * valid
        pick = _pick(alpha, rng)
        state[moving] = candidates[np.arange(moving.size), pick]


def _pick(weights: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One index per row with probability proportional to the row's non-negative weights."""
    cumulative = np.cumsum(weights, axis=1)
    u = rng.random(weights.shape[0]) * cumulative[:, -1]
    return np.asarray((u[:, None] < cumulative).argmax(axis=1), dtype=np.int64)
