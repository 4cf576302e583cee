"""Block vectors (docs/math.md §2): tail norms, sliding products (direct, FFT) against dense C."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from minsep.schemes.b_min_sep.loss import b_min_sep_log_ratio
from minsep.schemes.kernels import blocks
from tests.theorems import oracles
from tests.theorems.support import TOL, random_outputs

SHAPES = [(k, n) for k in (1, 2, 3, 4, 5) for n in (1, 2, 3, 4, 7, 12)]


def _coefficients(k: int, seed: int = 0) -> tuple[float, ...]:
    gen = np.random.default_rng(seed + k)
    return tuple(float(v) for v in gen.uniform(0.1, 1.0, size=k))


@pytest.mark.parametrize(("k", "n"), SHAPES)
def test_tail_norms_are_the_dense_column_norms(k: int, n: int) -> None:
    c = _coefficients(k)
    dense = np.sum(oracles.strategy_matrix(c, n) ** 2, axis=0)
    np.testing.assert_allclose(blocks.tail_norms(c, n), dense, rtol=1e-14)


def test_tail_norms_shrink_over_the_last_k_minus_one_steps() -> None:
    c = (0.8, 0.4, 0.4, 0.2)
    norms = blocks.tail_norms(c, 6)
    full = 0.64 + 0.16 + 0.16 + 0.04
    np.testing.assert_allclose(norms, [full, full, full, 0.64 + 0.16 + 0.16, 0.64 + 0.16, 0.64])


@pytest.mark.parametrize("method", ["direct", "fft", "auto"])
@pytest.mark.parametrize(("k", "n"), SHAPES)
def test_sliding_dot_is_c_transpose_y(k: int, n: int, method: str) -> None:
    c = _coefficients(k, 1)
    v = random_outputs(3, n, seed=k * 100 + n)
    expected = v @ oracles.strategy_matrix(c, n)  # row-wise C^T v: <c_i, v> in column i
    got = blocks.sliding_dot(v, c, np, method)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("method", ["direct", "fft", "auto"])
@pytest.mark.parametrize(("k", "n"), SHAPES)
def test_causal_convolve_is_c_times_x(k: int, n: int, method: str) -> None:
    c = _coefficients(k, 2)
    x = random_outputs(3, n, seed=k * 10 + n)
    expected = x @ oracles.strategy_matrix(c, n).T  # row-wise C x
    got = blocks.causal_convolve(x, c, np, method)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_direct_and_fft_agree_at_many_bands() -> None:
    c = _coefficients(64, 3)
    v = random_outputs(5, 500, seed=4)
    direct = blocks.sliding_dot(v, c, np, "direct")
    fft = blocks.sliding_dot(v, c, np, "fft")
    np.testing.assert_allclose(direct, fft, rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(
        blocks.causal_convolve(v, c, np, "direct"),
        blocks.causal_convolve(v, c, np, "fft"),
        rtol=1e-11,
        atol=1e-11,
    )


def test_auto_switches_to_fft_above_the_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = np.fft.rfft

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(np.fft, "rfft", spy)
    v = random_outputs(2, 100, seed=5)
    blocks.sliding_dot(v, _coefficients(blocks.DIRECT_MAX_BANDS), np)
    assert not calls
    blocks.sliding_dot(v, _coefficients(blocks.DIRECT_MAX_BANDS + 1), np)
    assert calls


def test_unknown_method_is_refused() -> None:
    with pytest.raises(ValueError, match="method"):
        blocks.sliding_dot(np.zeros((1, 3)), (1.0,), np, "fast")


@pytest.mark.parametrize("k", [3, 4])
def test_untruncated_tail_norms_would_be_caught_by_brute_force(k: int) -> None:
    """The known public bug: full ||c||^2 in the last k-1 steps (or only the very last step
    shrunk, right for k = 2 only). Both disagree with enumeration; the correct norms agree."""
    n, b, p, sigma = 6, k, 0.4, 0.7
    c = _coefficients(k, 7)
    y = random_outputs(4, n, seed=8)
    dots = blocks.sliding_dot(y, c, np)
    exact = [oracles.b_min_sep_log_ratio(c, row, sigma, p, b, False) for row in y]
    right = blocks.tail_norms(c, n)
    full = np.full(n, float(np.sum(np.square(c))))
    last_only = full.copy()
    last_only[-1] = c[0] ** 2
    ours = b_min_sep_log_ratio(dots, right, sigma, p, b, False, np)
    np.testing.assert_allclose(ours, exact, atol=TOL)
    for wrong in (full, last_only):
        bad = b_min_sep_log_ratio(dots, wrong, sigma, p, b, False, np)
        assert np.max(np.abs(bad - exact)) > 1e-3
