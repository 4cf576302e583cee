"""Streaming correlated noise ``(C^-1 Z)[i]`` for banded Toeplitz ``C`` (docs/math.md §8).

Solving ``C W = Z`` row by row is the banded recursion

    W_i = (Z_i - sum_{j=1}^{k-1} c_j W_{i-j}) / c_0,

so only the last ``k - 1`` outputs are needed: they sit in a ring buffer of shape
``(k - 1, d)`` (``d`` the number of parameters), and one matrix-vector product per step applies
the coefficients, rotated to the buffer's current phase. Memory O(k d); every array operation
goes through the backend's namespace ``xp`` (numpy, cupy or any array-API namespace).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from minsep.framework.backend import Backend, RandomSource
from minsep.framework.errors import ConfigurationError
from minsep.strategies.toeplitz import as_coefficients, check_steps


def check_shape(owner: str, shape: Sequence[int]) -> tuple[int, ...]:
    """A parameter template shape: a sequence of non-negative ints."""
    try:
        dims = tuple(shape)
    except TypeError:
        dims = None
    if dims is None or not all(
        isinstance(v, int | np.integer) and not isinstance(v, bool) and v >= 0 for v in dims
    ):
        raise ConfigurationError(
            f"{owner}.shape = {shape!r} is invalid: must be a sequence of non-negative integers"
        )
    return tuple(int(v) for v in dims)


def correlated_noise(
    coefficients: Iterable[float] | np.ndarray,
    shape: Sequence[int],
    n_steps: int,
    rng: RandomSource,
    backend: Backend,
) -> Iterator[Any]:
    """Yield ``(C^-1 Z)[i]`` for i = 1..n as ``backend.xp`` arrays of ``shape``.

    ``Z[i]`` is drawn as ``rng.standard_normal(shape)`` once per step, in order, so the stream
    equals ``solve(C, Z)`` for ``Z = rng.standard_normal((n, *shape))`` from the same seed (on
    generators that fill arrays in order, as numpy's do). Arguments are checked at the call,
    not at the first ``next``.
    """
    c = as_coefficients(coefficients, owner="noise", allow_negative=True)
    dims = check_shape("noise", shape)
    n = check_steps("noise", n_steps)
    return _stream(c, dims, n, rng, backend.xp)


def _stream(
    c: np.ndarray, shape: tuple[int, ...], n: int, rng: RandomSource, xp: Any
) -> Iterator[Any]:
    c0 = float(c[0])
    lags = c.size - 1
    if lags == 0:
        for _ in range(n):
            z = rng.standard_normal(shape)
            yield z if c0 == 1.0 else z / c0
        return
    d = math.prod(shape)
    # Output i goes to slot i % lags. At step i, slot s holds W_{i-j} with
    # j = ((i - s - 1) % lags) + 1, so its weight is c_j; at i = 0 that is ``phase0``, and
    # step i uses phase0 rolled by i.
    phase0 = [float(c[((-s - 1) % lags) + 1]) for s in range(lags)]
    base = xp.asarray(phase0, dtype=xp.float64)
    buffer = xp.zeros((lags, d), dtype=xp.float64)
    for i in range(n):
        z = xp.reshape(rng.standard_normal(shape), (d,))
        weights = xp.roll(base, i % lags)
        out = (z - weights @ buffer) / c0
        buffer[i % lags, :] = out
        yield xp.reshape(out, shape)
