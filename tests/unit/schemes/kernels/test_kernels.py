"""The fused host kernels (numba) against the portable array code of the loss models.

Both paths consume the random stream identically: the transcripts agree (steps exactly, noise
to rounding) and so do the losses, for every regime the kernels branch on (linear scale,
renormalisation, the log-domain fallback, p = 1, b = 1, b > n, n < k, FFT correlation).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tracemalloc
from typing import Any

import attrs
import numpy as np
import pytest

from minsep.framework.backend import get_backend, namespace_backend, numpy_backend
from minsep.framework.interfaces import Direction
from minsep.framework.kernel_table import Participation
from minsep.schemes.b_min_sep import cpu_kernels
from minsep.schemes.b_min_sep import fused as b_min_sep_fused
from minsep.schemes.b_min_sep.loss import b_min_sep_log_ratio
from minsep.schemes.kernels import blocks, fused, sampling
from minsep.schemes.kernels.jit import NUMBA_AVAILABLE
from minsep.schemes.losses import BMinSepLossModel

pytestmark = pytest.mark.skipif(not NUMBA_AVAILABLE, reason="needs numba (the fast extra)")

MANY = tuple(float(v) for v in np.linspace(1.0, 0.1, fused.KERNEL_DIRECT_MAX_BANDS + 12))

MODELS = [
    # (coefficients, n, b, p, warm)
    ((1.0,), 50, 1, 0.1, False),  # Poisson
    ((0.8, 0.5, 0.3), 64, 3, 0.2, True),
    ((0.8, 0.5, 0.3), 64, 6, 0.2, False),
    ((0.6, 0.5, 0.4, 0.3), 3, 4, 0.5, True),  # n < k
    ((1.0, 0.2), 4, 7, 0.3, True),  # b > n
    ((0.8, 0.6), 40, 2, 1.0, True),  # p = 1
    ((0.8, 0.6), 40, 2, 1.0 - 1e-12, False),  # q tiny
    (MANY, 150, len(MANY), 0.02, True),  # FFT correlation
]
SIGMAS = (0.01, 0.05, 0.3, 1.0, 10.0)


def _model(case: tuple[Any, ...]) -> BMinSepLossModel:
    c, n, b, p, warm = case
    return BMinSepLossModel(coefficients=c, n_steps=n, min_sep=b, probability=p, warm_start=warm)


def _rng(seed: int) -> Any:
    return numpy_backend().rng(np.random.SeedSequence(seed))


def _array_path(transcript: Any) -> Any:
    """The same transcript, evaluated by the portable array code."""
    return attrs.evolve(transcript, kernels="array")


def test_kernels_are_on_for_host_numpy_only() -> None:
    assert numpy_backend().kernels == "numba"
    assert numpy_backend("array").kernels == "array"
    assert get_backend("numpy:array") is numpy_backend("array")
    xp = pytest.importorskip("array_api_strict")
    assert namespace_backend(xp).kernels == "array"


def test_environment_switch_disables_the_kernels() -> None:
    code = "from minsep.framework.backend import numpy_backend; print(numpy_backend().kernels)"
    env = {**os.environ, "MINSEP_PURE_ARRAYS": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "array", out.stderr


def test_models_run_where_numba_cannot_be_imported() -> None:
    """With numba unimportable the kernels are off and the array path gives the same losses."""
    code = """
import sys
sys.modules["numba"] = None  # import numba now raises ImportError
import numpy as np
from minsep.framework.backend import get_backend, namespace_backend, numpy_backend
from minsep.framework.interfaces import Direction
from minsep.schemes.losses import BMinSepLossModel
from minsep.schemes.kernels.jit import NUMBA_AVAILABLE
assert not NUMBA_AVAILABLE and numpy_backend().kernels == "array"
model = BMinSepLossModel(coefficients=(0.8, 0.5), n_steps=30, min_sep=2, probability=0.2,
                         warm_start=True)
