"""Exact integer-order Renyi moments of random-phase cyclic Poisson (docs/rdp-escort.md §10).

The unit's phase g is uniform on {0..b-1} and it participates at each step ``i = g mod b``
with probability q, so ``u = P/Q = b^-1 sum_g u_g`` with ``u_g`` the fixed-phase product form
and, for an integer order ``lam >= 2``,

    Z_lam = E_Q[u^lam] = b^-lam sum_{(g_1..g_lam)} Z(g_1..g_lam),
    Z(g) = E[exp(sum_{j<l} <Cx_j, Cx_l> / sigma^2)],  x_j independent with phase g_j.

Z(g) is symmetric in the copies, so it is evaluated once per multiset of phases (weighted by
its number of orderings). With bands ``k <= b`` a step of copy j interacts only with the most
recent residue step of each other copy, at the known distance ``(t - g_l) mod b``; the state
of a tuple is one bit per copy ("took its most recent residue step"), and Z(g) is the total
weight of one forward pass over ``2^lam`` states (docs/rdp-escort.md §10). All multisets are
advanced together (numpy, one row per multiset); a step touches only the multisets that own it.
"""

from __future__ import annotations

import math

import numpy as np

from minsep.accountants.rdp_moments import (
    ColumnProducts,
    check_order,
    check_step_growth,
)
from minsep.framework.errors import ConfigurationError
from minsep.framework.phase_mixture import PhaseMixture
from minsep.framework.validation import check_range

__all__ = [
    "DEFAULT_MAX_ENTRIES",
    "PhaseTuples",
    "forward_pass",
    "log_moment",
    "log_tuple_moments",
    "phase_tuples",
    "prepare",
    "stored_entries",
    "tuple_count",
    "work",
]

#: Default memory budget: entries of the stored state array (multisets x 2^lam), 128 MiB.
DEFAULT_MAX_ENTRIES = 2**24


def tuple_count(phases: int, order: int) -> int:
    """Multisets of ``lam`` phases out of b: ``C(b + lam - 1, lam)``."""
    return math.comb(phases + order - 1, order)


def stored_entries(phases: int, order: int) -> int:
    """Entries of the forward pass's state array: multisets x ``2^lam``."""
    return int(tuple_count(phases, order) * 2**order)


