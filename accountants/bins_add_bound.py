"""A deterministic add-direction bound for balls-in-bins (docs/math.md §10.2).

Each example draws one bin g uniform in [T] and participates at steps g, g + T, ... < n, so
``U = T^-1 sum_g u_g`` with ``u_g = exp((<C x_g, y> - ||C x_g||^2 / 2) / sigma^2)``; under Q,
``ln u_g ~ N(-v_g / 2, v_g)``, ``v_g = ||C x_g||^2 / sigma^2`` (``u_g = 1`` for an empty bin).
Bins are split into classes whose steps are pairwise at least k apart (:func:`bin_classes`), so
the u_g of one class touch disjoint rows and are independent under Q. With
``U_r = |S_r|^-1 sum_{g in S_r} u_g`` and ``w_r = |S_r| / T``, ``U = sum_r w_r U_r >= prod_r
U_r^{w_r}`` (weighted AM-GM) and Hoelder with exponents ``1 / w_r`` give

    E_Q[U^-kappa] <= prod_r E_Q[U_r^-kappa]^{w_r}   (<= sum_r w_r E_Q[U_r^-kappa]),

and each class moment is a lognormal Laplace-transform integral bounded from above by
:mod:`~minsep.accountants.laplace_bounds`. The Chernoff step of docs/math.md §10 then bounds
``delta_add(eps)`` (:class:`~minsep.accountants.add_bound.ChernoffAddBound`).
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Sequence

import attrs
import numpy as np

from minsep.accountants.add_bound import ChernoffAddBound
from minsep.accountants.laplace_bounds import (
    log_laplace_upper,
    log_mean_moment_upper,
    log_tail_upper,
)
from minsep.framework.errors import ConfigurationError
from minsep.framework.validation import check_range, number, positive_int, steps

__all__ = [
    "BinClass",
    "BinsAddBound",
    "bin_classes",
    "bin_norms",
    "bins_add_bound",
]

#: Coarse part of the ln s grid (F is nearly 1 there): from _LOW to _FINE_FROM in _COARSE steps.
_LOW = -100.0
_FINE_FROM = -6.0
_COARSE = 0.25
#: Step of the fine part of the ln s grid (outer relative error about kappa step^2 / 2).
_FINE = 0.02
#: The fine grid ends where every class's tail bound at _KAPPA_TARGET is below e^_TAIL_LOG,
#: searched in _UPPER_STEP steps up to _UPPER_MAX (then kappa is capped instead).
_KAPPA_TARGET = 200.0
_TAIL_LOG = -30.0
_UPPER_STEP = 1.0
_UPPER_MAX = 40.0
#: Smallest kappa searched (the near-zero piece ``t_0^kappa / Gamma(kappa + 1)`` stays tiny).
_KAPPA_LOW = 0.1
#: Relative inflation of ``-ln pi(empty)`` (as :mod:`~minsep.accountants.add_bound`).
_PI_EMPTY_INFLATE = 1e-10


def bin_norms(
    coefficients: Sequence[float] | np.ndarray, n_steps: int, cycle_length: int
) -> np.ndarray:
    """``||C x_g||^2`` for g in [T] (0 for empty bins g >= n), C banded Toeplitz cut at row n.

    A bin's steps are ``T >= k`` apart, so its columns are disjoint and the squared norms of
    its columns (``sum_{j < min(k, n - i)} c_j^2`` for step i) add up.
    """
    c = np.asarray(coefficients, dtype=np.float64)[: min(len(coefficients), n_steps)]
    prefix = np.cumsum(c * c)
    remaining = np.minimum(c.size, n_steps - np.arange(n_steps))
    per_step = prefix[remaining - 1]
    norms = np.zeros(cycle_length)
    np.add.at(norms, np.arange(n_steps) % cycle_length, per_step)
    return norms


def bin_classes(n_steps: int, cycle_length: int, bands: int) -> tuple[tuple[int, ...], ...]:
    """A partition of the T bins into classes whose steps are pairwise ``>= bands`` apart.

    n > T (bins wrap around): p = floor(T / k) members per class in c = ceil(T / p) classes;
    the circle is cut into p arcs, e = p c - T of length c - 1 (first) and the rest of length
    c (>= k + 1 unless k | T, when e = 0 and c = k); each arc holds one bin of each class in
    class order, the i-th short arc skipping class floor(i c / e). Skipped classes never
    decrease along the run of short arcs, so a class's offset drops by at most 1 from one arc
    to the next: consecutive members are >= c - 1 >= k apart, and class sizes are balanced.
    n <= T (one step per bin): classes g mod k over the n participating bins, the empty bins
    g >= n dealt round-robin into them. Checked exactly.
    """
    n, t, k = n_steps, cycle_length, bands
    if n > t:
        members = t // k
        count = -(-t // members)
        short = members * count - t  # arcs of length count - 1
        classes: list[list[int]] = [[] for _ in range(count)]
        start = 0
        for arc in range(members):
            layout = list(range(count))
            if arc < short:
                layout.remove(arc * count // short)
            for offset, j in enumerate(layout):
                classes[j].append(start + offset)
            start += len(layout)
    else:
        count = min(k, n)
        classes = [list(range(r, n, k)) for r in range(count)]
        for j, g in enumerate(range(n, t)):
            classes[j % count].append(g)
    result = tuple(tuple(sorted(c)) for c in classes if c)
    _check_classes(result, n, t, k)
    return result


def _check_classes(classes: tuple[tuple[int, ...], ...], n: int, t: int, k: int) -> None:
    """Raise unless the classes partition [T] and each class's steps are pairwise >= k apart."""
    if sorted(g for c in classes for g in c) != list(range(t)):
        raise AssertionError("bin classes do not partition the bins")
    for c in classes:
        merged = np.sort(np.concatenate([np.arange(g, n, t) for g in c] + [np.zeros(0)]))
        if merged.size > 1 and float(np.min(np.diff(merged))) < k:
            raise AssertionError(f"bin class {c} has steps closer than {k}")