backend = numpy_backend()
transcript = model.draw(5, Direction.REMOVE, backend.rng(np.random.SeedSequence(1)), backend)
import json
print(json.dumps(model.log_ratio(transcript, 0.9).tolist()))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    model = BMinSepLossModel(
        coefficients=(0.8, 0.5), n_steps=30, min_sep=2, probability=0.2, warm_start=True
    )
    transcript = model.draw(5, Direction.REMOVE, _rng(1), numpy_backend())
    got = json.loads(out.stdout)
    np.testing.assert_allclose(got, model.log_ratio(transcript, 0.9), rtol=1e-12)


def test_exp_row_is_within_two_ulp() -> None:
    limit = cpu_kernels.LIMIT
    x = np.concatenate(
        [np.linspace(-limit, limit, 20001), np.random.default_rng(0).normal(0, 5, 5000)]
    )
    x = np.concatenate([x, [0.0, -0.0, 1e-300, math.log(2.0) / 2, -math.log(2.0) / 2]])
    out = np.empty_like(x)
    assert not cpu_kernels.exp_row(x, out, x.size)
    np.testing.assert_allclose(out, np.exp(x), rtol=4.5e-16, atol=0)


def test_exp_row_is_within_two_ulp_of_the_exact_exponential() -> None:
    """Against 40-digit exponentials (not numpy's, itself within an ulp): the polynomial's
    truncation, its coefficients' rounding and the reduction together stay within 2 ulp, on
    both sides of every reduction boundary m ln 2 +- ln(2)/2."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    rng = np.random.default_rng(3)
    half = math.log(2.0) / 2
    edges = (np.arange(-20, 21) * math.log(2.0))[:, None] + np.array([-half, half])
    x = np.concatenate(
        [rng.uniform(-half, half, 1500), rng.uniform(-300.0, 300.0, 1500), edges.ravel(),
         np.nextafter(edges.ravel(), np.inf), np.nextafter(edges.ravel(), -np.inf)]
    )  # fmt: skip
    out = np.empty_like(x)
    cpu_kernels.exp_row(x, out, x.size)
    worst = max(
        abs(mpmath.mpf(float(v)) / mpmath.exp(mpmath.mpf(float(a))) - 1)
        for a, v in zip(x, out, strict=True)
    )
    assert worst <= 2 * 2.0**-53, float(worst)


@pytest.mark.parametrize("wild", [301.0, -1e4, np.nan, np.inf])
def test_exp_row_flags_and_clamps_values_outside_the_limit(wild: float) -> None:
    x = np.array([0.5, wild, -2.0])
    out = np.empty(3)
    assert cpu_kernels.exp_row(x, out, 3)  # the row will be redone in logs
    assert out[0] == pytest.approx(math.exp(0.5), rel=1e-15)
    assert out[2] == pytest.approx(math.exp(-2.0), rel=1e-15)


def test_the_bit_casts_are_exact_both_ways() -> None:
    """``as_bits`` / ``from_bits`` compiled are numpy's views of the same IEEE bits, for
    normal, subnormal, signed-zero, infinite and NaN values."""
    from minsep.schemes.kernels import float_bits
    from minsep.schemes.kernels.jit import njit

    @njit(cache=False)  # a test's own kernel: nothing to keep on disk
    def round_trip(x: np.ndarray, bits: np.ndarray, back: np.ndarray) -> None:
        for i in range(x.size):
            bits[i] = float_bits.as_bits(x[i])
            back[i] = float_bits.from_bits(bits[i])

    x = np.array([0.0, -0.0, 1.0, -2.5, 5e-324, -1e-310, 1.7e308, np.inf, -np.inf, np.nan])
    x = np.concatenate([x, np.random.default_rng(4).normal(0, 1e3, 200)])
    bits, back = np.empty(x.size, dtype=np.int64), np.empty_like(x)
    round_trip(x, bits, back)
    np.testing.assert_array_equal(bits, x.view(np.int64))
    np.testing.assert_array_equal(back.view(np.int64), x.view(np.int64))
    assert [float_bits._as_bits_reference(v) for v in x[:4]] == list(x[:4].view(np.int64))
    assert float_bits._from_bits_reference(int(x.view(np.int64)[3])) == -2.5


@pytest.mark.parametrize(("k", "n"), [(1, 5), (3, 2), (3, 9), (5, 5), (8, 30)])
def test_signal_table_gives_the_dense_signal(k: int, n: int) -> None:
    c = tuple(float(v) for v in np.random.default_rng(k).uniform(0.1, 1.0, k))
    table = cpu_kernels.signal_table(np.asarray(c), n)
    ke = min(k, n)
    for j in range(n):  # one participation at j
        x = np.zeros((1, n))
        x[0, j] = 1.0
        dense = blocks.signal_dots(x, c, np)[0]
        sparse = np.zeros(n)
        for i in range(max(0, j - ke + 1), min(n, j + ke)):
            sparse[i] = table[min(ke - 1, n - 1 - i), i - j + ke - 1]
        np.testing.assert_allclose(sparse, dense, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("case", MODELS)
def test_steps_are_identical_on_both_paths(case: tuple[Any, ...]) -> None:
    model = _model(case)
    fast = model.steps(300, _rng(3), numpy_backend())
    slow = model.steps(300, _rng(3), numpy_backend("array"))
    assert fast.dtype == slow.dtype == np.int32
    np.testing.assert_array_equal(fast, slow)


@pytest.mark.parametrize("case", MODELS)
def test_steps_respect_the_chain(case: tuple[Any, ...]) -> None:
    """Ascending, at least b apart, padded with n; the pattern has the same steps."""
    model = _model(case)
    n, b = model.n_steps, model.min_sep
    steps = model.steps(500, _rng(4), numpy_backend())
    pattern = sampling.steps_to_pattern(steps, n, np)
    for row, x in zip(steps, pattern, strict=True):
        real = row[row < n]
        assert np.all(row[len(real) :] == n)
        assert np.all(np.diff(real) >= b)
        np.testing.assert_array_equal(np.flatnonzero(x), real)


class _NoGenerator:
    """A RandomSource without the ``generator`` attribute (the host path's slow branch)."""

    def __init__(self, seed: int) -> None:
        self._inner = _rng(seed)

    def standard_normal(self, shape: Any) -> Any:
        return self._inner.standard_normal(shape)

    def random(self, shape: Any) -> Any:
        return self._inner.random(shape)


@pytest.mark.parametrize("bands", [(1.0,), (0.7, 0.5, 0.3), MANY])
@pytest.mark.parametrize("n", [1, 7, 300])
def test_host_noise_is_the_sliding_dot_of_the_same_normals(
    bands: tuple[float, ...], n: int
) -> None:
    rows = fused._block_rows(n, fft=len(bands) > fused.KERNEL_DIRECT_MAX_BANDS) * 2 + 3
    expected = blocks.sliding_dot(_rng(5).standard_normal((rows, n)), bands, np, "direct")
    np.testing.assert_allclose(fused.host_noise(rows, n, bands, _rng(5)), expected, atol=1e-12)
    np.testing.assert_allclose(
        fused.host_noise(rows, n, bands, _NoGenerator(5)), expected, atol=1e-12
    )


@pytest.mark.parametrize("direction", list(Direction))
@pytest.mark.parametrize("case", MODELS)
def test_losses_agree_on_both_paths(case: tuple[Any, ...], direction: Direction) -> None:
    model = _model(case)
    backend = numpy_backend()
    fast = model.draw(37, direction, _rng(6), backend)
    slow = model.draw(37, direction, _rng(6), numpy_backend("array"))
    np.testing.assert_array_equal(
        fast.steps if fast.steps is not None else [], slow.steps if slow.steps is not None else []
    )
    np.testing.assert_allclose(fast.noise, slow.noise, atol=1e-12)
    if direction is Direction.REMOVE:  # the signal rebuilt from steps is the stored one
        assert fast.stored_signal is None and slow.stored_signal is not None
        np.testing.assert_allclose(fast.signal, slow.signal, atol=1e-13)
    for sigma in SIGMAS:
        got = model.privacy_loss(fast, sigma)
        want = model.privacy_loss(slow, sigma)
        assert got.shape == (37,) and np.all(np.isfinite(got))
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def _row_inputs(model: BMinSepLossModel, transcript: Any, sigma: float) -> tuple[Any, ...]:
    n, p = model.n_steps, model.probability
    base = math.log(p) - 0.5 / sigma**2 * blocks.tail_norms(model.coefficients, n)
    steps = transcript.steps
    if steps is None:
        steps = np.empty((transcript.n_samples, 0), np.int32)
    return (
        np.ascontiguousarray(transcript.noise),
        np.ascontiguousarray(steps),
        b_min_sep_fused.signal_table(model.coefficients, n),
        base,
        1.0 / sigma,
        1.0 / sigma**2,
        math.log(p),
        1.0 - p,
        p,
        model.min_sep,
        model.warm_start,
    )


def test_rows_leave_linear_scale_only_when_they_must() -> None:
    """sigma = 1: every row in linear scale; sigma = 0.01: |ln r| > LIMIT, every row in logs;
    p = 1 with alternating huge and tiny block ratios: the two chains of b = 2 drift apart by
    more than FLOOR, so linear scale gives up; each agrees with the array code."""
    model = _model(((0.8, 0.5, 0.3), 400, 3, 0.2, True))
    transcript = model.draw(9, Direction.REMOVE, _rng(7), numpy_backend())
    for sigma, expect_logs in ((1.0, 0), (0.01, 9)):
        out = np.empty(9)
        done_in_logs = cpu_kernels.b_min_sep_rows(*_row_inputs(model, transcript, sigma), out)
        assert done_in_logs == expect_logs
        expected = model.log_ratio(_array_path(transcript), sigma)
        np.testing.assert_allclose(out, expected, rtol=1e-12)
    n, b = 600, 2
    dots = np.tile(np.where(np.arange(n) % 2 == 0, 9.0, -9.0), (5, 1))
    c = (1.0,)
    base = np.full(n, -0.5 / 0.35**2)
    out = np.empty(5)
    table = b_min_sep_fused.signal_table(c, n)
    done_in_logs = cpu_kernels.b_min_sep_rows(
        dots, np.empty((5, 0), np.int32), table, base, 1 / 0.35**2, 1 / 0.35**2, 0.0, 0.0, 1.0, b,
        True, out,
    )  # fmt: skip
    assert done_in_logs == 5
    expected = b_min_sep_log_ratio(dots, np.ones(n), 0.35, 1.0, b, True, np)
    np.testing.assert_allclose(out, expected, rtol=1e-12)


def test_renormalisation_is_exercised_and_exact() -> None:
    """sigma = 0.2 over 3000 steps: ln f grows to thousands, far past HIGH, in linear scale."""
    model = _model(((0.8, 0.5, 0.3), 3000, 3, 0.3, False))
    transcript = model.draw(6, Direction.REMOVE, _rng(8), numpy_backend())
    out = np.empty(6)
    assert cpu_kernels.b_min_sep_rows(*_row_inputs(model, transcript, 0.2), out) == 0
    assert np.all(out > 2 * math.log(cpu_kernels.HIGH))  # several renormalisations each
    np.testing.assert_allclose(out, model.log_ratio(_array_path(transcript), 0.2), rtol=1e-12)


@pytest.mark.parametrize("rows", [1, 3, 4, 5, 9])
def test_a_row_does_not_depend_on_its_group(rows: int) -> None:
    """Rows are interleaved in groups of GROUP; each result is bit-identical alone."""
    model = _model(((0.8, 0.5, 0.3), 90, 3, 0.25, True))
    transcript = model.draw(rows, Direction.REMOVE, _rng(9), numpy_backend())
    together = model.log_ratio(transcript, 0.7)
    for s in range(rows):
        alone = b_min_sep_fused.host_b_min_sep(
            transcript.noise[s : s + 1], Participation(steps=transcript.steps[s : s + 1]), 0.7,
            1 / 0.7, model,
        )  # fmt: skip
        assert alone[0] == together[s]


def test_memory_is_bounded_by_the_transcript() -> None:
    """A host draw allocates its transcript plus O(block) scratch; a log-ratio O(S + n)."""
    model = _model(((0.8, 0.5, 0.3), 2000, 3, 0.2, True))
    backend = numpy_backend()
    model.log_ratio(model.draw(8, Direction.REMOVE, _rng(0), backend), 1.0)  # compile first
    samples = 600
    tracemalloc.start()
    try:
        transcript = model.draw(samples, Direction.REMOVE, _rng(1), backend)
        _, peak_draw = tracemalloc.get_traced_memory()
        kept = transcript.nbytes()
        assert kept == model.transcript_bytes(samples, Direction.REMOVE, backend)
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        model.log_ratio(transcript, 1.0)
        _, peak_ratio = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak_draw < kept + 3 * 8 * fused.BLOCK_ELEMENTS + (1 << 20)  # direct: 3 bands
    # row buffers: 14 rows of n (+ b) float64, plus the inputs built per call
    assert peak_ratio - before < 160 * model.n_steps + 16 * samples + (1 << 16)


def _other_models() -> list[Any]:
    from minsep.schemes.losses import (
        BallsInBinsLossModel,
        MultiAttributionLossModel,
        TruncatedBMinSepLossModel,
    )

    bands = (0.8, 0.5, 0.3)
    return [
        BallsInBinsLossModel(coefficients=bands, n_steps=40, cycle_length=6),
        BallsInBinsLossModel(coefficients=MANY, n_steps=90, cycle_length=7),
        MultiAttributionLossModel(
            coefficients=bands, n_steps=40, min_sep=3, probability=0.1, max_user_examples=3
        ),
        TruncatedBMinSepLossModel(
            coefficients=bands,
            n_steps=40,
            min_sep=4,
            probability=0.2,
            warm_start=True,
            dataset_size=25,
            max_batch_size=4,
        ),
    ]


@pytest.mark.parametrize("direction", list(Direction))
@pytest.mark.parametrize("index", range(4))
def test_other_models_agree_on_both_paths(index: int, direction: Direction) -> None:
    """Blockwise host noise and the compiled log-domain recursion give the array path's
    transcripts and losses."""
    model = _other_models()[index]
    backend = numpy_backend()
    fast = model.draw(23, direction, _rng(10), backend)
    slow = model.draw(23, direction, _rng(10), numpy_backend("array"))
    np.testing.assert_allclose(fast.noise, slow.noise, atol=1e-12)
    for sigma in (0.05, 0.6, 3.0):
        got = model.privacy_loss(fast, sigma)
        want = model.privacy_loss(slow, sigma)
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("log_stay", [math.log(0.7), -math.inf])
def test_compiled_log_recursion_is_the_array_recursion(log_stay: float) -> None:
    from minsep.schemes.kernels.recursion import backward_log_recursion

    log_go = np.random.default_rng(3).normal(-1.0, 3.0, size=(7, 30))
    for b in (1, 2, 5, 40):
        fast = backward_log_recursion(log_go, log_stay, b, np, kernels="numba")
        slow = backward_log_recursion(log_go, log_stay, b, np, kernels="array")
        assert len(fast) == len(slow) == b
        np.testing.assert_allclose(np.stack(fast), np.stack(slow), rtol=1e-13, atol=1e-13)
