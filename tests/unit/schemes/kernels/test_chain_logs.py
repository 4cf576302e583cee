"""The chain's compiled logarithms and waits (:mod:`minsep.schemes.kernels.chain_logs`): within a
few ulp of ln(1 - u), and waits equal to those numpy's ``log`` gives, bit for bit, including
the quotients that lie next to an integer (sent to numpy)."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from minsep.schemes.kernels import chain_logs
from minsep.schemes.kernels.jit import NUMBA_AVAILABLE

pytestmark = pytest.mark.skipif(not NUMBA_AVAILABLE, reason="needs numba (the fast extra)")

GRID = 2.0**-53  # numpy's uniforms are multiples of this in [0, 1)


def _uniforms(seed: int, size: int) -> np.ndarray:
    """Random uniforms plus the edges: 0, the largest, tiny ones, ones next to 1, and the
    values whose 1 - u sits at or next to the split points sqrt(1/2) 2^j and the powers of 2."""
    rng = np.random.default_rng(seed)
    edges = [0.0, GRID, 2 * GRID, 1e-12, 1e-300, 0.5, 0.25, 0.75, 1.0 - GRID, 1.0 - 2 * GRID]
    for j in range(0, 60, 3):
        for x in (math.sqrt(0.5) * 2.0**-j, 2.0**-j):
            for y in (np.nextafter(x, 0.0), x, np.nextafter(x, 2.0)):
                edges.append(1.0 - y)
    values = np.concatenate(
        [
            np.asarray(edges),
            rng.random(size),
            rng.random(1000) * 1e-9,  # 1 - u next to 1
            1.0 - rng.random(1000) * 1e-9,  # 1 - u tiny
        ]
    )
    return np.clip(np.floor(values / GRID) * GRID, 0.0, 1.0 - GRID)


def test_the_logarithms_are_within_a_few_ulp() -> None:
    u = _uniforms(1, 1 << 18)
    out = np.empty_like(u)
    chain_logs.log_complements(u, out)
    reference = np.log1p(-u)
    assert np.all(out[u == 0.0] == 0.0) and np.all(out[u > 0.0] < 0.0)
    ulps = np.abs(out - reference) / np.spacing(np.abs(reference))
    assert ulps[u > 0.0].max() <= 3.0
    mpmath.mp.dps = 40
    picks = np.concatenate([np.arange(1, 200), np.random.default_rng(2).integers(0, u.size, 2000)])
    for i in picks:
        exact = mpmath.log1p(-mpmath.mpf(float(u[i])))
        assert abs(mpmath.mpf(float(out[i])) - exact) <= 4 * 2.0**-53 * abs(exact), u[i]


def _numpy_waits(u: np.ndarray, log_stay: float, b: int, n: int) -> np.ndarray:
    """The array code's waits: ``min(floor(log(1 - u) / log_stay), n) + b``."""
    return np.minimum(np.floor(np.log(1.0 - u) / log_stay), float(n)) + float(b)


@pytest.mark.parametrize(
    ("p", "b", "n"),
    [(1 / 9, 8, 1024), (0.5, 1, 300), (1e-7, 3, 7200), (0.999, 2, 100), (1.0, 4, 50)],
)
def test_the_waits_are_numpys_bit_for_bit(p: float, b: int, n: int) -> None:
    u = _uniforms(3, 1 << 17)
    log_stay = math.log1p(-p) if p < 1.0 else -math.inf
    waits = np.empty_like(u)
    chain_logs.round_waits(u, waits, log_stay, b, n)
    np.testing.assert_array_equal(waits, _numpy_waits(u, log_stay, b, n))


def test_a_quotient_next_to_an_integer_takes_numpys_log() -> None:
    """u with ln(1 - u) / ln(1 - p) within about 1e-14 of k: the kernel flags every one, and the
    round's waits are numpy's."""
    p, b, n = 1 / 9, 8, 1024
    log_stay = math.log1p(-p)
    near = []
    for k in range(1, 41):
        u = float(np.round(-math.expm1(k * log_stay) / GRID) * GRID)
        if abs(math.log1p(-u) / log_stay - k) < 1e-13 * k:
            near.append(u)
    assert len(near) >= 30
    u = np.asarray(near)
    flagged = chain_logs.log_waits(u, np.empty_like(u), log_stay, b, n)
    assert flagged == u.size
    mixed = np.concatenate([u, _uniforms(4, 5000)])
    waits = np.empty_like(mixed)
    chain_logs.round_waits(mixed, waits, log_stay, b, n)
    np.testing.assert_array_equal(waits, _numpy_waits(mixed, log_stay, b, n))