@attrs.frozen
class BinClass:
    """``count`` classes with the same sorted ``variances`` (v_g = ||C x_g||^2 / sigma^2)."""

    variances: tuple[float, ...]
    count: int = attrs.field(validator=positive_int())

    @property
    def size(self) -> int:
        """m = |S_r|."""
        return len(self.variances)


def _grid(upper: float) -> np.ndarray:
    """The ln s grid: coarse from _LOW to _FINE_FROM, fine from there to ``upper``."""
    coarse = np.arange(_LOW, _FINE_FROM, _COARSE)
    fine = np.linspace(_FINE_FROM, upper, max(round((upper - _FINE_FROM) / _FINE), 1) + 1)
    return np.concatenate([coarse, fine])


@functools.lru_cache(maxsize=256)
def _log_phi(v: float, upper: float) -> np.ndarray:
    """Upper bounds on ``ln phi_v`` on :func:`_grid` (cached; read-only)."""
    values = log_laplace_upper(v, _grid(upper))
    values.setflags(write=False)
    return values


def _upper_end(kinds: tuple[BinClass, ...]) -> float:
    """The fine grid's end: the first ln s whose tail bounds at _KAPPA_TARGET are small."""
    upper = _FINE_FROM + _UPPER_STEP
    while upper < _UPPER_MAX:
        if all(_tail(kind, _KAPPA_TARGET, upper) <= _TAIL_LOG for kind in kinds):
            break
        upper += _UPPER_STEP
    return min(upper, _UPPER_MAX)


def _tail(kind: BinClass, kappa: float, upper: float) -> float:
    return log_tail_upper(kappa, upper + math.log(kind.size), kind.size, kind.variances)


