"""Workload-optimal BLT and banded-inverse strategies (docs/math.md §8.8).

Both minimise the scale-free error

    f = ||c||^2 * (1/n) ||A C^-1||_F^2,

the workload error at unit single-participation sensitivity (``||c||`` is the norm of C's first
column over n steps, its largest column norm), as :mod:`minsep.strategies.optimize` does for
banded Toeplitz C. L-BFGS-B (scipy) runs on a smooth parametrisation with box bounds, with
finite-difference gradients (few parameters):

- **BLT** with B buffers: ``omega_j = 1 - exp(u_j)``, ``theta_j = s w_j / sum(w)`` with ``s``
  in [0, 1] and ``w_j`` in (0, 1]. So ``sum_j theta_j <= 1``: C's column is non-increasing
  (its sensitivity is exact, §8.7) and ``C(z)`` has no zero inside the unit disc, so ``C^-1``
  does not blow up. Started from decays spread geometrically between ``1 - 1/n`` and 1/2 and
  equal weights summing to 1/2.
- **Banded inverse** with k bands: ``h_0 = 1``, ``h_t = -s w_t / sum(w)`` for t >= 1 with
  ``s`` in [0, 1] and ``w_t`` in (0, 1]. Then ``1/h(z) = sum_m (s w(z)/sum(w))^m`` has
  non-negative coefficients, so C is non-negative for every n, and bounded (no pole inside the
  unit disc). Started from ``h = `` the first k coefficients of ``(1 - z)^(1/2)`` (the square
  root factorisation of prefix sums), rescaled into the family.

One objective evaluation costs O(n * B) (or O(n * k)) for a constant learning rate and O(n^2)
for a decaying one. Results are cached in memory and on disk (:mod:`minsep.strategies.cache`),
keyed by ``(strategy, n_steps, buffers or bands, workload spec, ALGORITHM_VERSION)``.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from scipy.optimize import minimize
from scipy.signal import lfilter

from minsep.framework.validation import check_range
from minsep.framework.workloads import Workload, workload_from_spec
from minsep.strategies import cache, columns
from minsep.strategies.toeplitz import check_steps

#: Part of every cache key: bump it whenever the optimiser's output could change.
ALGORITHM_VERSION = "structured-lbfgsb-1"

#: Most buffers / inverse bands the optimiser takes.
MAX_PARAMETERS = 32

_OPTIONS: dict[str, Any] = {"maxiter": 500, "ftol": 1e-12, "gtol": 1e-9}

#: Smallest ``1 - omega`` the BLT search visits.
_FLOOR = 1e-12


def _blt_parts(x: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    B = (x.size - 1) // 2
    omega = 1.0 - np.exp(x[:B])
    theta = x[B] * x[B + 1 :] / np.sum(x[B + 1 :])
    column = np.concatenate(([1.0], theta @ np.power.outer(omega, np.arange(n - 1))))
    Q = np.array([1.0])
    for w in omega:
        Q = np.convolve(Q, [1.0, -w])
    P = np.concatenate((Q, [0.0]))
    for j in range(B):
        others = np.array([1.0])
        for m in range(B):
            if m != j:
                others = np.convolve(others, [1.0, -omega[m]])
        P[1 : 1 + others.size] += theta[j] * others
    impulse = np.zeros(n)
    impulse[0] = 1.0
    inverse = np.asarray(lfilter(Q, P, impulse), dtype=np.float64)
    return omega, theta, column, inverse


def blt_objective(x: np.ndarray, n: int, workload: Workload) -> float:
    """``f`` of the module docstring at BLT parameters ``x = (u, s, w)``; inf if not finite."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        _, _, column, inverse = _blt_parts(np.asarray(x, dtype=np.float64), n)
        if not np.all(np.isfinite(inverse)):
            return float("inf")
        value = float(column @ column) * columns.workload_error(inverse, workload) / n
    return value if np.isfinite(value) else float("inf")


def _inverse_h(x: np.ndarray) -> np.ndarray:
    s, w = x[0], x[1:]
    return np.concatenate(([1.0], -s * w / np.sum(w)))


def banded_inverse_objective(x: np.ndarray, n: int, workload: Workload) -> float:
    """``f`` at banded-inverse parameters ``x = (s, w_1..w_{k-1})``; inf if not finite."""
    h = _inverse_h(np.asarray(x, dtype=np.float64))
    impulse = np.zeros(n)
    impulse[0] = 1.0
    with np.errstate(over="ignore", invalid="ignore"):
        column = np.asarray(lfilter([1.0], h, impulse))
        value = float(column @ column) * columns.workload_error(columns.padded(h, n), workload)
    value /= n
    return value if np.isfinite(value) else float("inf")


def _check(owner: str, n_steps: int, name: str, count: int, low: int) -> tuple[int, int]:
    n = check_steps(owner, n_steps)
    check_range(owner, name, count, low=low, high=MAX_PARAMETERS, integer=True)
    return n, int(count)


