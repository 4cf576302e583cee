"""The participation chain drawn by geometric gaps (docs/math.md §3, paper Algorithms 1-2).

:func:`~minsep.schemes.kernels.sampling.chain_steps` runs the availability chain by its renewal
structure, one uniform per participation plus the one that leaves the horizon. These tests pin
that the gaps give the exact law of the pattern (enumerated over every path of the chain) on
both host kernel sets, that the test has the power to see a wrong law, and that a sample takes
exactly ``participations + 1`` step uniforms.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from minsep.framework.backend import numpy_backend
from minsep.schemes.kernels.jit import NUMBA_AVAILABLE
from minsep.schemes.kernels.sampling import chain_steps, steps_to_pattern
from tests.statistical.test_loss_patterns import REJECT, chi_square_pvalue
from tests.theorems import oracles

SAMPLES = 30_000
ACCEPT = 1e-3  # fixed seeds: a correct sampler passes deterministically

KERNEL_SETS = ["array", pytest.param("numba", marks=pytest.mark.skipif(
    not NUMBA_AVAILABLE, reason="needs numba"))]  # fmt: skip

CHAINS = [
    # (n, b, p, warm): several participations per sample, rounds ending at different times
    (6, 2, 0.45, False),
    (7, 3, 0.3, True),
    (6, 1, 0.25, True),  # b = 1: Poisson
    (5, 4, 0.6, True),  # b close to n: at most two participations
    (7, 2, 0.05, False),  # most samples leave in the first round
]


class _Counting:
    """A RandomSource that records how many uniforms each call asked for."""

    def __init__(self, seed: int) -> None:
        self._inner = numpy_backend().rng(np.random.SeedSequence(seed))
        self.calls: list[int] = []

    def random(self, shape: Any) -> Any:
        self.calls.append(int(np.prod(shape)))
        return self._inner.random(shape)

    def standard_normal(self, shape: Any) -> Any:
        return self._inner.standard_normal(shape)


def _patterns(n: int, b: int, p: float, warm: bool, kernels: str, seed: int) -> np.ndarray:
    rng = numpy_backend(kernels).rng(np.random.SeedSequence(seed))
    steps = chain_steps(SAMPLES, n, p, b, warm, rng, np, kernels=kernels)
    return np.asarray(steps_to_pattern(steps, n, np))


@pytest.mark.parametrize("kernels", KERNEL_SETS)
@pytest.mark.parametrize(("n", "b", "p", "warm"), CHAINS)
def test_gaps_give_the_exact_pattern_law(
    n: int, b: int, p: float, warm: bool, kernels: str
) -> None:
    rows = [tuple(int(v) for v in row) for row in _patterns(n, b, p, warm, kernels, seed=n + b)]
    assert chi_square_pvalue(rows, oracles.b_min_sep_law(n, p, b, warm)) > ACCEPT
    # power: the same sample refuses a chain with another rate
    assert chi_square_pvalue(rows, oracles.b_min_sep_law(n, 0.8 * p, b, warm)) < REJECT


@pytest.mark.parametrize(("n", "b", "p", "warm"), CHAINS)
def test_one_uniform_per_participation_and_one_to_leave(
    n: int, b: int, p: float, warm: bool
) -> None:
    """The stream contract: ``S`` start uniforms (warm only), then rounds over the samples
    still inside the horizon; in all, each sample takes its participations plus one."""
    samples = 2000
    rng = _Counting(7)
    steps = chain_steps(samples, n, p, b, warm, rng, np, kernels="array")
    calls = rng.calls[1:] if warm else rng.calls
    if warm:
        assert rng.calls[0] == samples
    participations = int(np.sum(np.asarray(steps) < n))
    assert sum(calls) == participations + samples
    assert calls[0] == samples and all(a >= c for a, c in itertools.pairwise(calls))


@pytest.mark.skipif(not NUMBA_AVAILABLE, reason="needs numba")
@pytest.mark.parametrize("p", [1e-300, 1e-9, 0.5, 1.0 - 1e-12, 1.0])
def test_extreme_rates_agree_on_both_paths(p: float) -> None:
    """Waits clamp at n for tiny p (no overflow of the float-to-int cast); p = 1 joins every
    b steps; the compiled rounds give the array code's steps bit for bit."""
    n, b = 40, 3
    both = [
        chain_steps(
            500, n, p, b, True, numpy_backend(k).rng(np.random.SeedSequence(1)), np, kernels=k
        )
        for k in ("numba", "array")
    ]
    np.testing.assert_array_equal(both[0], both[1])
    if p == 1.0:  # from state s the example joins at s, s + b, ...
        assert np.all(np.diff(both[0], axis=1)[both[0][:, 1:] < n] == b)
    if p == 1e-300:
        assert np.all(both[0] == n)
