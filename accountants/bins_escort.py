"""Exact draws from the escort R_lam of balls-in-bins BandMF, and its escort law
(docs/rdp-escort.md §10.8).

``R_lam = u^lam Q / Z_lam`` is the mixture over ordered lam-tuples of bins, with probability
``T^-lam exp(sum_{j<l} G[g_j, g_l] / sigma^2) / Z_lam``, of ``N(C sum_j x_{g_j}, sigma^2 I)``
(§1 with deterministic patterns given the bins). Only the occupation ``n_g`` (copies per bin)
enters y, and its law is the one :mod:`.bins_moments` sums: the boundary (the first bins'
occupation, when the ring has a seam) is drawn from its marginal (one pass over every
boundary), then the other bins from last to first by backward sampling through the stored
messages of that boundary's pass: going back over bin g from the state t after it, the bin's
count is t's last entry and the state before it is drawn with probability ``alpha_g(s)
M_g(s -> t)`` over t's predecessors (the oldest window entry is the only free coordinate; the
seam factor depends on t only). Draws are grouped by boundary so that the stored messages fit
the budget. Per-step counts are ``n_{t mod T}``.
"""

from __future__ import annotations

import functools
import math

import attrs
import numpy as np

from minsep.accountants import bins_moments
from minsep.accountants.add_bound import ChernoffAddBound
from minsep.accountants.bins_add_bound import bins_add_bound
from minsep.accountants.block_add_bound import BlockAddBound
from minsep.accountants.escort import EscortDraw
from minsep.framework.errors import ConfigurationError
from minsep.framework.phase_mixture import PhaseMixture
from minsep.framework.validation import check_range

__all__ = ["BINS_MAX_WORK", "BinsEscortLaw", "sample_bins_escort_counts"]

#: Multiply-adds one transfer pass may cost (:func:`~.bins_moments.work`); each sampling call
#: runs about two passes. n = 1024, T = 256: 4 bands afford orders 2-8+, 8 bands orders 2-6.
BINS_MAX_WORK = 2**32


