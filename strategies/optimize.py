"""MSE-optimal banded Toeplitz coefficients (McKenna 2025; docs/math.md §8).

Objective, scale invariant in ``c`` (so it does not depend on the normalisation):

- ``"mean"``: ``f(c) = ||c||^2 (1/n) ||A C^-1||_F^2 = ||c||^2 sum_j (n - j)/n beta_j^2``, the
  mean squared error of the n prefix sums at unit sensitivity;
- ``"max"``: ``f(c) = ||c||^2 max_i ||(A C^-1)[i, :]||^2``. Row i of the Toeplitz ``A C^-1`` is
  ``(beta_i, ..., beta_0)``, so its squared norm is the cumulative sum ``sum_{j<=i} beta_j^2``
  and the maximum is the last row, ``sum_j beta_j^2``: a smooth objective.

Both are ``||c||^2 sum_j w_j beta_j^2`` with ``beta = cumsum(r)``, ``r`` the first column of
``C^-1``. The gradient is the adjoint of the banded forward substitution ``C r = e_0``: with
``g_r = dL/dr`` (a reverse cumulative sum of ``2 w beta``), ``lambda = C^-T g_r`` (a backward
substitution, i.e. the same IIR filter run on the reversed sequence) and
``dL/dc_j = -sum_{m >= j} lambda_m r_{m-j}``. One evaluation costs O(n k + n log n).

Optimisation: L-BFGS-B over ``c_1..c_{k-1}`` with ``c_0 = 1`` fixed (every admissible ``c`` has
``c_0 > 0`` and the objective is scale invariant, so this loses nothing) and bounds
``c_j >= 0`` (the strategy must be entrywise non-negative), started from
``c_j = C(2j, j)/4^j``; the result is normalised to ``||c||_2 = 1``. Results are cached in
memory and on disk (:mod:`minsep.strategies.cache`), keyed by ``(n_steps, bands, objective,
ALGORITHM_VERSION)``.
"""

from __future__ import annotations

import functools
from typing import Any, Literal

import numpy as np

from minsep.framework.errors import ConfigurationError
from minsep.framework.validation import check_range
from minsep.strategies import cache
from minsep.strategies.toeplitz import (
    as_coefficients,
    central_binomial_start,
    check_steps,
    prefix_weights,
    unit_norm,
)

Objective = Literal["mean", "max"]
OBJECTIVES: tuple[str, ...] = ("mean", "max")

#: Part of every cache key: bump it whenever the optimiser's output could change.
ALGORITHM_VERSION = "lbfgsb-1"

# L-BFGS-B settings: converged far below the 0.1% the tests ask for, in tens of iterations.
_OPTIONS: dict[str, Any] = {"maxiter": 10_000, "maxfun": 20_000, "ftol": 1e-13, "gtol": 1e-10}


def check_objective(owner: str, objective: str) -> str:
    """Validate the objective name."""
    if objective not in OBJECTIVES:
        raise ConfigurationError(
            f"{owner}.objective = {objective!r} is invalid: must be one of {list(OBJECTIVES)}"
        )
    return objective


def _row_weights(n: int, objective: str) -> np.ndarray:
    return prefix_weights(n) if objective == "mean" else np.ones(n)


def objective_and_gradient(
    coefficients: np.ndarray, n_steps: int, objective: str = "mean"
) -> tuple[float, np.ndarray]:
    """The objective ``f(c)`` of the module docstring and its gradient in ``c``.

    Returns ``(inf, zeros)`` when ``C^-1`` overflows (``c`` far outside the stable region), which
    line searches treat as "step too long".
    """
    c = as_coefficients(coefficients, owner="objective", allow_negative=True)
    n = check_steps("objective", n_steps)
    check_objective("objective", objective)
    from scipy.signal import correlate, lfilter  # lazy: scipy.signal imports scipy.stats (~1 s)

    weights = _row_weights(n, objective)
    k = c.size
    failed = (float("inf"), np.zeros(k))
    with np.errstate(over="ignore", invalid="ignore"):
        impulse = np.zeros(n)
        impulse[0] = 1.0
        r = lfilter([1.0], c, impulse)
        if not np.all(np.isfinite(r)):
            return failed
        beta = np.cumsum(r)
        loss = float(weights @ (beta * beta))
        grad_r = np.cumsum((2.0 * weights * beta)[::-1])[::-1]
        lam = lfilter([1.0], c, grad_r[::-1])[::-1]
        if not (np.isfinite(loss) and np.all(np.isfinite(lam))):
            return failed
    # full[n - 1 + j] = sum_m lam[m + j] r[m]
    full = correlate(lam, r, mode="full")
    grad_c = -np.asarray(full[n - 1 : n - 1 + k], dtype=np.float64)
    if k > n:  # coefficients beyond the matrix do not touch C^-1
        grad_c = np.concatenate((grad_c, np.zeros(k - grad_c.size)))
    norm2 = float(c @ c)
    value = loss * norm2
    gradient = grad_c * norm2 + 2.0 * loss * c
    if not (np.isfinite(value) and np.all(np.isfinite(gradient))):
        return failed
    return value, gradient


