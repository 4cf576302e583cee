"""Buffered linear Toeplitz (BLT) strategies (docs/math.md §8.4).

C is lower-triangular Toeplitz with first column

    c_0 = 1,    c_k = sum_j theta_j omega_j^(k-1)   (k >= 1),

with buffers (decays) ``omega_j`` in (0, 1) and weights ``theta_j >= 0``, so C is entrywise
non-negative and its column is non-increasing from ``c_1`` on; it is non-increasing from
``c_0`` exactly when ``sum_j theta_j <= 1``. The generating function is rational,
``C(z) = 1 + z sum_j theta_j / (1 - omega_j z) = P(z) / Q(z)`` with ``Q(z) = prod_j (1 -
omega_j z)``, so ``C^-1`` has generating function ``Q(z) / P(z)``: the same kind of recursion.
Streaming: with one state row per buffer, ``S_{j,0} = 0``,

    x_t = z_t - sum_j theta_j S_{j,t},    S_{j,t+1} = omega_j S_{j,t} + x_t,

solves ``C x = z`` one step at a time in O(buffers * d) memory.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import attrs
import numpy as np
from numpy.polynomial import polynomial as npoly

from minsep.framework.backend import RandomSource
from minsep.framework.errors import ConfigurationError
from minsep.framework.parameters import Parameter
from minsep.framework.registries import strategies
from minsep.framework.workloads import workload_from_spec
from minsep.strategies import columns
from minsep.strategies.filters import lfilter
from minsep.strategies.lower_toeplitz import LowerToeplitzStrategy
from minsep.strategies.toeplitz import check_steps

#: Largest number of buffers accepted (BLTs in use have a handful).
MAX_BUFFERS = 64


def as_parameters(owner: str, name: str, values: Any, *, low: float, high: float | None) -> Any:
    """``values`` as a tuple of floats in ``[low, high)`` (``(low, high)`` when ``high`` is
    given and ``low`` is 0 for decays: see the callers); raises ConfigurationError naming
    ``name``."""
    try:
        arr = np.array(values, dtype=np.float64)
    except (TypeError, ValueError):
        arr = None
    where = f"[{low}, inf)" if high is None else f"({low}, {high})"
    if arr is None or arr.ndim != 1 or not 1 <= arr.size <= MAX_BUFFERS:
        raise ConfigurationError(
            f"{owner}.{name} = {values!r} is invalid: must be a 1-D sequence of 1 to "
            f"{MAX_BUFFERS} numbers in {where}",
            parameter=name,
        )
    ok = np.isfinite(arr) & (arr >= low)
    if high is not None:
        ok &= (arr > low) & (arr < high)
    if not np.all(ok):
        raise ConfigurationError(
            f"{owner}.{name} = {values!r} is invalid: every entry must be a finite number in "
            f"{where}",
            parameter=name,
        )
    return tuple(float(v) for v in arr)


def _decays(values: Any) -> tuple[float, ...]:
    result: tuple[float, ...] = as_parameters(
        "BufferedLinearToeplitz", "decays", values, low=0.0, high=1.0
    )
    return result


def _weights(values: Any) -> tuple[float, ...]:
    result: tuple[float, ...] = as_parameters(
        "BufferedLinearToeplitz", "weights", values, low=0.0, high=None
    )
    return result


@strategies.register("blt")
@attrs.frozen
class BufferedLinearToeplitz(LowerToeplitzStrategy):
    """BLT strategy: ``c_0 = 1``, ``c_k = sum_j theta_j omega_j^(k-1)`` (module docstring).

    Attributes:
        decays: buffer decays ``omega_j``, each in (0, 1).
        weights: buffer weights ``theta_j >= 0``, as many as decays.
    """

    decays: tuple[float, ...] = attrs.field(converter=_decays)
    weights: tuple[float, ...] = attrs.field(converter=_weights)

    def __attrs_post_init__(self) -> None:
        if len(self.weights) != len(self.decays):
            raise ConfigurationError(
                f"BufferedLinearToeplitz.weights = {self.weights!r} is invalid: must have as "
                f"many entries as decays ({len(self.decays)})",
                parameter="weights",
            )

    @property
    def buffers(self) -> int:
        """The number of buffers."""
        return len(self.decays)

    def public_parameters(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy_name,
            "decays": list(self.decays),
            "weights": list(self.weights),
        }

    def column(self, n_steps: int) -> np.ndarray:
        """``c_0..c_{n-1}``, O(n * buffers)."""
        n = check_steps(self._owner("column"), n_steps)
        omega, theta = np.array(self.decays), np.array(self.weights)
        powers = np.power.outer(omega, np.arange(max(n - 1, 0)))
        return np.concatenate(([1.0], theta @ powers))

    def rational_form(self) -> tuple[np.ndarray, np.ndarray]:
        """``(P, Q)``, ascending coefficients of ``C(z) = P(z) / Q(z)`` (module docstring)."""
        Q = np.array([1.0])
        for omega in self.decays:
            Q = npoly.polymul(Q, [1.0, -omega])
        P = np.concatenate((Q, [0.0]))
        for j, theta in enumerate(self.weights):
            others = np.array([1.0])
            for m, omega in enumerate(self.decays):
                if m != j:
                    others = npoly.polymul(others, [1.0, -omega])
            P[1 : 1 + others.size] += theta * others
        return np.asarray(P, dtype=np.float64), np.asarray(Q, dtype=np.float64)

    def inverse_column(self, n_steps: int) -> np.ndarray:
        """First column of ``C^-1``: the IIR filter ``Q / P`` on a unit impulse, O(n *
        buffers). Raises ConfigurationError if it overflows (P has a zero inside the unit disc
        and n is large)."""
        n = check_steps(self._owner("inverse_column"), n_steps)
        P, Q = self.rational_form()
        impulse = np.zeros(n)
        impulse[0] = 1.0
        with np.errstate(over="ignore", invalid="ignore"):
            r = np.asarray(lfilter(Q, P, impulse), dtype=np.float64)
        if not np.all(np.isfinite(r)):
            raise ConfigurationError(
                f"BufferedLinearToeplitz.weights = {self.weights!r} is invalid for n_steps = {n}:"
                " C^-1 overflows (its generating function has a pole inside the unit disc)",
                parameter="weights",
            )
        return r

    def column_inner_products(self, n_steps: int, i: Any, j: Any) -> np.ndarray:
        """``(C^T C)[i, j]`` in O(buffers^2) per entry by geometric sums (§8.4): with lag
        ``d = |i - j|`` and ``T = n - max(i, j)`` rows, ``c_0 c_d`` plus
        ``sum_{j,l} theta_j theta_l omega_l^d (1 - (omega_j omega_l)^(T-1)) / (1 - omega_j
        omega_l)``."""
        n = check_steps(self._owner("column_inner_products"), n_steps)
        ii, jj = np.broadcast_arrays(np.asarray(i), np.asarray(j))
        columns.check_indices(ii, jj, n)
        lag = np.abs(ii - jj).astype(np.float64)
        rows = (n - np.maximum(ii, jj)).astype(np.float64)
        omega, theta = np.array(self.decays), np.array(self.weights)
        # t = 0: c_0 c_d (1 at lag 0, else c_d); t = 1..T-1: the geometric sums.
        total = np.zeros(lag.shape)
        for a in range(omega.size):
            total = total + theta[a] * omega[a] ** np.maximum(lag - 1.0, 0.0)
            for b in range(omega.size):
                q = omega[a] * omega[b]
                total = total + theta[a] * theta[b] * omega[b] ** lag * (
                    1.0 - q ** (rows - 1.0)
                ) / (1.0 - q)
        total = np.where(lag == 0, total - np.sum(theta) + 1.0, total)
        return np.asarray(total, dtype=np.float64)

    def _stream(self, shape: tuple[int, ...], n: int, rng: RandomSource, xp: Any) -> Iterator[Any]:
        """``(C^-1 Z)[i]`` by the state recursion (module docstring), O(buffers * d)."""
        d = math.prod(shape)
        omega = xp.asarray(list(self.decays), dtype=xp.float64)[:, None]
        theta = xp.asarray(list(self.weights), dtype=xp.float64)
        state = xp.zeros((len(self.decays), d), dtype=xp.float64)
        for _ in range(n):
            z = xp.reshape(xp.asarray(rng.standard_normal(shape), dtype=xp.float64), (d,))
            x = z - theta @ state
            state = omega * state + x[None, :]
            yield xp.reshape(x, shape)

    @classmethod
    def parameters(cls) -> tuple[Parameter, ...]:
        """``buffers`` and ``workload`` (optimised), or fixed ``decays`` and ``weights``."""
        return (
            Parameter("buffers", "int", False, 2, "buffers of the optimised BLT"),
            Parameter("workload", "str", False, "prefix", "workload the BLT is optimised for"),
            Parameter("decays", "object", False, None, "fixed decays (with weights)"),
            Parameter("weights", "object", False, None, "fixed weights (with decays)"),
        )

    @classmethod
    def for_steps(cls, n_steps: int, **options: Any) -> BufferedLinearToeplitz:
        """``decays=..., weights=...`` (fixed), or ``buffers=B`` (default 2) and optionally
        ``workload=...`` (a Workload or spec string, default prefix sums): the BLT optimised
        for that workload (:mod:`minsep.strategies.optimize_structured`). Other options raise
        ConfigurationError."""
        from minsep.strategies import optimize_structured

        check_steps("BufferedLinearToeplitz.for_steps", n_steps)
        allowed = {"decays", "weights", "buffers", "workload"}
        unknown = sorted(set(options) - allowed)
        if unknown:
            raise ConfigurationError(
                f"BufferedLinearToeplitz.{unknown[0]} = {options[unknown[0]]!r} is invalid: not "
                f"an option of blt (allowed: {sorted(allowed)})",
                parameter=unknown[0],
            )
        fixed = {"decays", "weights"} & set(options)
        if fixed:
            if set(options) != {"decays", "weights"}:
                raise ConfigurationError(
                    f"BufferedLinearToeplitz.{sorted(fixed)[0]} = "
                    f"{options[sorted(fixed)[0]]!r} is invalid: give decays and weights "
                    "together and without buffers or workload",
                    parameter=sorted(fixed)[0],
                )
            return cls(options["decays"], options["weights"])
        buffers = options.get("buffers", 2)
        workload = workload_from_spec(options.get("workload", "prefix"))
        decays, weights = optimize_structured.optimal_blt(n_steps, buffers, workload)
        return cls(decays, weights)

    @classmethod
    def example(cls) -> BufferedLinearToeplitz:
        """Two buffers with total weight below 1 (non-increasing column: exact sensitivity)."""
        return cls((0.9, 0.5), (0.3, 0.2))

    @classmethod
    def invalid_examples(cls) -> list[tuple[dict[str, Any], str]]:
        return [
            ({"decays": (), "weights": ()}, "decays"),
            ({"decays": (1.0,), "weights": (0.1,)}, "decays"),
            ({"decays": (0.0,), "weights": (0.1,)}, "decays"),
            ({"decays": (float("nan"),), "weights": (0.1,)}, "decays"),
            ({"decays": (0.5,), "weights": (-0.1,)}, "weights"),
            ({"decays": (0.5,), "weights": (float("inf"),)}, "weights"),
            ({"decays": (0.5, 0.2), "weights": (0.1,)}, "weights"),
            ({"decays": "abc", "weights": (0.1,)}, "decays"),
        ]
