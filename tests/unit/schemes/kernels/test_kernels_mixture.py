"""The fused host kernels (numba) of the multi-attribution and truncated loss models against
their portable array code and against brute force (docs/math.md §5, §6).

Both paths consume the random stream identically: the transcripts agree (participations and
counts exactly, noise to rounding) and so do the losses, in every regime the kernels branch on
(linear scale, the log-domain fallback for extreme sigma or a tiny stay probability, p = 1,
b = 1, n < k, FFT correlation, counts outside the tabulated band).
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np
import pytest
from scipy import stats

from minsep.framework.backend import numpy_backend
from minsep.framework.interfaces import Direction
from minsep.schemes.b_min_sep.fused import signal_table
from minsep.schemes.kernels import fused as kernel_fused
from minsep.schemes.kernels.blocks import tail_norms
from minsep.schemes.kernels.jit import NUMBA_AVAILABLE
from minsep.schemes.kernels.mixture_kernels import add_weighted_signal
from minsep.schemes.losses import MultiAttributionLossModel, TruncatedBMinSepLossModel
from minsep.schemes.multi_attribution import cpu_kernels as multi_kernels
from minsep.schemes.multi_attribution.fused import _terms, direct_coefficients
from minsep.schemes.multi_attribution.loss import binomial_log_weights
from minsep.schemes.truncated import cpu_kernels as truncated_kernels
from minsep.schemes.truncated.counts import SCAN, SPLIT, count_tables, table_counts
from minsep.schemes.truncated.fused import host_counts
from tests.theorems import oracles
from tests.theorems.support import TOL, random_outputs

pytestmark = pytest.mark.skipif(not NUMBA_AVAILABLE, reason="needs numba (the fast extra)")

MANY = tuple(float(v) for v in np.linspace(1.0, 0.1, kernel_fused.KERNEL_DIRECT_MAX_BANDS + 12))
SIGMAS = (0.01, 0.05, 0.6, 3.0, 100.0)

MULTI = [
    # (coefficients, n, b, p, k_u)
    ((0.8, 0.5, 0.3), 40, 3, 0.1, 3),
    ((1.0,), 30, 1, 0.3, 2),  # b = 1
    ((0.8, 0.6), 30, 2, 1.0, 3),  # p = 1: no stay branch
    ((0.6, 0.5, 0.4, 0.3), 3, 4, 0.5, 2),  # n < k
    ((0.7, 0.5, 0.3), 120, 4, 0.9, 300),  # (1-p)^k_u = 1e-300: every row in logs
    ((0.7, 0.5, 0.3), 60, 4, 0.9, 400),  # (1-p)^k_u = 1e-400 underflows, yet p < 1
    (MANY, 150, len(MANY), 0.02, 4),  # FFT correlation
]

#: (1-p)^k_u = 1e-120 with every a_ij in range: direct block weights, then the log domain.
DIRECT_IN_LOGS = ((0.8, 0.5, 0.3), 40, 3, 1.0 - 1e-15, 8)

TRUNCATED = [
    # (coefficients, n, b, p, warm, |D|, B_max)
    ((0.8, 0.5, 0.3), 40, 4, 0.2, True, 25, 4),
    ((1.0,), 30, 1, 0.3, False, 10, 2),  # b = 1
    ((0.8, 0.6), 30, 2, 1.0, True, 8, 3),  # p = 1
    ((0.6, 0.5, 0.4, 0.3), 3, 5, 0.5, False, 9, 2),  # n < k
    ((0.7, 0.5, 0.3), 300, 3, 0.3, True, 60, 15),
    ((0.8, 0.5), 60, 4, 0.2, False, 2000, 420),  # cold: first counts outside the tables
    (MANY, 150, len(MANY), 0.02, True, 400, 10),  # FFT correlation
]


def _rng(seed: int) -> Any:
    return numpy_backend().rng(np.random.SeedSequence(seed))


def _multi(case: tuple[Any, ...]) -> MultiAttributionLossModel:
    c, n, b, p, k_u = case
    return MultiAttributionLossModel(
        coefficients=c, n_steps=n, min_sep=b, probability=p, max_user_examples=k_u
    )


def _truncated(case: tuple[Any, ...]) -> TruncatedBMinSepLossModel:
    c, n, b, p, warm, size, max_batch = case
    return TruncatedBMinSepLossModel(
        coefficients=c,
        n_steps=n,
        min_sep=b,
        probability=p,
        warm_start=warm,
        dataset_size=size,
        max_batch_size=max_batch,
    )


def _draw_both(model: Any, direction: Direction, seed: int, rows: int = 29) -> tuple[Any, Any]:
    fast = model.draw(rows, direction, _rng(seed), numpy_backend())
    slow = model.draw(rows, direction, _rng(seed), numpy_backend("array"))
    assert fast.kernels == "numba" and slow.kernels == "array"
    assert fast.stored_signal is None  # the fused transcript keeps x sparsely
    return fast, slow


def _assert_losses_agree(model: Any, fast: Any, slow: Any) -> None:
    for sigma in SIGMAS:
        got = model.privacy_loss(fast, sigma)
        want = model.privacy_loss(slow, sigma)
        assert got.shape == want.shape and np.all(np.isfinite(got))
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
        # the fused transcript evaluated by the array code (signal rebuilt densely)
        again = model.privacy_loss(attrs.evolve(fast, kernels="array"), sigma)
        np.testing.assert_allclose(got, again, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("direction", list(Direction))
@pytest.mark.parametrize("case", [*MULTI, DIRECT_IN_LOGS])
def test_multi_attribution_agrees_on_both_paths(
    case: tuple[Any, ...], direction: Direction
) -> None:
    model = _multi(case)
    fast, slow = _draw_both(model, direction, seed=6)
    np.testing.assert_allclose(fast.noise, slow.noise, atol=1e-12)
    if direction is Direction.REMOVE:
        np.testing.assert_allclose(fast.signal, slow.signal, atol=1e-13)
        assert fast.nbytes() < slow.nbytes() or model.min_sep == 1  # b = 1: n steps kept
    else:
        assert fast.steps is None and slow.signal is None
    _assert_losses_agree(model, fast, slow)


@pytest.mark.parametrize("case", MULTI[:4])
def test_multi_attribution_steps_are_the_dense_counts(case: tuple[Any, ...]) -> None:
    model = _multi(case)
    dense = np.asarray(model.participation(200, _rng(4), numpy_backend()))
    fast = model.draw(200, Direction.REMOVE, _rng(4), numpy_backend())
    rebuilt = np.zeros((200, model.n_steps + 1))
    rebuilt[np.arange(200)[:, None], fast.steps] = fast.step_weights
    np.testing.assert_array_equal(rebuilt[:, : model.n_steps], dense)


def _multi_rows(
    model: MultiAttributionLossModel,
    transcript: Any,
    sigma: float,
    out: np.ndarray | None = None,
    direct: bool = True,
) -> int:
    """Rows done in logs by the kernel (losses into ``out``); ``direct=False`` sums every row
    term by term (no polynomial coefficients)."""
    n = model.n_steps
    weights = binomial_log_weights(model.max_user_examples, model.probability)
    js, log_w = _terms(tuple(weights))
    table = signal_table(model.coefficients, n)
    half_norms = 0.5 / sigma**2 * tail_norms(model.coefficients, n)
    coefs = direct_coefficients(half_norms, js, log_w, table.shape[0])
    out = np.empty(transcript.n_samples) if out is None else out
    return int(
        multi_kernels.multi_attribution_rows(
            np.ascontiguousarray(transcript.noise),
            transcript.steps,
            transcript.step_weights,
            table,
            half_norms,
            js,
            log_w,
            coefs if direct else np.empty((0, 0)),
            1 / sigma,
            1 / sigma**2,
            weights[0],
            model.min_sep,
            out,
        )
    )


def test_multi_attribution_rows_leave_linear_scale_only_when_they_must() -> None:
    model = _multi(((0.8, 0.5, 0.3), 200, 3, 0.2, 3))
    transcript = model.draw(9, Direction.REMOVE, _rng(7), numpy_backend())
    assert _multi_rows(model, transcript, 1.0) == 0
    assert _multi_rows(model, transcript, 0.01) == 9  # |ln G_i| far beyond LIMIT
    for case in MULTI[4:6]:  # (1-p)^k_u tiny, or underflowing to 0 while p < 1
        tiny_stay = _multi(case)
        transcript = tiny_stay.draw(5, Direction.REMOVE, _rng(7), numpy_backend())
        assert _multi_rows(tiny_stay, transcript, 1.0) == 5


@pytest.mark.parametrize("case", [*MULTI, DIRECT_IN_LOGS])
def test_direct_block_weights_agree_with_the_term_by_term_sum(case: tuple[Any, ...]) -> None:
    """Horner's rule on exp(x_i - h_i) and the sum of k_u + 1 exps give the same losses, at
    every sigma (where the direct form is refused the two runs are the same code)."""
    model = _multi(case)
    transcript = model.draw(64, Direction.REMOVE, _rng(8), numpy_backend())
    for sigma in SIGMAS:
        direct, summed = np.empty(64), np.empty(64)
        in_logs = _multi_rows(model, transcript, sigma, direct, direct=True)
        _multi_rows(model, transcript, sigma, summed, direct=False)
        np.testing.assert_allclose(direct, summed, rtol=1e-12, atol=1e-12)
        if case is DIRECT_IN_LOGS:
            assert in_logs == 64


def test_direct_coefficients_refuse_what_would_leave_the_normal_range() -> None:
    half_norms = 0.5 * tail_norms((0.8, 0.5, 0.3), 20)
    js, log_w = _terms(tuple(binomial_log_weights(4, 0.1)))
    coefs = direct_coefficients(half_norms, js, log_w, 3)
    assert coefs.shape == (3, 4)  # the full blocks, then the last two steps
    j = np.arange(1.0, 5.0)
    np.testing.assert_allclose(coefs[0], np.exp(log_w - j * (j - 1) * half_norms[0]))
    np.testing.assert_allclose(coefs[2], np.exp(log_w - j * (j - 1) * half_norms[-1]))
    assert direct_coefficients(1e4 * half_norms, js, log_w, 3).size == 0  # tiny sigma
    many, many_w = _terms(tuple(binomial_log_weights(40, 0.1)))
    assert direct_coefficients(half_norms, many, many_w, 3).size == 0  # J above the cap
    only_top, top_w = _terms(tuple(binomial_log_weights(3, 1.0)))  # p = 1: j = k_u alone
    np.testing.assert_array_equal(direct_coefficients(0 * half_norms, only_top, top_w, 3)[0],
                                  [0.0, 0.0, 1.0])  # fmt: skip


@pytest.mark.parametrize("kernels", ["numba", "array"])
def test_multi_attribution_equals_enumeration_on_each_path(kernels: str) -> None:
    c, n, b, p, k_u = (0.7, 0.5, 0.3), 5, 3, 0.6, 3
    model = _multi((c, n, b, p, k_u))
    y = random_outputs(4, n, seed=31, scale=2.0)
    for sigma in (0.3, 1.0, 2.0):
        expected = [oracles.multi_attribution_log_ratio(c, row, sigma, p, b, k_u) for row in y]
        got = model.log_ratio_at(y, sigma, np, kernels=kernels)
        np.testing.assert_allclose(got, expected, rtol=0, atol=TOL)


@pytest.mark.parametrize("direction", list(Direction))
@pytest.mark.parametrize("case", TRUNCATED)
def test_truncated_agrees_on_both_paths(case: tuple[Any, ...], direction: Direction) -> None:
    model = _truncated(case)
    fast, slow = _draw_both(model, direction, seed=10)
    np.testing.assert_array_equal(fast.counts, slow.counts)
    np.testing.assert_allclose(fast.noise, slow.noise, atol=1e-12)
    np.testing.assert_allclose(fast.signal, slow.signal, atol=1e-13)
    assert fast.nbytes() < slow.nbytes() or model.min_sep == 1  # b = 1: n steps kept
    _assert_losses_agree(model, fast, slow)


def test_truncated_draws_exercise_truncation_and_the_fallback() -> None:
    model = _truncated(TRUNCATED[5])
    tables = count_tables(model.dataset_size - 1, model.probability, model.min_sep)
    assert tables.high < model.dataset_size - 1  # step 0 of a cold start is outside the band
    fast = model.draw(400, Direction.REMOVE, _rng(3), numpy_backend())
    assert np.any(fast.counts >= model.max_batch_size)
    assert set(np.unique(fast.step_weights)) <= {0.0, 1.0, 2.0}
    assert np.any(fast.step_weights == 2.0)


@pytest.mark.parametrize("warm", [False, True])
def test_truncated_equals_enumeration_on_each_path(warm: bool) -> None:
    c, n, b, p, max_batch = (0.7, 0.5, 0.3), 6, 3, 0.45, 2
    model = _truncated((c, n, b, p, warm, 10, max_batch))
    counts = np.random.default_rng(5).integers(0, 2 * max_batch + 2, size=(5, n))
    y = random_outputs(5, n, seed=17, scale=2.0)
    for sigma in (0.5, 1.0, 2.0):
        expected = [
            oracles.truncated_log_ratio(c, row, sigma, p, b, warm, tuple(r), max_batch)
            for row, r in zip(y, counts, strict=True)
        ]
        for kernels in ("numba", "array"):
            got = model.log_ratio_at(y, counts, sigma, np, kernels=kernels)
            np.testing.assert_allclose(got, expected, rtol=0, atol=TOL)


def test_truncated_rows_stay_finite_at_extreme_sigma() -> None:
    """sigma = 1e-3: exponents of 10^6 (log domain); sigma = 1e3: every weight near p."""
    model = _truncated(TRUNCATED[4])
    fast, slow = _draw_both(model, Direction.REMOVE, seed=12, rows=9)
    for sigma in (1e-3, 1e3):
        got = model.log_ratio(fast, sigma)
        assert np.all(np.isfinite(got))
        np.testing.assert_allclose(got, model.log_ratio(slow, sigma), rtol=1e-10, atol=1e-10)
    n = model.n_steps
    values = np.ascontiguousarray(fast.noise)
    out = np.empty(9)
    logs = truncated_kernels.truncated_rows(
        values, fast.steps, fast.step_weights, fast.counts, signal_table(model.coefficients, n),
        0.5e6 * tail_norms(model.coefficients, n), 1e3, 1e6, model.probability, model.min_sep,
        model.warm_start, model.max_batch_size, out,
    )  # fmt: skip
    assert logs == 9


@pytest.mark.parametrize(("others", "p", "b"), [(24, 0.2, 4), (1999, 0.2, 4), (500, 1.0, 3)])
def test_count_tables_are_the_binomial_inverse_cdf(others: int, p: float, b: int) -> None:
    tables = count_tables(others, p, b)
    u = np.random.default_rng(0).random(2000)
    for trials in (tables.low, (tables.low + tables.high) // 2, tables.high):
        k = trials - tables.low
        table = tables.thresholds[tables.offsets[k] : tables.offsets[k + 1]]
        assert table.size == trials or table[-1] == 1.0  # the tail that matters is kept
        exact = np.searchsorted(stats.binom.cdf(np.arange(trials), trials, p), u, side="right")
        np.testing.assert_array_equal(np.searchsorted(table, u, side="right"), exact)
        starts = tables.guides[k, (u * (tables.guides.shape[1] - 1)).astype(int)]
        assert np.all(starts <= exact)  # the guide never starts past the answer
        entries = tables.direct[k, (u * tables.direct.shape[1]).astype(int)].astype(np.int64)
        answered = entries < SPLIT
        assert answered.mean() > 0.5  # most draws are answered by the direct table
        np.testing.assert_array_equal((tables.bases[k] + entries)[answered], exact[answered])
        starts = tables.bases[k] + entries - SPLIT
        scanned = (entries >= SPLIT) & (entries != SCAN)
        assert np.all(starts[scanned] <= exact[scanned])  # a scan never starts past the answer


@pytest.mark.parametrize(("n", "k"), [(20, 4), (7, 4), (30, 1)])
def test_weighted_signal_is_the_cross_gram_sum(n: int, k: int) -> None:
    """The sparse signal (interior participations read the table's last row) against
    ``sum_t w_t <c_i, C e_{j_t}>`` from a dense C, and bit for bit against the per-step
    indexing of the table."""
    rng = np.random.default_rng(4)
    c = rng.random(k)
    steps = np.array([0, 2, n // 2, n - 3, n - 1, n, n], dtype=np.int32)
    steps = np.sort(np.clip(steps, 0, n))
    weights = np.array([2.0, -1.0, 1.0, 0.0, 2.0, 5.0, 5.0])
    table = signal_table(tuple(c), n)
    got = rng.random(n)
    start = got.copy()
    add_weighted_signal(got, steps, weights, table, 0.5)
    dense = np.zeros((n, n))  # C: row t holds c_{t - j} at column j
    for j in range(n):
        dense[j : j + k, j] = c[: n - j]
    gram = dense.T @ dense
    x = np.zeros(n)
    x[steps[steps < n]] += weights[steps < n]
    np.testing.assert_allclose(got, start + 0.5 * gram @ x, rtol=1e-12, atol=1e-12)
    indexed = start.copy()
    for j, w in zip(steps, weights, strict=True):
        if j < n and w != 0.0:
            for i in range(max(0, j - k + 1), min(n, j + k)):
                indexed[i] += 0.5 * w * table[min(k - 1, n - 1 - i), i - j + k - 1]
    np.testing.assert_array_equal(got, indexed)


@pytest.mark.parametrize("warm", [False, True])
def test_compiled_counts_are_the_array_counts(warm: bool) -> None:
    backend = numpy_backend()
    got = host_counts(300, 80, 0.15, 5, warm, 700, _rng(1), backend)
    want = table_counts(300, 80, 700, 0.15, 5, warm, _host_generator(_rng(1)))
    np.testing.assert_array_equal(got, want)
    mean = got[:, 40:].mean()  # near stationarity: p times the available share
    available = 700 * (1 - 4 * 0.15 / (1 + 4 * 0.15))
    assert abs(mean - 0.15 * available) < 0.05 * 0.15 * available


def test_compiled_counts_agree_through_the_guide_tables() -> None:
    """Counts spread over more than the direct entries encode (sd about 26 at p = 0.5): the
    lookups of the tails go through the guide tables, indexed by the word's top bits in the
    compiled kernel and by ``floor(u * GUIDE)`` in the array code."""
    tables = count_tables(4000, 0.5, 2)
    centre = (tables.high - tables.low) // 2
    assert (tables.direct[centre - 20 : centre + 20] == SCAN).mean() > 0.01  # ~6000 draws
    got = host_counts(200, 30, 0.5, 2, True, 4000, _rng(5), numpy_backend())
    want = table_counts(200, 30, 4000, 0.5, 2, True, _host_generator(_rng(5)))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(("samples", "steps"), [(300, 80), (301, 83)])
@pytest.mark.parametrize("warm", [False, True])
def test_compiled_counts_agree_across_tiles(
    monkeypatch: pytest.MonkeyPatch, warm: bool, samples: int, steps: int
) -> None:
    """Small count tiles (about 13 steps): the step-major tiles, their transposes (by words
    for 300 x 80, element by element for 301 x 83) and a cold start's fallback steps inside a
    tile give the array code's counts."""
    from minsep.schemes.truncated import fused as truncated_fused

    monkeypatch.setattr(truncated_fused, "COUNT_TILE_ELEMENTS", 13 * samples)
    got = host_counts(samples, steps, 0.15, 5, warm, 700, _rng(3), numpy_backend())
    want = table_counts(samples, steps, 700, 0.15, 5, warm, _host_generator(_rng(3)))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("steps", [12, 15, 3])
def test_word_transpose_is_the_element_transpose(steps: int) -> None:
    tile = np.random.default_rng(6).integers(-(2**15), 2**15, size=(16, 24 + 8), dtype=np.int16)
    want = np.zeros((24, 40), dtype=np.int16)
    got = want.copy()
    truncated_kernels.scatter_steps(tile, steps, want, 8)
    truncated_kernels.scatter_words(tile, steps, got, 8)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got[:, 8 : 8 + steps], tile[:steps, :24].T)


