"""The public counts r of truncated b-min-sep by inverse-CDF tables (docs/math.md §6).

r_i ~ Binomial(N_i, p) with N_i = |D| - 1 - (r_{i-b+1} + ... + r_{i-1}) the other examples
available at step i. Each draw takes one uniform u of the host generator and returns
``#{m : F_N(m) <= u}``, ``F_N(m) = Pr[Binomial(N, p) <= m]`` (scipy, float64): exact up to the
float64 rounding of the thresholds, as :func:`~minsep.schemes.kernels.sampling.user_participation`
draws its counts. Thresholds are tabulated once per ``(|D| - 1, p, b)`` for the N of the
stationary band (the number barred is Binomial(|D| - 1, (b-1)p / (1 + (b-1)p)) at
stationarity; the band is 12 standard deviations wide on each side); a draw with N outside it
(the first steps of a cold start, say) falls back on the generator's own binomial, drawn after
the step's uniforms in sample order. Both the array code below and the compiled kernels
(:func:`~minsep.schemes.truncated.cpu_kernels.table_counts_major`, and
:func:`~minsep.schemes.truncated.cpu_kernels.table_counts_steps` for a step with a fallback)
follow exactly this order, so they return the same counts. A table lookup costs a fraction of
numpy's binomial (BTPE with a new N at nearly every draw: about 70 ns on this project's
machine).
"""

from __future__ import annotations

import functools
import math

import attrs
import numpy as np

from minsep.schemes.kernels.sampling import stationary_law

#: Half-width of the tabulated band of N, in standard deviations of the number barred.
BAND_SDS = 12.0
#: Buckets of the guide tables (a power of 2, so that ``floor(u * GUIDE)`` is exact and the
#: compiled kernel takes it from the top bits of the uniform's word).
GUIDE = 256
#: Buckets of the direct tables (a power of 2; one byte each). 2048 rather than 1024: half as
#: many lookups fall in a bucket with a threshold and scan (2.3% against 4.6% at the bench's
#: sizes), worth more than the larger tables' cache misses (0.6 ns per draw at n = 1024).
DIRECT = 2048
#: Direct entries below SPLIT are exact counts (less the base); from SPLIT to SCAN - 1 they
#: are the count at the bucket's start (less the base, plus SPLIT), from which a scan of the
#: thresholds begins; SCAN sends the lookup through the guide.
SPLIT = 128
SCAN = 255
#: Most thresholds and guide entries tabulated per ``(|D| - 1, p, b)`` (about 64 MiB): a band
#: that would need more is narrowed around its centre (more draws fall back on numpy).
MAX_ENTRIES = 1 << 23


@attrs.frozen(eq=False)
class CountTables:
    """Thresholds ``F_N(0), F_N(1), ...`` of Binomial(N, p) for N in ``[low, high]``: those of
    N at ``thresholds[offsets[N - low] : offsets[N - low + 1]]``, up to the first m where
    ``F_N(m)`` rounds to 1 (or m = N - 1), so that ``#{m : F_N(m) <= u}`` for u in [0, 1) is
    the inverse CDF. ``guides[N - low, g]`` is that count at ``u = g / GUIDE``, where a
    lookup for ``u`` in ``[g / GUIDE, (g + 1) / GUIDE)`` starts its scan (same result as a
    binary search, in about two comparisons).

    ``direct[N - low, d]`` answers most lookups with one byte: when no threshold lies in
    ``(d / DIRECT, (d + 1) / DIRECT)``, the count is the same for every u of that bucket and
    equals ``bases[N - low] + direct[N - low, d]`` (entries below :data:`SPLIT`); otherwise
    the entry holds ``SPLIT`` plus the count at the bucket's start, less the base, where the
    scan of the thresholds begins; offsets too large to encode give :data:`SCAN` (through the
    guide). Same counts as the inverse CDF, with about one cached byte read per draw."""

    low: int
    high: int
    offsets: np.ndarray = attrs.field(repr=False)
    thresholds: np.ndarray = attrs.field(repr=False)
    guides: np.ndarray = attrs.field(repr=False)
    direct: np.ndarray = attrs.field(repr=False)
    bases: np.ndarray = attrs.field(repr=False)


def _tail_length(trials: int, p: float) -> int:
    """Thresholds kept for Binomial(trials, p): up to where the CDF rounds to 1."""
    if trials == 0:
        return 0
    sd = math.sqrt(trials * p * (1.0 - p))
    return min(trials, math.ceil(trials * p + 15.0 * sd + 40.0))