def work(n_steps: int, phases: int, order: int) -> int:
    """Element operations of one pass, about ``n lam 2^lam`` times the multisets owning a step
    (each owns at most ``lam`` of the b residues)."""
    active = max(1, -(-tuple_count(phases, order) * min(order, phases) // phases))
    return int(n_steps * order * 2**order * active)


class PhaseTuples:
    """The multisets of ``lam`` phases (sorted rows) and ``ln`` of their numbers of orderings."""

    def __init__(self, phases: int, order: int) -> None:
        from itertools import combinations_with_replacement

        rows = list(combinations_with_replacement(range(phases), order))
        self.phases = np.asarray(rows, dtype=np.int64).reshape(len(rows), order)
        log_orderings = []
        for row in rows:
            _, counts = np.unique(row, return_counts=True)
            log_orderings.append(
                math.lgamma(order + 1) - sum(math.lgamma(int(c) + 1) for c in counts)
            )
        self.log_orderings = np.asarray(log_orderings, dtype=np.float64)


def phase_tuples(phases: int, order: int) -> PhaseTuples:
    """Every multiset of ``order`` phases out of ``phases`` (see :class:`PhaseTuples`)."""
    return PhaseTuples(phases, order)


def prepare(
    mixture: PhaseMixture,
    coefficients: np.ndarray,
    sigma: float,
    order: int,
    max_entries: int,
    owner: str = "phase_moments.log_moment",
) -> tuple[int, ColumnProducts]:
    """Check the inputs of a pass; returns the order and the column products
    (ConfigurationError naming the parameter, as :func:`log_moment` documents)."""
    lam = check_order(owner, order)
    check_range(owner, "sigma", sigma, low=0.0, low_open=True)
    check_range(owner, "max_entries", max_entries, low=1, integer=True)
    c = np.asarray(coefficients, dtype=np.float64)
    b = mixture.phases
    if b < c.size:
        raise ConfigurationError(
            f"{owner}.phases = {b} is invalid: must be >= bands = {c.size} (two steps of one "
            "phase must not share a band)"
        )
    entries = stored_entries(b, lam)
    if entries > max_entries:
        raise ConfigurationError(
            f"{owner}.order = {lam} is invalid: its state array has C(phases + order - 1, "
            f"order) * 2^order = {entries} entries at phases = {b}, above max_entries = "
            f"{max_entries}; use a lower order or raise max_entries"
        )
    products = ColumnProducts(c, mixture.n_steps)
    check_step_growth(owner, lam, sigma, products)
    return lam, products


def log_tuple_moments(
    mixture: PhaseMixture,
    coefficients: np.ndarray,
    sigma: float,
    tuples: np.ndarray,
    products: ColumnProducts,
) -> np.ndarray:
    """``ln Z(g)`` for each row g of ``tuples`` (int ``(T, lam)``, any order of the phases).

    One forward pass per row, all rows at once (docs/rdp-escort.md §10): state bit j says
    whether copy j took its most recent residue step. At step t the copies with phase
    ``t mod b`` forget their old bit (its column is ``b >= k`` steps back), then join one by one
    with weight ``q exp(sum_{l != j} bit_l G(d_l, t) / sigma^2)``, ``d_l = (t - g_l) mod b``
    (``G(d, t) = 0`` for ``d >= k``; copies that joined earlier in the same step have
    ``d_l = 0``), or decline with weight ``1 - q``. Rows are rescaled to mass 1 after each
    step they own, the scale kept in log form.
    """
    return forward_pass(mixture, sigma, tuples, products)


def forward_pass(
    mixture: PhaseMixture,
    sigma: float,
    tuples: np.ndarray,
    products: ColumnProducts,
    messages: np.ndarray | None = None,
) -> np.ndarray:
    """The pass of :func:`log_tuple_moments`; returns ``ln Z(g)`` per row.

    With ``messages`` (float ``(n + 1, T, 2^lam)``), ``messages[t]`` receives the normalised
    forward message before step t (``messages[n]``: after the last step), for backward sampling.
    """
    tuples = np.asarray(tuples, dtype=np.int64)
    rows, lam = tuples.shape
    b, n, q = mixture.phases, mixture.n_steps, mixture.probability
    k = products.bands
    bits = (np.arange(2**lam)[:, None] >> np.arange(lam)[None, :]) & 1  # (2^lam, lam)
    low = [np.flatnonzero(bits[:, j] == 0) for j in range(lam)]
    high = [s | (1 << j) for j, s in enumerate(low)]
    low_bits = [bits[s].astype(np.float64) for s in low]
    state = np.zeros((rows, 2**lam))
    state[:, 0] = 1.0
    log_scale = np.zeros(rows)
    owners = [np.flatnonzero((tuples == h).any(axis=1)) for h in range(b)]
    # per residue h and copy j: positions (within owners[h]) of the rows whose copy j has phase h
    movers = [
        [np.flatnonzero(tuples[rows_h, j] == h) for j in range(lam)]
        for h, rows_h in enumerate(owners)
    ]
    inv_var = 1.0 / (float(sigma) * float(sigma))
    log_q = math.log(q)
    for t in range(n):
        if messages is not None:
            messages[t] = state
        h = t % b
        idx = owners[h]
        if idx.size == 0:
            continue
        g = np.zeros(b)
        g[:k] = products.at(t) * inv_var
        exponents = g[(t - tuples[idx]) % b]  # (T', lam); copies of phase h read G(0, t)
        s = state[idx]
        for j, r in enumerate(movers[h]):  # forget the old bits of the copies of phase h
            if r.size:
                s[np.ix_(r, low[j])] += s[np.ix_(r, high[j])]
                s[np.ix_(r, high[j])] = 0.0
        for j, r in enumerate(movers[h]):  # join (weight q e^{...}) or decline (1 - q)
            if r.size:
                base = s[np.ix_(r, low[j])]
                s[np.ix_(r, high[j])] = base * np.exp(exponents[r] @ low_bits[j].T + log_q)
                s[np.ix_(r, low[j])] = base * (1.0 - q)
        total = s.sum(axis=1)
        s /= total[:, None]
        log_scale[idx] += np.log(total)
        state[idx] = s
    if messages is not None:
        messages[n] = state
    return log_scale


def log_moment(
    mixture: PhaseMixture,
    coefficients: np.ndarray,
    sigma: float,
    order: int,
    *,
    max_entries: int = DEFAULT_MAX_ENTRIES,
) -> float:
    """``ln Z_lam = (lam - 1) D_lam(P||Q)`` for random-phase cyclic Poisson and strategy ``c``.

    Exact up to float64 rounding (docs/rdp-escort.md §10). Raises ConfigurationError for a
    non-integer order or one below 2, ``phases < bands``, a state array above
    ``max_entries`` entries, or a ``sigma`` so small that one step could overflow float64.
    """
    from scipy.special import logsumexp  # lazy: scipy.special costs ~0.15 s to import

    lam, products = prepare(mixture, coefficients, sigma, order, max_entries)
    tuples = phase_tuples(mixture.phases, lam)
    per_tuple = log_tuple_moments(mixture, coefficients, sigma, tuples.phases, products)
    return float(logsumexp(per_tuple + tuples.log_orderings) - lam * math.log(mixture.phases))