def _host_generator(rng: Any) -> np.random.Generator:
    from minsep.schemes.kernels.sampling import host_generator

    return host_generator(rng, numpy_backend())


def test_truncated_log_ratio_handles_a_tiny_stay_probability() -> None:
    model = _truncated(((0.8, 0.5), 50, 2, 1.0 - 1e-60, False, 30, 5))
    fast, slow = _draw_both(model, Direction.REMOVE, seed=2, rows=7)
    got = model.log_ratio(fast, 0.8)
    assert np.all(np.isfinite(got)) and math.isclose(1.0 - model.probability, 0.0, abs_tol=1e-15)
    np.testing.assert_allclose(got, model.log_ratio(slow, 0.8), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("entries", [0, 2000])
def test_counts_agree_when_the_tables_are_capped(
    monkeypatch: pytest.MonkeyPatch, entries: int
) -> None:
    """A memory cap narrows the tabulated band (or empties it): more draws fall back on
    numpy's binomial, on both paths alike."""
    from minsep.schemes.truncated import counts as counts_module

    monkeypatch.setattr(counts_module, "MAX_ENTRIES", entries)
    count_tables.cache_clear()
    try:
        tables = count_tables(700, 0.15, 5)
        assert tables.high - tables.low + 1 == (0 if entries == 0 else 3)
        for warm in (False, True):
            got = host_counts(60, 40, 0.15, 5, warm, 700, _rng(2), numpy_backend())
            want = table_counts(60, 40, 700, 0.15, 5, warm, _host_generator(_rng(2)))
            np.testing.assert_array_equal(got, want)
            assert got.min() >= 0 and got.max() <= 700
    finally:
        count_tables.cache_clear()


@pytest.mark.parametrize("case", [MULTI[0], TRUNCATED[4]])
def test_memory_of_a_fused_chunk_is_what_the_model_declares(case: tuple[Any, ...]) -> None:
    """tracemalloc peak of a host draw plus evaluation against ``bytes_per_sample``."""
    import tracemalloc

    model = _multi(case) if len(case) == 5 else _truncated(case)
    backend = numpy_backend()
    model.log_ratio(model.draw(8, Direction.REMOVE, _rng(0), backend), 1.0)  # compile, tables
    samples = 4000
    tracemalloc.start()
    try:
        transcript = model.draw(samples, Direction.REMOVE, _rng(1), backend)
        model.log_ratio(transcript, 1.0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    declared = samples * model.bytes_per_sample(Direction.REMOVE, backend)
    blocks = 2 * 8 * kernel_fused.BLOCK_ELEMENTS  # uniforms and normals
    assert peak < declared + blocks + 8 * 30 * model.n_steps + (1 << 16)


@pytest.mark.parametrize(("others", "p", "b"), [(1999, 0.2, 4), (700, 0.15, 5), (60, 0.9, 2)])
def test_compiled_lookup_is_exact_at_the_edges(others: int, p: float, b: int) -> None:
    """At the thresholds themselves, just below them and at every bucket edge, the direct
    table (or its guide fallback) returns ``#{m : F_N(m) <= u}``."""
    tables = count_tables(others, p, b)
    assert tables.high >= tables.low
    for trials in (tables.low, (tables.low + tables.high) // 2, tables.high):
        k = trials - tables.low
        table = tables.thresholds[tables.offsets[k] : tables.offsets[k + 1]]
        edges = np.arange(tables.direct.shape[1]) / tables.direct.shape[1]
        points = np.concatenate([edges, table, np.nextafter(table, 0.0), np.nextafter(edges, 1)])
        points = points[(points >= 0.0) & (points < 1.0)]
        exact = np.searchsorted(table, points, side="right")
        got = [
            truncated_kernels._lookup(
                tables.offsets, tables.thresholds, tables.guides, tables.direct,
                tables.bases, k, float(u),
            )
            for u in points
        ]  # fmt: skip
        np.testing.assert_array_equal(got, exact)
