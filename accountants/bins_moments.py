"""Exact integer-order Renyi moments of balls-in-bins BandMF (docs/rdp-escort.md §10.8).

Each example keeps one uniform bin g of T for the whole run and participates at the steps
``g, g + T, ... < n`` (random-phase cyclic Poisson with q = 1). With ``G`` the bins' Gram
matrix (:func:`~minsep.schemes.balls_in_bins.loss.bin_gram`, rows of empty bins zero) and
``n_g`` the number of the lam copies in bin g,

    Z_lam = T^-lam sum_{occupations} lam! / prod_g n_g!
            * exp(sum_g C(n_g, 2) G[g, g] / sigma^2 + sum_{g < g'} n_g n_g' G[g, g'] / sigma^2).

With k <= T bands, ``G[g, g'] = 0`` unless two of their steps are fewer than k apart: within
``w = k - 1`` bins (linear), and across the ring's seam (bins near T - 1 against bins near 0)
when ``n > T``. So Z is a transfer pass over the bins whose state is the occupation of the last
``W = max(w, 1)`` bins and the number placed so far; the seam is handled by conditioning on the
occupation of the first w bins (the *boundary*), all boundaries advanced together as columns.
"""

from __future__ import annotations

import math

import numpy as np

from minsep.accountants.rdp_moments import MAX_STEP_EXPONENT, check_order
from minsep.framework.errors import ConfigurationError, MinsepError
from minsep.framework.validation import check_range

__all__ = [
    "DEFAULT_MAX_ENTRIES",
    "BinsPass",
    "OccupationLattice",
    "boundary_count",
    "lattice_states",
    "log_moment",
    "stored_entries",
    "transitions",
    "work",
]

#: Default memory budget: entries of the state array (lattice states x boundaries), 128 MiB.
DEFAULT_MAX_ENTRIES = 2**24


def _window(n_steps: int, bands: int) -> int:
    """W = max(k_eff - 1, 1), k_eff = min(k, n) (coefficients past the horizon touch nothing)."""
    return max(min(bands, n_steps) - 1, 1)


def _ring(n_steps: int, cycle_length: int, bands: int) -> bool:
    """Whether the last bins interact with the first ones (steps T - 1 and T both exist)."""
    return n_steps > cycle_length and min(bands, n_steps) > 1


def lattice_states(order: int, window: int) -> int:
    """States ``(v, m)``: v in N^W, ``|v| <= m <= lam``: ``C(lam + W + 1, W + 1)``."""
    return math.comb(order + window + 1, window + 1)


def transitions(order: int, window: int) -> int:
    """Nonzero transition weights of one bin: pairs (state, ``c <= lam - m``)."""
    return math.comb(order + window + 2, window + 2)


def boundary_count(order: int, window: int, ring: bool) -> int:
    """Boundaries (occupations of the first W bins, total <= lam); 1 without a seam."""
    return math.comb(order + window, window) if ring else 1


def stored_entries(n_steps: int, bands: int, order: int) -> int:
    """Entries of the state array of one boundary (the boundaries are independent columns,
    advanced in chunks that fit the budget): the lattice states."""
    return lattice_states(order, _window(n_steps, bands))


def work(n_steps: int, cycle_length: int, bands: int, order: int) -> int:
    """Multiply-adds of one pass: ``T x boundaries x transitions``."""
    w = _window(n_steps, bands)
    ring = _ring(n_steps, cycle_length, bands)
    return cycle_length * boundary_count(order, w, ring) * transitions(order, w)


def _vectors(length: int, total: int) -> np.ndarray:
    """Every non-negative int vector of ``length`` entries with sum <= ``total`` (rows)."""
    rows = np.zeros((1, 0), dtype=np.int64)
    for _ in range(length):
        room = total - rows.sum(axis=1)
        head = np.repeat(rows, room + 1, axis=0)
        tail = np.concatenate([np.arange(r + 1) for r in room])
        rows = np.concatenate([head, tail[:, None]], axis=1)
    return rows


