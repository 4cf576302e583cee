"""Workload-optimal BLT and banded-inverse strategies (docs/math.md §8.8).

Both minimise the scale-free error

    f = ||c||^2 * (1/n) ||A C^-1||_F^2,

the workload error at unit single-participation sensitivity (``||c||`` is the norm of C's first
column over n steps, its largest column norm), as :mod:`minsep.strategies.optimize` does for
banded Toeplitz C. L-BFGS-B (scipy) runs on a smooth parametrisation with box bounds and the
analytic gradient (reverse mode through the workload error, the inverse column and the
parametrisation; :func:`minsep.strategies.columns.workload_error_and_gradient`):

- **BLT** with B buffers: ``omega_j = 1 - exp(u_j)``, ``theta = s softmax(0, v_2..v_B)`` with
  ``s`` in [0, 1]. So ``sum_j theta_j <= 1``: C's column is non-increasing
  (its sensitivity is exact, §8.7) and ``C(z)`` has no zero inside the unit disc, so ``C^-1``
  does not blow up. The search has poor local optima (a buffer's weight driven to zero), so it
  runs from two starts (decays spread geometrically from ``1 - 1/n`` to 1/2 and from ``1 - 3/n``
  to 0.95, equal weights summing to 1/2) and from the (B-1)-buffer optimum plus a negligible
  buffer (so adding a buffer never does worse); the best end point wins.
- **Banded inverse** with k bands: ``h_0 = 1``, ``(h_1..h_{k-1}) = -s softmax(0, v_2..v_{k-1})``
  with ``s`` in [0, 1]. Then ``1/h(z) = sum_m (-(h(z) - 1))^m`` has
  non-negative coefficients, so C is non-negative for every n, and bounded (no pole inside the
  unit disc). Started from ``h = `` the first k coefficients of ``(1 - z)^(1/2)`` (the square
  root factorisation of prefix sums), rescaled into the family.

One objective evaluation costs O(n * B) (or O(n * k)) for a constant learning rate and O(n^2)
for a decaying one. Results are cached in memory and on disk (:mod:`minsep.strategies.cache`),
keyed by ``(strategy, n_steps, buffers or bands, workload spec, ALGORITHM_VERSION)``.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from minsep.framework.validation import check_range
from minsep.framework.workloads import Workload, workload_from_spec
from minsep.strategies import cache, columns
from minsep.strategies.filters import lfilter
from minsep.strategies.toeplitz import check_steps

#: Part of every cache key: bump it whenever the optimiser's output could change.
ALGORITHM_VERSION = "structured-lbfgsb-2"

#: Most buffers / inverse bands the optimiser takes.
MAX_PARAMETERS = 32

_OPTIONS: dict[str, Any] = {"maxiter": 300, "maxfun": 600, "ftol": 1e-10, "gtol": 1e-7}

#: Smallest ``1 - omega`` the BLT search visits.
_FLOOR = 1e-12
#: Bounds of the free logits of the weights (relative weights down to e^-40).
_LOGIT = (-40.0, 40.0)

_FAILED = (float("inf"), None)


def _softmax(v: np.ndarray) -> np.ndarray:
    """``softmax((0, v))``: positive weights summing to 1 (the first logit fixed at 0)."""
    logits = np.concatenate(([0.0], v))
    e = np.exp(logits - np.max(logits))
    return np.asarray(e / np.sum(e), dtype=np.float64)


def _simplex_gradient(s: float, p: np.ndarray, grad: np.ndarray) -> np.ndarray:
    """Gradient in ``(s, v)`` of a function of ``s * softmax(0, v)`` with gradient ``grad``."""
    mean = float(p @ grad)
    return np.concatenate(([mean], (s * p * (grad - mean))[1:]))


def _scaled_error(
    column: np.ndarray, inverse: np.ndarray, workload: Workload
) -> tuple[float, np.ndarray, np.ndarray]:
    """``f = ||c||^2 E(r) / n`` with its gradients in ``c`` (through ``||c||^2``) and in ``r``."""
    n = column.size
    error, grad_r = columns.workload_error_and_gradient(inverse, workload)
    norm2 = float(column @ column)
    return norm2 * error / n, 2.0 * error * column / n, norm2 * grad_r / n


def _finite(value: float, gradient: np.ndarray) -> tuple[float, np.ndarray] | None:
    if np.isfinite(value) and np.all(np.isfinite(gradient)):
        return float(value), gradient
    return None


def blt_parts(x: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(omega, theta, c, r)`` at search parameters ``x = (u_1..u_B, s, v_2..v_B)``: decays,
    weights, first column of C and of ``C^-1`` (the IIR filter ``Q/P``, §8.4)."""
    B = (x.size + 1) // 2
    omega = 1.0 - np.exp(x[:B])
    theta = x[B] * _softmax(x[B + 1 :])
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


