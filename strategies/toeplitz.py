"""Banded lower-triangular Toeplitz matrices given by their first column (docs/math.md §1, §8).

``C`` is n x n with ``C[i, j] = c[i - j]`` for ``0 <= i - j < k`` and 0 elsewhere; ``k`` is the
number of bands. Its inverse is lower-triangular Toeplitz too; the first column ``r`` of
``C^-1`` follows by banded forward substitution

    r_0 = 1 / c_0,    r_m = -(1 / c_0) * sum_{j=1}^{min(m, k-1)} c_j r_{m-j},

which is an IIR filter with denominator ``c`` applied to a unit impulse (``scipy.signal.lfilter``,
O(n k), no n x n matrix). With ``A`` the all-ones lower triangle (prefix sums), ``A C^-1`` is
lower-triangular Toeplitz with first column ``beta = cumsum(r)``, so

    ||A C^-1||_F^2 = sum_{j=0}^{n-1} (n - j) beta_j^2.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from minsep.framework.errors import ConfigurationError
from minsep.framework.validation import MAX_STEPS, check_range


def as_coefficients(
    values: Iterable[float] | np.ndarray,
    *,
    owner: str = "strategy",
    name: str = "coefficients",
    allow_negative: bool = False,
) -> np.ndarray:
    """``values`` as a 1-D float64 array, checked: non-empty, finite, ``c_0 > 0`` and (unless
    ``allow_negative``) entrywise non-negative. Raises ConfigurationError naming ``name``."""
    try:
        arr = np.array(values, dtype=np.float64)
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.ndim != 1 or arr.size == 0:
        raise ConfigurationError(
            f"{owner}.{name} = {values!r} is invalid: must be a non-empty 1-D sequence of numbers"
        )
    if not np.all(np.isfinite(arr)):
        raise ConfigurationError(f"{owner}.{name} = {values!r} is invalid: must be finite")
    if not allow_negative and np.any(arr < 0):
        raise ConfigurationError(f"{owner}.{name} = {values!r} is invalid: must be non-negative")
    if not arr[0] > 0:
        raise ConfigurationError(
            f"{owner}.{name} = {values!r} is invalid: must have c_0 > 0 (C must be invertible)"
        )
    if np.max(np.abs(arr)) < np.finfo(np.float64).tiny:
        raise ConfigurationError(
            f"{owner}.{name} = {values!r} is invalid: must have an entry of magnitude >= "
            f"{np.finfo(np.float64).tiny:.3g} (subnormal-only coefficients lose their ratios; "
            "rescale them)"
        )
    return arr


def check_steps(owner: str, n_steps: int, name: str = "n_steps") -> int:
    """Validate a step count (an int in [1, MAX_STEPS]) and return it."""
    check_range(owner, name, n_steps, low=1, high=MAX_STEPS, integer=True)
    return int(n_steps)


def inverse_coefficients(coefficients: Iterable[float] | np.ndarray, n_steps: int) -> np.ndarray:
    """The first column ``r`` of ``C^-1`` (length ``n_steps``) by banded forward substitution.

    O(n k) time, O(n) memory. For non-negative non-increasing ``c`` the zeros of
    ``sum_j c_j z^j`` lie outside the open unit disc (Eneström-Kakeya), so ``r`` stays bounded;
    for other ``c`` it may grow geometrically (and overflow to inf for large n).
    """
    c = as_coefficients(coefficients, owner="inverse_coefficients", allow_negative=True)
    n = check_steps("inverse_coefficients", n_steps)
    from scipy.signal import lfilter  # lazy: scipy.signal imports scipy.stats (~1 s)

    impulse = np.zeros(n)
    impulse[0] = 1.0
    return np.asarray(lfilter([1.0], c, impulse), dtype=np.float64)


def prefix_weights(n_steps: int) -> np.ndarray:
    """``(n - j) / n`` for j = 0..n-1: the weight of ``beta_j^2`` in ``(1/n)||A C^-1||_F^2``."""
    n = int(n_steps)
    return np.asarray((n - np.arange(n)) / n, dtype=np.float64)


def prefix_mse(coefficients: Iterable[float] | np.ndarray, n_steps: int) -> float:
    """``(1/n) ||A C^-1||_F^2`` for the prefix-sum workload A (docs/math.md §8), in O(n k).

    The coefficients are used as given (no normalisation): multiply by ``||c||^2`` (or use unit
    norm coefficients) for the MSE at unit single-participation sensitivity.
    """
    n = check_steps("prefix_mse", n_steps)
    beta = np.cumsum(inverse_coefficients(coefficients, n))
    return float(prefix_weights(n) @ (beta * beta))


def toeplitz_matrix(coefficients: Iterable[float] | np.ndarray, n_steps: int) -> np.ndarray:
    """The dense n x n banded lower-triangular Toeplitz ``C`` (O(n^2) memory: small n only)."""
    c = as_coefficients(coefficients, owner="toeplitz_matrix", allow_negative=True)
    n = check_steps("toeplitz_matrix", n_steps)
    from scipy.linalg import toeplitz  # lazy, like lfilter above

    column = np.zeros(n)
    m = min(n, c.size)
    column[:m] = c[:m]
    return np.asarray(toeplitz(column, np.zeros(n)), dtype=np.float64)


def central_binomial_start(bands: int) -> np.ndarray:
    """``c_j = C(2j, j) / 4^j`` for j < ``bands`` (``c_0 = 1``), the optimiser's start (§8).

    These are the first-column coefficients of ``A^{1/2}`` (the square-root factorisation of the
    prefix-sum matrix), computed by the stable recursion ``c_j = c_{j-1} (2j - 1) / (2j)``.
    """
    k = int(bands)
    j = np.arange(1, k, dtype=np.float64)
    return np.concatenate(([1.0], np.cumprod((2.0 * j - 1.0) / (2.0 * j))))


def unit_norm(coefficients: np.ndarray) -> tuple[float, ...]:
    """``c / ||c||_2`` as a tuple of Python floats.

    When the sum of squares would overflow (entries near 1e308) or underflow (entries near
    1e-160 and below), ``c`` is first divided by its largest magnitude; otherwise it is used
    as given, so ordinary coefficients normalise to the same bits as always (checkpoints key on
    them). ``c`` must be finite with a normal (non-subnormal) largest entry, as
    :func:`as_coefficients` ensures.
    """
    c = np.asarray(coefficients, dtype=np.float64)
    with np.errstate(over="ignore", under="ignore"):
        squares = float(np.dot(c, c))
    if not (np.finfo(np.float64).tiny <= squares < math.inf):
        c = c / np.max(np.abs(c))
        squares = float(np.dot(c, c))
    norm = math.sqrt(squares)
    return tuple(float(v) / norm for v in c)