@functools.lru_cache(maxsize=16)
def count_tables(others: int, p: float, b: int) -> CountTables:
    """The tables of the stationary band of N for ``others`` other examples (cached,
    read-only)."""
    barred = 1.0 - float(stationary_law(p, b)[0])
    mean = others * barred
    sd = math.sqrt(others * barred * (1.0 - barred))
    spread = BAND_SDS * sd + 32.0
    centre = min(others, max(0, round(others - mean)))
    per_table = _tail_length(centre, p) + GUIDE + 1 + DIRECT // 8
    spread = min(spread, (MAX_ENTRIES // per_table - 1) / 2)
    low = max(0, math.floor(centre - spread))
    high = min(others, math.ceil(centre + spread)) if spread >= 0 else low - 1
    pieces = []
    offsets = np.zeros(high - low + 2, dtype=np.int64)
    guides = np.empty((high - low + 1, GUIDE + 1), dtype=np.int32)
    grid = np.arange(GUIDE + 1) / GUIDE
    direct = np.empty((high - low + 1, DIRECT), dtype=np.uint8)
    bases = np.zeros(high - low + 1, dtype=np.int64)
    from scipy import stats  # ~0.2 s; only when a table is built

    for trials in range(low, high + 1):
        length = _tail_length(trials, p)
        values = np.asarray(stats.binom.cdf(np.arange(length), trials, p), dtype=np.float64)
        if length < trials and values[-1] < 1.0:  # keep every threshold below 1
            length = trials
            values = np.asarray(stats.binom.cdf(np.arange(length), trials, p), dtype=np.float64)
        pieces.append(values)
        offsets[trials - low + 1] = offsets[trials - low] + length
        guides[trials - low] = np.searchsorted(values, grid, side="right")
        bases[trials - low] = _direct_table(values, direct[trials - low])
    thresholds = np.concatenate(pieces) if pieces else np.empty(0)
    for array in (offsets, thresholds, guides, direct, bases):
        array.setflags(write=False)
    return CountTables(
        low=low,
        high=high,
        offsets=offsets,
        thresholds=thresholds,
        guides=guides,
        direct=direct,
        bases=bases,
    )


def _direct_table(values: np.ndarray, out: np.ndarray) -> int:
    """Fill ``out`` (length :data:`DIRECT`) with the direct entries of one table of thresholds;
    returns its base. Bucket d holds u in ``[d / DIRECT, (d + 1) / DIRECT)``, over which the
    count ``#{m : F(m) <= u}`` runs from ``#{F <= d / DIRECT}`` to ``#{F < (d + 1) /
    DIRECT}``: constant exactly when these agree."""
    edges = np.arange(DIRECT + 1) / DIRECT
    first = np.searchsorted(values, edges[:-1], side="right")
    last = np.searchsorted(values, edges[1:], side="left")
    constant = first == last
    base = int(first[constant][0]) if constant.any() else 0
    offset = first - base
    entries = np.where(constant, offset, SPLIT + offset)
    fits = (offset >= 0) & np.where(constant, offset < SPLIT, offset < SCAN - SPLIT)
    out[:] = np.where(fits, entries, SCAN)
    return base


def _initial_ring(
    n_samples: int, others: int, p: float, b: int, warm_start: bool, generator: np.random.Generator
) -> np.ndarray:
    """The last b - 1 counts before step 0, int64 ``(S, b - 1)``: zero cold; warm, the initial
    state counts Multinomial(others, pi), slot s - 1 holding state s."""
    if warm_start:
        initial = generator.multinomial(others, stationary_law(p, b), size=n_samples)
        return np.ascontiguousarray(initial[:, 1:], dtype=np.int64)
    return np.zeros((n_samples, b - 1), dtype=np.int64)


def table_counts(
    n_samples: int,
    n_steps: int,
    others: int,
    p: float,
    min_sep: int,
    warm_start: bool,
    generator: np.random.Generator,
) -> np.ndarray:
    """r_i for every sample (host int64 ``(S, n)``), vectorised over samples with a loop over
    steps (the module docstring gives the law and the order of the draws)."""
    tables = count_tables(others, p, min_sep)
    ring = _initial_ring(n_samples, others, p, min_sep, warm_start, generator)
    ring_size = min_sep - 1
    barred = ring.sum(axis=1)
    counts = np.empty((n_samples, n_steps), dtype=np.int64)
    starts, flat = tables.offsets, tables.thresholds
    last = max(int(flat.size) - 1, 0)
    for t in range(n_steps):
        avail = others - barred
        u = generator.random(n_samples)
        inside = (avail >= tables.low) & (avail <= tables.high)
        sampled = np.zeros(n_samples, dtype=np.int64)
        if tables.high >= tables.low:
            k = np.clip(avail - tables.low, 0, tables.high - tables.low)
            lo, hi = starts[k].copy(), starts[k + 1].copy()
            first = starts[k]
            active = lo < hi
            while active.any():  # binary search: the first index with threshold > u
                mid = (lo + hi) // 2
                above = flat[np.minimum(mid, last)] > u
                lo = np.where(active & ~above, mid + 1, lo)
                hi = np.where(active & above, mid, hi)
                active = lo < hi
            sampled = lo - first
        if not inside.all():
            outside = ~inside
            sampled[outside] = generator.binomial(avail[outside], p)
        counts[:, t] = sampled
        if ring_size:
            slot = t % ring_size  # holds the examples in state 1 at step t: free at t + 1
            barred += sampled - ring[:, slot]
            ring[:, slot] = sampled
    return counts