class OccupationLattice:
    """The states ``(v, m)`` of the pass and its transitions, sorted by target.

    ``occupation[s]``: the last W bins' occupations (oldest first); ``placed[s]``: m. A bin
    with c copies maps ``(v, m)`` to ``(v[1:] + (c,), m + c)``; ``source``, ``copies`` list the
    transitions grouped by target (``start[t]:start[t + 1]``), ``preds`` the same padded to
    ``lam + 1`` columns with -1.
    """

    def __init__(self, order: int, window: int) -> None:
        self.order, self.window = order, window
        vectors = _vectors(window, order)
        sums = vectors.sum(axis=1)
        self.occupation = np.repeat(vectors, order - sums + 1, axis=0)
        self.placed = np.concatenate([np.arange(s, order + 1) for s in sums])
        self.size = self.placed.size
        keys = self.key(self.occupation, self.placed)
        self._order = np.argsort(keys)
        self._keys = keys[self._order]
        free = order - self.placed
        src = np.repeat(np.arange(self.size), free + 1)
        copies = np.concatenate([np.arange(f + 1) for f in free])
        occ = np.concatenate([self.occupation[src, 1:], copies[:, None]], axis=1)
        tgt = self.index(occ, self.placed[src] + copies)
        by_target = np.argsort(tgt, kind="stable")
        self.source, self.copies = src[by_target], copies[by_target]
        counts = np.bincount(tgt, minlength=self.size)
        self.start = np.concatenate([[0], np.cumsum(counts)])
        slot = np.arange(src.size) - self.start[tgt[by_target]]
        self.preds = np.full((self.size, order + 1), -1, dtype=np.int64)
        self.preds[tgt[by_target], slot] = self.source
        self.slot_of = (tgt[by_target], slot)

    def key(self, occupation: np.ndarray, placed: np.ndarray) -> np.ndarray:
        base = self.order + 1
        digits = np.concatenate([occupation, placed[:, None]], axis=1)
        return np.asarray(digits @ (base ** np.arange(digits.shape[1])), dtype=np.int64)

    def index(self, occupation: np.ndarray, placed: np.ndarray) -> np.ndarray:
        """State indices of ``(occupation, placed)`` rows (all must be states)."""
        pos = np.searchsorted(self._keys, self.key(occupation, placed))
        return np.asarray(self._order[pos], dtype=np.int64)