def objective_value(coefficients: np.ndarray, n_steps: int, objective: str = "mean") -> float:
    """``f(c)`` alone (see :func:`objective_and_gradient`)."""
    return objective_and_gradient(coefficients, n_steps, objective)[0]


def _check_inputs(owner: str, n_steps: int, bands: int, objective: str) -> None:
    check_steps(owner, n_steps)
    check_range(owner, "bands", bands, low=1, high=n_steps, integer=True)
    check_objective(owner, objective)


def _minimise(n: int, k: int, objective: str) -> tuple[float, ...]:
    """Run L-BFGS-B (see the module docstring); unit-norm coefficients."""
    start = central_binomial_start(k)
    if k == 1:
        return (1.0,)

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        value, gradient = objective_and_gradient(np.concatenate(([1.0], x)), n, objective)
        return value, gradient[1:]

    from scipy.optimize import minimize  # lazy: ~0.3 s to import

    result = minimize(
        fun,
        start[1:],
        jac=True,
        method="L-BFGS-B",
        bounds=[(0.0, None)] * (k - 1),
        options=_OPTIONS,
    )
    x = np.asarray(result.x, dtype=np.float64)
    best = np.concatenate(([1.0], np.clip(x, 0.0, None)))
    # L-BFGS-B only accepts decreasing steps; keep the start should anything go wrong.
    if not objective_value(best, n, objective) <= objective_value(start, n, objective):
        best = start
    return unit_norm(best)


def optimal_coefficients(
    n_steps: int, bands: int, objective: str = "mean", *, cache_results: bool = True
) -> tuple[float, ...]:
    """Unit-norm coefficients of the MSE-optimal ``bands``-banded Toeplitz strategy.

    Args:
        n_steps: number of steps n (>= 1).
        bands: number of bands k, ``1 <= k <= n`` (k = 1 gives the identity, ``(1.0,)``).
        objective: ``"mean"`` (mean prefix-sum error) or ``"max"`` (largest row error).
        cache_results: read and write the in-memory and on-disk caches (False recomputes).
    """
    _check_inputs("optimal_coefficients", n_steps, bands, objective)
    n, k = int(n_steps), int(bands)
    if k == 1:
        return (1.0,)
    if not cache_results:
        return _minimise(n, k, objective)
    return _cached(n, k, objective)


def cache_key(n_steps: int, bands: int, objective: str) -> dict[str, Any]:
    """The cache key of an optimisation: its inputs and :data:`ALGORITHM_VERSION`."""
    return {
        "strategy": "banded_toeplitz",
        "n_steps": int(n_steps),
        "bands": int(bands),
        "objective": objective,
        "version": ALGORITHM_VERSION,
    }


@functools.lru_cache(maxsize=256)
def _cached(n: int, k: int, objective: str) -> tuple[float, ...]:
    key = cache_key(n, k, objective)
    found = cache.load_coefficients(key, k)
    if found is not None:
        return found
    coefficients = _minimise(n, k, objective)
    cache.store_coefficients(
        key, coefficients, objective_value=objective_value(np.array(coefficients), n, objective)
    )
    return coefficients


def clear_memory_cache() -> None:
    """Forget the in-memory cache (the on-disk cache is kept)."""
    _cached.cache_clear()