def sample_bins_escort_counts(
    gram: np.ndarray,
    n_steps: int,
    cycle_length: int,
    bands: int,
    sigma: float,
    order: int,
    n_samples: int,
    rng: np.random.Generator,
    *,
    max_entries: int = bins_moments.DEFAULT_MAX_ENTRIES,
) -> EscortDraw:
    """``n_samples`` exact independent draws of the per-step counts ``sum_j x_j`` under the
    escort's tuple law (module docstring), with ``ln Z_lam`` from the same passes.

    Same input checks as :func:`~.bins_moments.log_moment` (ConfigurationError naming the
    parameter). Messages, ``(T - g0 + 1) x states x boundaries`` floats, are kept for groups
    of drawn boundaries that fit ``max_entries``.
    """
    from scipy.special import logsumexp

    owner = "sample_bins_escort_counts"
    bins = bins_moments.prepare(
        gram, n_steps, cycle_length, bands, sigma, order, max_entries, owner
    )
    check_range(owner, "n_samples", n_samples, low=1, integer=True)
    lam, t = bins.order, int(cycle_length)
    boundaries = bins.boundaries()
    log_b = _boundary_log_weights(bins, boundaries, max_entries)
    log_total = float(logsumexp(log_b))
    log_z = log_total + math.lgamma(lam + 1) - lam * math.log(t)
    law = np.exp(log_b - log_total)
    picks = rng.choice(law.size, size=n_samples, p=law / law.sum())
    occupancy = np.zeros((n_samples, t), dtype=np.int64)
    chosen, inverse = np.unique(picks, return_inverse=True)
    per_group = max(1, max_entries // ((t - bins.g0 + 1) * bins.lattice.size))
    for start in range(0, chosen.size, per_group):
        group = chosen[start : start + per_group]
        draws = np.flatnonzero((inverse >= start) & (inverse < start + group.size))
        _backward(bins, boundaries[group], inverse[draws] - start, draws, occupancy, rng)
    counts = occupancy[:, np.arange(int(n_steps)) % t].astype(np.int8)
    return EscortDraw(counts=counts, log_z=log_z, order=lam)


#: Each boundary's log weight per (Gram matrix, n, T, bands, sigma, order) computed in this
#: process: every sampling call of the engine (one per chunk) needs the same marginal.
_BOUNDARY_LAW: dict[tuple[object, ...], np.ndarray] = {}
_BOUNDARY_LAW_SIZE = 64


def _boundary_log_weights(
    bins: bins_moments.BinsPass, boundaries: np.ndarray, max_entries: int
) -> np.ndarray:
    """:meth:`~.bins_moments.BinsPass.run_chunked` over every boundary, memoised (a pass is
    deterministic; the key holds the Gram matrix's bytes, so equal inputs share it)."""
    key = (bins.gram.tobytes(), bins.gram.shape, bins.g0, bins.window, bins.order)
    found = _BOUNDARY_LAW.get(key)
    if found is None:
        if len(_BOUNDARY_LAW) >= _BOUNDARY_LAW_SIZE:
            _BOUNDARY_LAW.clear()
        found = _BOUNDARY_LAW[key] = bins.run_chunked(boundaries, max_entries)
    return found


def _backward(
    bins: bins_moments.BinsPass,
    boundaries: np.ndarray,
    columns: np.ndarray,
    draws: np.ndarray,
    occupancy: np.ndarray,
    rng: np.random.Generator,
) -> None:
    """The pass over ``boundaries`` with messages, then backward sampling of the ``draws``
    whose boundary is ``boundaries[columns]``; writes their occupations."""
    messages: list[np.ndarray] = []
    bins.run(boundaries, messages)
    lat, g0 = bins.lattice, bins.g0
    occupancy[draws, :g0] = boundaries[columns]
    done = lat.placed == bins.order
    state = _pick(messages[-1][:, columns].T * done[None, :], rng)
    rows = np.arange(draws.size)
    for g in range(bins.cycle_length - 1, g0 - 1, -1):
        alpha = messages[g - g0]
        occupancy[draws, g] = lat.occupation[state, -1]
        data = bins.bin_weights(g)
        step = np.zeros(lat.preds.shape)
        step[lat.slot_of] = data
        preds = lat.preds[state]
        valid = preds >= 0
        weights = alpha[np.where(valid, preds, 0), columns[:, None]] * step[state] * valid
        state = preds[rows, _pick(weights, rng)]


def _pick(weights: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One index per row with probability proportional to the row's non-negative weights."""
    cumulative = np.cumsum(weights, axis=1)
    u = rng.random(weights.shape[0]) * cumulative[:, -1]
    return np.asarray((u[:, None] < cumulative).argmax(axis=1), dtype=np.int64)


def _float_array(values: np.ndarray) -> np.ndarray:
    return np.asarray(values, dtype=np.float64)


def _float_tuple(values: tuple[float, ...] | np.ndarray) -> tuple[float, ...]:
    return tuple(float(v) for v in np.asarray(values, dtype=np.float64).ravel())


@functools.lru_cache(maxsize=64)
def _bins_add_bound(
    n_steps: int, cycle_length: int, coefficients: tuple[float, ...], sigma: float
) -> ChernoffAddBound:
    """:func:`~.bins_add_bound.bins_add_bound`, kept per sigma (its Laplace transforms take
    about 0.3 s per distinct column norm, and a run asks at every sweep entry)."""
    return bins_add_bound(n_steps, cycle_length, coefficients, sigma)


@attrs.frozen
class BinsEscortLaw:
    """Balls-in-bins with cycle length T (docs/rdp-escort.md §10.8): the transfer pass of
    :mod:`.bins_moments` (``C(lam + W + 1, W + 1)`` states per boundary, ``C(lam + W, W)``
    boundaries when the ring has a seam, W = bands - 1), passes within :data:`BINS_MAX_WORK`,
    the draws of :func:`sample_bins_escort_counts`; the add direction by the class-wise bound
    of docs/math.md §10.2."""

    n_steps: int
    cycle_length: int
    coefficients: tuple[float, ...] = attrs.field(converter=_float_tuple)
    #: the non-empty bins' Gram matrix (``BallsInBinsLossModel.gram()``)
    gram: np.ndarray = attrs.field(converter=_float_array, eq=False)

    def __attrs_post_init__(self) -> None:
        check_range("BinsEscortLaw", "n_steps", self.n_steps, low=1, integer=True)
        check_range("BinsEscortLaw", "cycle_length", self.cycle_length, low=1, integer=True)
        bands = len(self.coefficients)
        if bands > self.cycle_length:
            raise ConfigurationError(
                f"BinsEscortLaw.bands = {bands} is invalid: the balls-in-bins escort needs "
                f"bands <= T = {self.cycle_length} (with more bands than bins, two steps of "
                "one bin share a band and the transfer pass's window covers the whole ring); "
                "use proposal 'plain'",
                parameter="bands",
            )

    @property
    def budget_note(self) -> str:
        return (
            f"balls-in-bins T = {self.cycle_length}, {len(self.coefficients)} bands "
            f"(C(lam + W + 1, W + 1) states per boundary, C(lam + W, W) boundaries, W = bands "
            f"- 1; at most {BINS_MAX_WORK} operations per pass)"
        )

    def mixture(self) -> PhaseMixture:
        """The same law as random-phase cyclic Poisson with T phases and q = 1."""
        return PhaseMixture(n_steps=self.n_steps, phases=self.cycle_length, probability=1.0)

    def affordable(self, order: int, max_states: int) -> bool:
        n, t, k = self.n_steps, self.cycle_length, len(self.coefficients)
        return (
            bins_moments.stored_entries(n, k, order) <= max_states
            and bins_moments.work(n, t, k, order) <= BINS_MAX_WORK
        )

    def log_moment(self, sigma: float, order: int, max_states: int) -> float:
        return bins_moments.log_moment(
            self.gram,
            self.n_steps,
            self.cycle_length,
            len(self.coefficients),
            sigma,
            order,
            max_entries=max_states,
        )

    def sample(
        self, sigma: float, order: int, n_samples: int, rng: np.random.Generator, max_states: int
    ) -> EscortDraw:
        return sample_bins_escort_counts(
            self.gram,
            self.n_steps,
            self.cycle_length,
            len(self.coefficients),
            sigma,
            order,
            n_samples,
            rng,
            max_entries=max_states,
        )

    def log_no_participation(self) -> float:
        """``ln((T - n) / T)`` when ``T > n`` (empty bins), else ``-inf``."""
        return self.mixture().log_no_participation()

    def add_bound(self, sigma: float) -> ChernoffAddBound:
        """The class-wise bound of docs/math.md §10.2 (:func:`~.bins_add_bound.bins_add_bound`;
        at q = 1 the per-phase bound of §10.4 is the unamplified Gaussian), one per sigma."""
        return _bins_add_bound(self.n_steps, self.cycle_length, self.coefficients, float(sigma))

    def sampled_add_bound(
        self,
        sigma: float,
        delta: float,
        seed: int,
        at_epsilon: float | None = None,
        enough: float | None = None,
    ) -> BlockAddBound | None:
        """None: no sampled block bound for balls-in-bins."""
        return None
