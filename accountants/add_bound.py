"""A deterministic bound on the add direction: delta_add(eps) = E_Q[(1 - e^eps U)_+], U = P/Q.

docs/math.md §10 proves, for a unit whose participation x in {0, 1}^n has conditional probability
``<= p`` at every step given its past participations (b-min-sep: p; Poisson: q) and any
lower-triangular C with entries >= 0,

    E_Q[U^-kappa] <= h(p)^n,   h(p) = E_{t ~ N(0, 1)}[(1 - p + p e^{t/s - 1/(2 s^2)})^-kappa],

with ``s = sigma / ||C||_op`` (post-processing of the one-band pair at that noise), and hence
``delta_add(eps) <= c_kappa e^{-kappa eps} h(p)^n`` with ``c_kappa = kappa^kappa / (kappa +
1)^(kappa + 1)``, for every kappa > 0. :func:`log_h_upper` evaluates h as a rigorous upper bound
(monotone Riemann sums with exact Gaussian cell masses, §10); :class:`AddDirectionBound`
optimises kappa per question. Equality ``E_Q[U^-kappa] = h(q)^n`` holds for Poisson with C = I.
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import attrs
import numpy as np

from minsep.framework.validation import number, probability, steps

if TYPE_CHECKING:
    from minsep.framework.interfaces import SamplingScheme, Strategy
    from minsep.framework.participation import ParticipationChain
    from minsep.framework.phase_mixture import PhaseMixture

__all__ = [
    "AddDirectionBound",
    "ChernoffAddBound",
    "add_direction_bound",
    "banded_operator_norm_upper",
    "chain_add_bound",
    "log_h_upper",
    "operator_norm_upper",
    "phase_add_bound",
]

#: Grid points per unit of t (at s >= 1; the step shrinks with s, since e^{t/s} does).
_POINTS_PER_UNIT = 500
#: Left end of the grid (the tail below is bounded by the integrand's supremum).
_LEFT = -38.0
#: Width of the grid beyond the mean 1/s of the tilted law e^a N(0, 1) = N(1/s, 1).
_RIGHT = 38.0
#: Largest exponent a evaluated on the grid (beyond: the tail bound takes over).
_MAX_EXPONENT = 600.0
#: Most grid points (both pieces); beyond (tiny s) the pointwise bound h <= (1 - p)^-kappa.
_MAX_POINTS = 5_000_000
#: Relative and absolute slack added to the Riemann sum of h - 1: float64 rounding of the
#: cell masses (differences of ndtr, relative error << 1e-9) and of the integrand (absolute
#: error a few ulps times (|g - 1| + kappa |s|), whose mean is <= kappa p (2 + kappa)).
_RELATIVE_SLACK = 1e-6
_ABSOLUTE_SLACK = 1e-13
#: Relative slack on the operator norm computed by power iteration (Collatz-Wielandt).
_NORM_SLACK = 1e-9
#: Power iterations for the operator norm (any iterate gives a valid bound).
_POWER_STEPS = 200
#: Orders kappa searched (any kappa > 0 is valid).
_KAPPA_RANGE = (1e-3, 1e4)
#: Relative inflation of ``-ln pi(empty)``: covers float64 rounding of the chain's log-sum (as
#: the ``rdp`` accountant and the escort's add threshold do), so the floor errs upward.
_PI_EMPTY_INFLATE = 1e-10


def log_c(kappa: float) -> float:
    """``ln c_kappa = kappa ln kappa - (kappa + 1) ln(kappa + 1)``: ``sup_t (1 - t)_+ t^kappa``."""
    return kappa * math.log(kappa) - (kappa + 1.0) * math.log1p(kappa)


def log_h_upper(p: float, s: float, kappa: float) -> float:
    """An upper bound on ``ln h(p)``, ``h(p) = E[(1 - p + p e^a)^-kappa]``, a = t/s - 1/(2 s^2).

    Writes ``h - 1 = E[k(t)]`` with ``k = (1 + u)^-kappa - 1 + kappa u >= 0``, ``u = p (e^a - 1)``
    (E[e^a] = 1), which decreases for t < t* = 1/(2s) and increases after; the upper Riemann
    sum takes each cell's left end below t* and its right end above, with exact cell masses.
    Tails: below the grid ``k <= (1 - p)^-kappa - 1 - kappa p``; above it ``k <= kappa p e^a``,
    whose Gaussian mean beyond T is ``kappa p Phi(1/s - T)`` (docs/math.md §10).
    A grid over ``_MAX_POINTS`` (tiny s) is replaced by the pointwise ``h <= (1 - p)^-kappa``.
    """
    if p <= 0.0:
        return 0.0
    log1mp = math.log1p(-p)
    grid = _h_grid(p, s)
    if grid is None:
        # 1 - p + p e^a >= 1 - p pointwise, so h <= (1 - p)^-kappa (docs/math.md §10)
        return -kappa * log1mp * (1.0 + _RELATIVE_SLACK)
    left_u, left_masses, left_below, right_u, right_masses, right_above = grid

    def k_of(u: np.ndarray) -> np.ndarray:
        k: np.ndarray = np.expm1(-kappa * np.log1p(u)) + kappa * u
        return k

    # Left piece: k decreasing, take the left end; masses Phi(t_{j+1}) - Phi(t_j).
    total = float(np.dot(left_masses, np.maximum(k_of(left_u), 0.0)))
    total += left_below * max(math.expm1(-kappa * log1mp) - kappa * p, 0.0)
    # Right piece: k increasing, take the right end; masses from the upper tail ndtr(-t).
    total += float(np.dot(right_masses, np.maximum(k_of(right_u), 0.0)))
    total += kappa * p * right_above
    total = total * (1.0 + _RELATIVE_SLACK) + _ABSOLUTE_SLACK * kappa * p * (2.0 + kappa)
    return math.log1p(total)


@functools.lru_cache(maxsize=4)
def _h_grid(
    p: float, s: float
) -> tuple[np.ndarray, np.ndarray, float, np.ndarray, np.ndarray, float] | None:
    """The kappa-free part of :func:`log_h_upper` at ``(p, s)`` (None: the grid would exceed
    ``_MAX_POINTS``): ``u = p (e^a - 1)`` at the left piece's left cell ends and the right
    piece's right ends, the cells' exact masses, ``Phi`` below the grid and ``Phi(1/s - T)``
    above it. Kept for the last few ``(p, s)``: a minimisation over kappa asks for the same
    grid about thirty times (the same floats as computing it afresh)."""
    from scipy import special  # lazy: keeps the CLI's startup light

    star = 0.5 / s
    right = min(star + 1.0 / s + _RIGHT, s * _MAX_EXPONENT + star)
    step = min(1.0, s) / _POINTS_PER_UNIT
    if (right - _LEFT) / step > _MAX_POINTS:
        return None
    left_grid = np.linspace(_LEFT, star, max(int((star - _LEFT) / step), 2) + 1)
    right_grid = np.linspace(star, right, max(int((right - star) / step), 2) + 1)

    def u_of(t: np.ndarray) -> np.ndarray:
        return p * np.expm1(t / s - 0.5 / (s * s))

    cdf = special.ndtr(left_grid)
    left_masses = np.maximum(np.diff(cdf), 0.0)
    tail = special.ndtr(-right_grid)
    right_masses = np.maximum(-np.diff(tail), 0.0)
    return (
        u_of(left_grid[:-1]),
        left_masses,
        float(cdf[0]),
        u_of(right_grid[1:]),
        right_masses,
        float(special.ndtr(1.0 / s - right)),
    )


def operator_norm_upper(strategy: Strategy, n_steps: int) -> float:
    """An upper bound on ``||C||_op`` for the n x n matrix C (its entries taken in absolute value).

    Banded strategies use O(n bands) products (:func:`banded_operator_norm_upper`), others the
    dense matrix; both bound ``lambda_max(|C|^T |C|)`` by Collatz-Wielandt (docs/math.md §10).
    """
    if strategy.is_banded:
        return banded_operator_norm_upper(strategy.coefficients, n_steps)
    dense = np.abs(np.asarray(strategy.matrix(n_steps), dtype=np.float64))
    return _collatz_wielandt(lambda u: np.asarray(dense.T @ (dense @ u)), n_steps)


def banded_operator_norm_upper(coefficients: Sequence[float] | np.ndarray, n_steps: int) -> float:
    """An upper bound on ``||C||_op``, C the n x n banded Toeplitz matrix of ``coefficients``."""
    column = np.abs(np.asarray(coefficients, dtype=np.float64))

    def gram(u: np.ndarray) -> np.ndarray:
        cu = np.convolve(column, u)[:n_steps]  # |C| u
        return np.convolve(column[::-1], cu)[column.size - 1 :][:n_steps]  # |C|^T (|C| u)

    return _collatz_wielandt(gram, n_steps)


def _collatz_wielandt(gram: Callable[[np.ndarray], np.ndarray], n_steps: int) -> float:
    """``sqrt(min over power iterates u > 0 of max_i (G u)_i / u_i)`` (inflated): for G >= 0
    entrywise, each such maximum is at least ``lambda_max(G)`` (Collatz-Wielandt)."""
    u = np.ones(n_steps)
    best = math.inf
    for _ in range(_POWER_STEPS):
        g = gram(u)
        if not np.all(u > 0.0):
            break
        best = min(best, float(np.max(g / u)))
        u = g / float(np.max(g))
    return math.sqrt(best * (1.0 + _NORM_SLACK))


class ChernoffAddBound:
    """The Chernoff step of docs/math.md §10 over a bound on ``ln E_Q[U^-kappa]``.

    Subclasses (attrs frozen classes) provide :meth:`log_moment` (an upper bound for every
    kappa in the searched range), ``log_no_participation`` (``ln pi(empty)``, the most negative
    float for 0) and, where needed, the searched range of kappa and whether the Chernoff bound
    applies at all. Then ``delta_add(eps) <= min(c_kappa e^{-kappa eps} E_Q[U^-kappa],
    (1 - e^eps pi(empty))_+)`` and ``epsilon(delta)`` follows likewise.
    """

    __slots__ = ()

    log_no_participation: float

    @property
    def failure(self) -> float:
        """0: the bound is deterministic (the sampled block bound of §10.1 has a beta)."""
        return 0.0

    def log_moment(self, kappa: float) -> float:
        """An upper bound on ``ln E_Q[U^-kappa]``."""
        raise NotImplementedError

    def _chernoff_applies(self) -> bool:
        """Whether :meth:`log_moment` is finite (else only the pi(empty) floor and cap)."""
        return True

    def _kappa_low(self) -> float:
        """Smallest kappa searched."""
        return _KAPPA_RANGE[0]

    def _kappa_high(self) -> float:
        """Largest kappa searched."""
        return _KAPPA_RANGE[1]

    def _minimise(self, objective: Callable[[float], float]) -> tuple[float, float]:
        """``(value, kappa)`` of a bounded search over ln kappa; any kappa is valid."""
        from scipy import optimize  # lazy: keeps the CLI's startup light

        lo, hi = math.log(self._kappa_low()), math.log(self._kappa_high())
        found = optimize.minimize_scalar(
            lambda v: objective(math.exp(v)),
            bounds=(lo, hi),
            method="bounded",
            options={"xatol": 1e-3},
        )
        kappa = math.exp(float(found.x))
        return float(objective(kappa)), kappa

    def log_delta(self, epsilon: float) -> tuple[float, float]:
        """``(ln delta bound, kappa)`` of the Chernoff bound at ``epsilon`` (not capped)."""
        return self._minimise(lambda kappa: log_c(kappa) - kappa * epsilon + self.log_moment(kappa))

    def delta(self, epsilon: float) -> float:
        """An upper bound on ``delta_add(epsilon)`` (also ``<= (1 - e^eps pi(empty))_+``)."""
        floor = max(0.0, -math.expm1(epsilon + self.log_no_participation))
        if self.log_no_participation <= -sys.float_info.max:  # pi(empty) = 0: no zero floor
            floor = 1.0
        if floor == 0.0 or not self._chernoff_applies():  # no Chernoff bound: the floor
            return floor
        return min(math.exp(min(self.log_delta(epsilon)[0], 0.0)), floor)

    def epsilon(self, delta: float) -> float:
        """An upper bound on the add direction's epsilon(delta): ``min_kappa (ln c_kappa +
        ln E_Q[U^-kappa] - ln delta) / kappa``, and at most ``ln((1 - delta) / pi(empty))``."""
        cap = max(0.0, math.log1p(-delta) - self.log_no_participation)
        if self.log_no_participation <= -sys.float_info.max:  # pi(empty) = 0: no finite cap
            cap = math.inf
        if not self._chernoff_applies():  # no Chernoff bound, only the cap
            return cap
        log_delta = math.log(delta)
        chernoff, _ = self._minimise(
            lambda kappa: (log_c(kappa) + self.log_moment(kappa) - log_delta) / kappa
        )
        return max(min(chernoff, cap), 0.0)


@attrs.frozen
class AddDirectionBound(ChernoffAddBound):
    """``delta_add(eps) <= min_kappa c_kappa e^{-kappa eps} h_s(p)^n`` (docs/math.md §10).

    Attributes:
        n_steps: n.
        probability: p, the largest conditional participation probability given the past.
        noise: s = sigma / ||C||_op, the one-band noise the pair post-processes.
        log_no_participation: ``ln pi(empty)``: ``delta_add(eps) = 0`` for eps >= its negative.
    """

    n_steps: int = attrs.field(validator=steps())
    probability: float = attrs.field(validator=probability())
    noise: float = attrs.field(validator=number(low=0.0, low_open=True))
    log_no_participation: float = attrs.field(validator=number(high=0.0))

    def log_moment(self, kappa: float) -> float:
        """An upper bound on ``ln E_Q[U^-kappa]``: ``n ln h(p)``."""
        return self.n_steps * log_h_upper(self.probability, self.noise, kappa)

    def _chernoff_applies(self) -> bool:
        """p = 1: no Chernoff bound (h is infinite)."""
        return self.probability < 1.0

    def _kappa_high(self) -> float:
        """Largest kappa searched: keeps ``(1 - p)^-kappa`` finite."""
        worst = -math.log1p(-self.probability) if self.probability < 1.0 else 1.0
        return max(min(_KAPPA_RANGE[1], 500.0 / worst), 2.0 * _KAPPA_RANGE[0])


def add_direction_bound(
    scheme: SamplingScheme, strategy: Strategy, sigma: float
) -> AddDirectionBound | None:
    """The bound for ``scheme``'s participation chain (b-min-sep, Poisson) under ``strategy``,
    or None when the scheme declares no chain (its pattern law is not covered by §10) or its
    unit contributes more than 1 per step."""
    chain = scheme.participation_chain()
    if chain is None or float(scheme.max_step_contribution) != 1.0:
        return None
    return chain_add_bound(chain, operator_norm_upper(strategy, chain.n_steps), sigma)


def chain_add_bound(chain: ParticipationChain, norm: float, sigma: float) -> AddDirectionBound:
    """The bound for a b-min-sep ``chain`` (cold or warm; Poisson as b = 1: every conditional
    participation probability is at most p) under a C with ``||C||_op <= norm``."""
    return AddDirectionBound(
        n_steps=chain.n_steps,
        probability=chain.probability,
        noise=sigma / norm,
        # ln pi(empty) inflated (rounding, :data:`_PI_EMPTY_INFLATE`); pi(empty) = 0 (every unit
        # participates): the most negative finite value, read back as 0 (floor 1, no cap)
        log_no_participation=max(
            min(chain.log_no_participation(), 0.0) * (1.0 + _PI_EMPTY_INFLATE),
            -sys.float_info.max,
        ),
    )


def phase_add_bound(
    mixture: PhaseMixture, coefficients: np.ndarray, sigma: float
) -> AddDirectionBound:
    """The bound for random-phase cyclic Poisson (docs/rdp-escort.md §10, bands <= b).

    ``u^-kappa`` is convex, so ``E_Q[U^-kappa] <= max_g E_Q[u_g^-kappa]`` over the phases; for a
    fixed phase the columns of its steps have disjoint supports, so ``u_g`` is a product of
    ``m_g <= ceil(n / b)`` independent one-block factors, each with noise ``sigma / ||c_i|| >=
    sigma / ||c||``, and ``h`` does not grow with the noise (data processing):
    ``E_Q[U^-kappa] <= h_s(q)^ceil(n / b)`` with ``s = sigma / ||c||``.
    """
    norm = float(np.linalg.norm(np.asarray(coefficients, dtype=np.float64)))
    return AddDirectionBound(
        n_steps=int(mixture.phase_steps().max()),
        probability=mixture.probability,
        noise=sigma / norm,
        log_no_participation=max(
            min(mixture.log_no_participation(), 0.0) * (1.0 + _PI_EMPTY_INFLATE),
            -sys.float_info.max,
        ),
    )