def blt_objective(x: np.ndarray, n: int, workload: Workload) -> tuple[float, np.ndarray]:
    """``f`` of the module docstring and its gradient at BLT search parameters ``x``; ``(inf,
    zeros)`` when not finite (line searches treat it as a step too long)."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        omega, theta, column, inverse = blt_parts(x, n)
        value, grad_c, grad_r = _scaled_error(column, inverse, workload)
        grad_c = grad_c + columns.inverse_adjoint(inverse, grad_r)
        # c_k = sum_j theta_j omega_j^(k-1), k >= 1
        k = np.arange(1, n, dtype=np.float64)
        powers = np.power.outer(omega, k - 1.0)  # (B, n-1)
        grad_theta = powers @ grad_c[1:]
        lower = np.power.outer(omega, np.maximum(k - 2.0, 0.0))
        grad_omega = theta * (lower @ ((k - 1.0) * grad_c[1:]))
        B = omega.size
        grad_u = -(1.0 - omega) * grad_omega
        gradient = np.concatenate(
            (grad_u, _simplex_gradient(x[B], _softmax(x[B + 1 :]), grad_theta))
        )
    found = _finite(value, gradient)
    return found if found is not None else (float("inf"), np.zeros_like(x))


def inverse_h(x: np.ndarray) -> np.ndarray:
    """``h`` at banded-inverse search parameters ``x = (s, v_2..v_{k-1})``."""
    return np.concatenate(([1.0], -x[0] * _softmax(x[1:])))


def banded_inverse_objective(x: np.ndarray, n: int, workload: Workload) -> tuple[float, np.ndarray]:
    """``f`` and its gradient at banded-inverse search parameters ``x``."""
    x = np.asarray(x, dtype=np.float64)
    h = inverse_h(x)
    k = h.size
    impulse = np.zeros(n)
    impulse[0] = 1.0
    with np.errstate(over="ignore", invalid="ignore"):
        column = np.asarray(lfilter([1.0], h, impulse))  # C e_0 = H^-1 e_0
        value, grad_c, grad_r = _scaled_error(column, columns.padded(h, n), workload)
        grad_h = grad_r[:k] + columns.inverse_adjoint(column, grad_c)[:k]
        gradient = _simplex_gradient(x[0], _softmax(x[1:]), -grad_h[1:])
    found = _finite(value, gradient)
    return found if found is not None else (float("inf"), np.zeros_like(x))


def _check(owner: str, n_steps: int, name: str, count: int, low: int) -> tuple[int, int]:
    n = check_steps(owner, n_steps)
    check_range(owner, name, count, low=low, high=MAX_PARAMETERS, integer=True)
    return n, int(count)


#: ``(1 - omega)`` of the spread starts run from: geometric from ``low / n`` to ``high``.
_SPREADS: tuple[tuple[float, float], ...] = ((1.0, 0.5), (3.0, 0.05))


def _blt_starts(n: int, B: int) -> list[np.ndarray]:
    """Decays spread geometrically (:data:`_SPREADS`), equal weights summing to 1/2."""
    starts = []
    for low, high in _SPREADS:
        gaps = np.geomspace(min(low / max(n, 2), high), high, B)
        starts.append(np.concatenate((np.log(gaps), [0.5], np.zeros(B - 1))))
    return starts


def _blt_parameters(decays: Sequence[float], weights: Sequence[float]) -> np.ndarray:
    """The search parameters ``(u, s, v)`` of a BLT (weights floored at e^-30 of the total)."""
    omega, theta = np.asarray(decays), np.asarray(weights)
    total = float(np.sum(theta))
    share = np.maximum(theta / total if total > 0 else np.ones_like(theta), np.exp(-30.0))
    v = np.clip(np.log(share[1:] / share[0]), *_LOGIT)
    return np.concatenate((np.log(1.0 - omega), [min(total, 1.0)], v))


def _lbfgsb(
    objective: Any, start: np.ndarray, bounds: list[Any], n: int, w: Workload
) -> np.ndarray:
    """L-BFGS-B from ``start``; the start itself if the search ends anywhere worse."""
    from scipy.optimize import minimize

    result = minimize(
        objective,
        start,
        args=(n, w),
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        options=_OPTIONS,
    )
    x = np.asarray(result.x, dtype=np.float64)
    return x if objective(x, n, w)[0] <= objective(start, n, w)[0] else start


def _minimise_blt(
    n: int, B: int, workload: Workload, fewer: tuple[float, ...] | None = None
) -> tuple[float, ...]:
    """L-BFGS-B from the spread starts and, given the optimum with B - 1 buffers (``fewer``:
    decays + weights), from that optimum plus a buffer of negligible weight (so more buffers
    never do worse); the better result, as decays (decreasing) + weights."""
    bounds = [(np.log(_FLOOR), np.log(1.0 - 1e-9))] * B + [(0.0, 1.0)] + [_LOGIT] * (B - 1)
    starts = _blt_starts(n, B)
    if fewer is not None:
        decays, weights = list(fewer[: B - 1]), list(fewer[B - 1 :])
        new = 0.5 * min(decays)
        starts.append(_blt_parameters([*decays, new], [*weights, 1e-6 * max(sum(weights), 1e-6)]))
    found = [_lbfgsb(blt_objective, x, bounds, n, workload) for x in starts]
    x = min(found, key=lambda y: blt_objective(y, n, workload)[0])
    omega, theta, _, _ = blt_parts(x, max(n, 2))
    order = np.argsort(-omega)
    return tuple(float(v) for v in omega[order]) + tuple(float(v) for v in theta[order])


def _sqrt_start(k: int) -> np.ndarray:
    """``(s, v)`` for the first k coefficients of ``(1 - z)^(1/2)`` (``h_t = -g_t``)."""
    g = np.ones(k)
    for t in range(1, k):
        g[t] = g[t - 1] * (t - 1.5) / t  # (1 - z)^(1/2) = sum_t g_t z^t, g_t < 0 for t >= 1
    mags = -g[1:]
    return np.concatenate(([min(float(np.sum(mags)), 1.0)], np.log(mags[1:] / mags[0])))


def _minimise_banded_inverse(n: int, k: int, workload: Workload) -> tuple[float, ...]:
    if k == 1:
        return (1.0,)
    bounds = [(0.0, 1.0)] + [_LOGIT] * (k - 2)
    x = _lbfgsb(banded_inverse_objective, _sqrt_start(k), bounds, n, workload)
    return tuple(float(v) for v in inverse_h(x))


def optimal_blt(
    n_steps: int, buffers: int, workload: Any = "prefix", *, cache_results: bool = True
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """``(decays, weights)`` of the workload-optimal BLT with ``buffers`` buffers."""
    n, B = _check("optimal_blt", n_steps, "buffers", buffers, 1)
    w = workload_from_spec(workload)
    flat = _cached("blt", n, B, w.spec) if cache_results else _uncached_blt(n, B, w)
    return flat[:B], flat[B:]


def _uncached_blt(n: int, B: int, workload: Workload) -> tuple[float, ...]:
    fewer = _uncached_blt(n, B - 1, workload) if B > 1 else None
    return _minimise_blt(n, B, workload, fewer)


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
        fewer = _cached(strategy, n, size - 1, spec) if size > 1 else None
        values = _minimise_blt(n, size, workload, fewer)
    else:
        h = _minimise_banded_inverse(n, size, workload)
        values = (1.0, *(-v for v in h[1:]))
    cache.store_coefficients(key, values)
    return values


def clear_memory_cache() -> None:
    """Forget the in-memory cache (the on-disk cache is kept)."""
    _cached.cache_clear()