def _blt_start(n: int, B: int) -> np.ndarray:
    gaps = np.geomspace(1.0 / max(n, 2), 0.5, B) if B > 1 else np.array([2.0 / max(n, 4)])
    return np.concatenate((np.log(gaps), [0.5], np.ones(B)))


def _minimise_blt(n: int, B: int, workload: Workload) -> tuple[float, ...]:
    start = _blt_start(n, B)
    bounds = [(np.log(_FLOOR), np.log(1.0 - 1e-9))] * B + [(0.0, 1.0)] + [(1e-9, 1.0)] * B
    result = minimize(
        blt_objective,
        start,
        args=(n, workload),
        method="L-BFGS-B",
        bounds=bounds,
        options=_OPTIONS,
    )
    x = np.asarray(result.x, dtype=np.float64)
    if not blt_objective(x, n, workload) <= blt_objective(start, n, workload):
        x = start
    omega, theta, _, _ = _blt_parts(x, max(n, 2))
    order = np.argsort(-omega)
    return tuple(float(v) for v in omega[order]) + tuple(float(v) for v in theta[order])


def _sqrt_start(k: int) -> np.ndarray:
    """``(s, w)`` for the first k coefficients of ``(1 - z)^(1/2)``: ``h_t = -g_t``."""
    g = np.ones(k)
    for t in range(1, k):
        g[t] = g[t - 1] * (t - 1.5) / t  # (1 - z)^(1/2) = sum_t g_t z^t, g_t < 0 for t >= 1
    mags = -g[1:]
    return np.concatenate(([min(float(np.sum(mags)), 1.0)], mags / np.max(mags)))


def _minimise_banded_inverse(n: int, k: int, workload: Workload) -> tuple[float, ...]:
    if k == 1:
        return (1.0,)
    start = _sqrt_start(k)
    bounds = [(0.0, 1.0)] + [(1e-9, 1.0)] * (k - 1)
    result = minimize(
        banded_inverse_objective,
        start,
        args=(n, workload),
        method="L-BFGS-B",
        bounds=bounds,
        options=_OPTIONS,
    )
    x = np.asarray(result.x, dtype=np.float64)
    if not banded_inverse_objective(x, n, workload) <= banded_inverse_objective(start, n, workload):
        x = start
    return tuple(float(v) for v in _inverse_h(x))


def optimal_blt(
    n_steps: int, buffers: int, workload: Any = "prefix", *, cache_results: bool = True
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """``(decays, weights)`` of the workload-optimal BLT with ``buffers`` buffers."""
    n, B = _check("optimal_blt", n_steps, "buffers", buffers, 1)
    w = workload_from_spec(workload)
    flat = _cached("blt", n, B, w.spec) if cache_results else _minimise_blt(n, B, w)
    return flat[:B], flat[B:]


def optimal_banded_inverse(
    n_steps: int, bands: int, workload: Any = "prefix", *, cache_results: bool = True
) -> tuple[float, ...]:
    """``h_0..h_{k-1}`` (``h_0 = 1``) of the workload-optimal banded inverse with ``bands``
    bands of ``C^-1``."""
    n, k = _check("optimal_banded_inverse", n_steps, "bands", bands, 1)
    w = workload_from_spec(workload)
    if not cache_results:
        return _minimise_banded_inverse(n, k, w)
    stored = _cached("banded_inverse", n, k, w.spec)  # (1, -h_1, ..., -h_{k-1})
    return (1.0, *(-v for v in stored[1:]))


def cache_key(strategy: str, n_steps: int, size: int, workload: str) -> dict[str, Any]:
    """The cache key of one optimisation: its inputs and :data:`ALGORITHM_VERSION`."""
    return {
        "strategy": strategy,
        "n_steps": int(n_steps),
        "size": int(size),
        "workload": workload,
        "version": ALGORITHM_VERSION,
    }


@functools.lru_cache(maxsize=256)
def _cached(strategy: str, n: int, size: int, spec: str) -> tuple[float, ...]:
    """The stored entry: BLT ``decays + weights``; banded inverse ``(1, -h_1, ..)`` (the cache
    holds non-negative values only)."""
    key = cache_key(strategy, n, size, spec)
    length = 2 * size if strategy == "blt" else size
    found = cache.load_coefficients(key, length)
    if found is not None:
        return found
    workload = workload_from_spec(spec)
    if strategy == "blt":
        values = _minimise_blt(n, size, workload)
    else:
        h = _minimise_banded_inverse(n, size, workload)
        values = (1.0, *(-v for v in h[1:]))
    cache.store_coefficients(key, values)
    return values


def clear_memory_cache() -> None:
    """Forget the in-memory cache (the on-disk cache is kept)."""
    _cached.cache_clear()