@attrs.frozen
class BinsAddBound(ChernoffAddBound):
    """``delta_add(eps) <= min_kappa c_kappa e^{-kappa eps} prod_r E[U_r^-kappa]^{w_r}``
    for balls-in-bins (docs/math.md §10.2).

    Attributes:
        n_steps: n.
        cycle_length: T, the number of bins.
        kinds: the bin classes, grouped by their variances.
        log_no_participation: ``ln pi(empty) = ln((T - n) / T)`` (inflated), the most negative
            float when T <= n.
    """

    n_steps: int = attrs.field(validator=steps())
    cycle_length: int = attrs.field(validator=positive_int())
    kinds: tuple[BinClass, ...]
    log_no_participation: float = attrs.field(validator=number(high=0.0))
    upper: float = attrs.field(init=False)

    @upper.default
    def _upper_default(self) -> float:
        return _upper_end(self.kinds)

    def _kind_log_phi(self, kind: BinClass) -> np.ndarray:
        """Upper bounds on ``ln prod_{g in S} phi_g(s)`` on the grid."""
        total = np.zeros_like(_grid(self.upper))
        for v in kind.variances:
            total = total + _log_phi(v, self.upper)
        return total

    def log_class_moments(self, kappa: float) -> list[float]:
        """Upper bounds on ``ln E_Q[U_r^-kappa]``, one per kind."""
        grid = _grid(self.upper)
        return [
            log_mean_moment_upper(kappa, grid, self._kind_log_phi(kind), kind.size, kind.variances)
            for kind in self.kinds
        ]

    def log_moment(self, kappa: float) -> float:
        """An upper bound on ``ln E_Q[U^-kappa]``: ``sum_r w_r ln E[U_r^-kappa]`` (weighted
        AM-GM and Hoelder; never above ``ln sum_r w_r E[U_r^-kappa]``)."""
        return math.fsum(
            kind.count * kind.size / self.cycle_length * value
            for kind, value in zip(self.kinds, self.log_class_moments(kappa), strict=True)
        )

    def _kappa_low(self) -> float:
        return _KAPPA_LOW

    def _kappa_high(self) -> float:
        """The largest kappa (down from _KAPPA_TARGET) whose tail bounds are small at the
        grid's end (larger kappa stay valid but loose)."""
        kappa = _KAPPA_TARGET
        while kappa > 2.0 * _KAPPA_LOW and any(
            _tail(kind, kappa, self.upper) > _TAIL_LOG for kind in self.kinds
        ):
            kappa *= 0.8
        return kappa


def bins_add_bound(
    n_steps: int, cycle_length: int, coefficients: Sequence[float] | np.ndarray, sigma: float
) -> BinsAddBound:
    """The §10.2 bound for balls-in-bins with T = ``cycle_length`` bins over ``n_steps`` steps
    and the banded Toeplitz C of ``coefficients`` (bands k <= T after the cut at n) at noise
    ``sigma``."""
    owner = "bins_add_bound"
    n = check_range(owner, "n_steps", n_steps, low=1, integer=True)
    t = check_range(owner, "cycle_length", cycle_length, low=1, integer=True)
    s = check_range(owner, "sigma", sigma, low=0.0, low_open=True)
    c = np.asarray(coefficients, dtype=np.float64)
    if c.ndim != 1 or c.size == 0 or not np.all(np.isfinite(c)):
        raise ConfigurationError(
            f"{owner}.coefficients = {coefficients!r} is invalid: must be a non-empty sequence "
            "of finite numbers",
            parameter="coefficients",
        )
    bands = min(c.size, n)
    if bands > t:
        raise ConfigurationError(
            f"{owner}.coefficients has {bands} bands (after the cut at n = {n}), invalid: must "
            f"be at most cycle_length = {t}",
            parameter="coefficients",
        )
    variances = bin_norms(c, n, t) / (s * s)
    groups: dict[tuple[float, ...], int] = {}
    for members in bin_classes(n, t, bands):
        key = tuple(sorted(float(variances[g]) for g in members))
        groups[key] = groups.get(key, 0) + 1
    log_empty = math.log((t - n) / t) * (1.0 + _PI_EMPTY_INFLATE) if t > n else -sys.float_info.max
    return BinsAddBound(
        n_steps=n,
        cycle_length=t,
        kinds=tuple(BinClass(variances=key, count=count) for key, count in groups.items()),
        log_no_participation=log_empty,
    )