class BinsPass:
    """The prepared transfer pass at one sigma and order (module docstring).

    Bins ``0 .. g0 - 1`` (``g0 = W`` with a seam, else 0) are the boundary; each later bin g
    adds c copies with weight ``exp(c (v . G[g, g-W:g] + b . G[g, :g0]) / sigma^2 +
    C(c, 2) G[g, g] / sigma^2) / c!`` (v: the window, b: the boundary, the boundary part only
    for boundary bins outside the window). ConfigurationError naming the parameter on bad input.
    """

    def __init__(
        self,
        gram: np.ndarray,
        cycle_length: int,
        ring: bool,
        window: int,
        sigma: float,
        order: int,
        owner: str,
    ) -> None:
        check_range(owner, "sigma", sigma, low=0.0, low_open=True)
        self.order = check_order(owner, order)
        self.cycle_length, self.window, self.owner = cycle_length, window, owner
        t = cycle_length
        scaled = np.zeros((t, t))
        bins = gram.shape[0]
        scaled[:bins, :bins] = np.asarray(gram, dtype=np.float64) / (float(sigma) ** 2)
        self.gram, self.sigma = scaled, float(sigma)
        self.g0 = window if ring else 0
        self._check_locality()
        self.lattice = OccupationLattice(self.order, window)

    def _check_locality(self) -> None:
        """``G[g, g'] = 0`` for every g' < g outside the window and the boundary."""
        w, g0 = self.window, self.g0
        for g in range(g0, self.cycle_length):
            if np.any(self.gram[g, g0 : max(g0, g - w)] != 0.0):
                raise MinsepError(f"bin {g} interacts beyond the window of {w} bins")

    def boundaries(self) -> np.ndarray:
        """Every boundary (rows of the first g0 bins' occupations, total <= lam)."""
        return _vectors(self.g0, self.order)

    def initial(self, boundaries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Start states (one per boundary) and their log weights: the boundary bins' own
        factor ``exp(sum C(b_g, 2) G[g, g] + sum_{g<g'} b_g b_g' G[g, g']) / prod b_g!``."""
        lat, g0, w = self.lattice, self.g0, self.window
        b = boundaries.astype(np.float64)
        inner = self.gram[:g0, :g0]
        log_w = 0.5 * np.einsum("ri,ij,rj->r", b, inner, b) - 0.5 * b @ np.diag(inner)
        log_w -= np.sum(_log_factorial(boundaries), axis=1)
        occ = np.zeros((boundaries.shape[0], w), dtype=np.int64)
        occ[:, w - g0 :] = boundaries
        return lat.index(occ, boundaries.sum(axis=1)), log_w

    def bin_weights(self, g: int, extra: float = 0.0) -> np.ndarray:
        """Transition weights of bin g in target order (``lattice.source`` order).
        ConfigurationError naming sigma when the largest exponent plus ``extra`` (the seam's
        largest) exceeds ``MAX_STEP_EXPONENT`` (float64 overflow)."""
        lat, w = self.lattice, self.window
        cols = np.arange(g - w, g)
        coef = np.where(cols >= 0, self.gram[g, np.maximum(cols, 0)], 0.0)
        window_dot = lat.occupation @ coef
        c = lat.copies
        exponent = c * window_dot[lat.source] + 0.5 * c * (c - 1) * self.gram[g, g]
        exponent -= _log_factorial(c)
        peak = float(exponent.max()) + extra
        if peak > MAX_STEP_EXPONENT:
            raise ConfigurationError(
                f"{self.owner}.sigma = {self.sigma!r} is invalid for order {self.order}: one "
                f"bin could grow the mass by exp({peak:.4g}), above exp({MAX_STEP_EXPONENT:g}) "
                "(float64); use a larger sigma or a lower order",
                parameter="sigma",
            )
        return np.asarray(np.exp(exponent))

    def seam(self, g: int, boundaries: np.ndarray) -> np.ndarray:
        """``b . G[g, :min(g0, g - W)]`` per boundary (seam pairs not inside the window)."""
        stop = max(0, min(self.g0, g - self.window))
        return boundaries[:, :stop].astype(np.float64) @ self.gram[g, :stop]

    def run(self, boundaries: np.ndarray, messages: list[np.ndarray] | None = None) -> np.ndarray:
        """``ln`` of each boundary's total weight with all lam copies placed (no ``lam!``,
        no ``T^-lam``). With ``messages``, appends the normalised state (S, boundaries) before
        each bin ``g0 .. T - 1`` and after the last."""
        from scipy.sparse import csr_matrix  # lazy: scipy.sparse import cost

        lat = self.lattice
        start, log_scale = self.initial(boundaries)
        state = np.zeros((lat.size, boundaries.shape[0]))
        state[start, np.arange(boundaries.shape[0])] = 1.0
        last = lat.occupation[:, -1].astype(np.float64)
        for g in range(self.g0, self.cycle_length):
            if messages is not None:
                messages.append(state)
            seam = self.seam(g, boundaries)
            data = self.bin_weights(g, self.order * float(seam.max(initial=0.0)))
            step = csr_matrix((data, lat.source, lat.start), shape=(lat.size, lat.size))
            state = np.asarray(step @ state)
            if seam.any():
                state *= np.exp(np.outer(last, seam))
            total = state.sum(axis=0)
            state /= total
            log_scale = log_scale + np.log(total)
        if messages is not None:
            messages.append(state)
        done = lat.placed == self.order
        return np.asarray(log_scale + np.log(state[done].sum(axis=0)))

    def run_chunked(self, boundaries: np.ndarray, max_entries: int) -> np.ndarray:
        """:meth:`run` over chunks of boundaries whose state arrays fit ``max_entries``."""
        per_chunk = max(1, max_entries // self.lattice.size)
        parts = [
            self.run(boundaries[i : i + per_chunk])
            for i in range(0, boundaries.shape[0], per_chunk)
        ]
        return np.concatenate(parts)


def _log_factorial(values: np.ndarray) -> np.ndarray:
    from scipy.special import gammaln

    return np.asarray(gammaln(np.asarray(values, dtype=np.float64) + 1.0))


def prepare(
    gram: np.ndarray,
    n_steps: int,
    cycle_length: int,
    bands: int,
    sigma: float,
    order: int,
    max_entries: int,
    owner: str,
) -> BinsPass:
    """Check the inputs and build the pass. ``gram``: the ``min(T, n)`` non-empty bins' Gram
    matrix of ``bands`` bands (``bin_gram`` of :mod:`minsep.schemes.balls_in_bins.loss`).
    ConfigurationError naming the parameter: order < 2, sigma <= 0, bands > T, a gram of the
    wrong shape, one boundary's state array above ``max_entries``."""
    lam = check_order(owner, order)
    check_range(owner, "sigma", sigma, low=0.0, low_open=True)
    check_range(owner, "max_entries", max_entries, low=1, integer=True)
    check_range(owner, "bands", bands, low=1, integer=True)
    k, n, t = int(bands), int(n_steps), int(cycle_length)
    if k > t:
        raise ConfigurationError(
            f"{owner}.bands = {k} is invalid: must be <= T = {t} (the bins' cycle length; "
            "with more bands than bins two steps of one bin share a band and the window of the "
            "transfer pass would cover the whole ring)",
            parameter="bands",
        )
    g = np.asarray(gram, dtype=np.float64)
    if g.shape != (min(n, t), min(n, t)):
        raise ConfigurationError(
            f"{owner}.gram has shape {g.shape}, which is invalid: must be "
            f"({min(n, t)}, {min(n, t)}) (the non-empty bins of n = {n}, T = {t})",
            parameter="gram",
        )
    entries = stored_entries(n, k, lam)
    if entries > max_entries:
        raise ConfigurationError(
            f"{owner}.order = {lam} is invalid: one boundary's state array has {entries} "
            f"entries (C(lam + W + 1, W + 1), W = {_window(n, k)}) above "
            f"max_entries = {max_entries}; use a lower order or raise max_entries",
            parameter="order",
        )
    return BinsPass(g, t, _ring(n, t, k), _window(n, k), float(sigma), lam, owner)


def log_moment(
    gram: np.ndarray,
    n_steps: int,
    cycle_length: int,
    bands: int,
    sigma: float,
    order: int,
    *,
    max_entries: int = DEFAULT_MAX_ENTRIES,
) -> float:
    """``ln Z_lam = (lam - 1) D_lam(P||Q)`` for balls-in-bins (cycle length T) and the bins'
    Gram matrix ``gram`` of a ``bands``-band strategy.

    Exact up to float64 rounding (docs/rdp-escort.md §10.8); ConfigurationError as
    :func:`prepare` documents, or naming sigma where one bin could overflow float64.
    """
    from scipy.special import logsumexp

    owner = "bins_moments.log_moment"
    bins = prepare(gram, n_steps, cycle_length, bands, sigma, order, max_entries, owner)
    per_boundary = bins.run_chunked(bins.boundaries(), max_entries)
    lam = bins.order
    return float(logsumexp(per_boundary) + math.lgamma(lam + 1) - lam * math.log(cycle_length))
