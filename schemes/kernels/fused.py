"""Host drivers of the fused kernels: blockwise noise and the b-min-sep log-ratio (numba path).

Used by the ``"numba"`` kernel set (:attr:`~minsep.framework.backend.Backend.kernels`; host numpy
arrays). They compute exactly what the portable array code computes (docs/math.md §2-§3), from the
same random stream, with O(block) scratch memory instead of O(chunk):

* :func:`host_noise` draws the ``(S, n)`` standard normals in row blocks into a reused buffer
  and correlates each block with c (direct sums, overlap-save or one long FFT per row, as
  :mod:`.correlation` measures fastest here), writing ``<c_i, z>`` straight into the
  transcript array, itself reused across chunks (:mod:`.buffers`);
* :func:`minsep.schemes.b_min_sep.fused.host_b_min_sep` evaluates b-min-sep's ``ln P/Q`` for
  every sample in one compiled call.

Memory of a draw: the transcript itself (``8 n`` bytes per sample of noise, ``4 ceil(n/b)`` of
steps) plus at most 3 MiB of block buffers, whatever the chunk size. An evaluation adds
``8 (13 n + 5 b)`` bytes of row buffers and the ``8 S`` bytes of its result.

**Memory of a calibration run** (Algorithm 5 over a sigma sweep, per worker process): the
engine keeps one transcript per chunk and direction while it evaluates every sigma on it, so
the peak is ``chunk_size * (8 n + 4 ceil(n / b))`` bytes for b-min-sep REMOVE (``8 n`` under
ADD) plus the block and row buffers above, one loss vector (``8 chunk_size``) and the tallies:
independent of the number of samples and of sigmas. For example n = 7200 with chunks of 4096
samples holds 236 MB; n = 1024 with chunks of 65536 holds 570 MB
(:meth:`~minsep.schemes.b_min_sep.loss.BMinSepLossModel.transcript_bytes` gives the figure for a
model).

**Precision.** Normals, correlations and recursions are float64 throughout. float32 normals
would not be faster (numpy draws them at the same rate), and float32 storage of the kept
correlations, which would halve memory, perturbs each ``ln r_i`` by about ``6e-8 |v_i| /
sigma``; that is small next to Monte Carlo error but is a bias the accounting would have to
argue away, so it is not done.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import numpy as np

from minsep.framework.backend import RandomSource
from minsep.schemes.kernels import correlation, sfc64
from minsep.schemes.kernels.blocks import effective_coefficients
from minsep.schemes.kernels.buffers import reusable

#: The crossover of the deterministic rule (``MINSEP_CORRELATION=fixed``); by default the
#: method is measured on the running machine (:mod:`.correlation`).
KERNEL_DIRECT_MAX_BANDS = correlation.FIXED_DIRECT_MAX_BANDS

#: Target elements per normal block with direct correlation (512 KiB of float64: half the
#: per-block overhead of 2^15 rows; the measured effect: docs/performance.md).
BLOCK_ELEMENTS = 1 << 16
#: Target elements per block with FFT correlation: batched transforms of ~16 rows run faster
#: than of 4 (at n = 7200, docs/performance.md), for 3 MiB of block, spectrum and inverse.
FFT_BLOCK_ELEMENTS = 1 << 17


def generator_of(rng: RandomSource) -> np.random.Generator | None:
    """The numpy Generator behind ``rng`` when it exposes one as ``rng.generator`` (the host
    backend's source does), else None. With it, normals are drawn into reused buffers
    (``standard_normal(out=...)``); without it, ``rng.standard_normal(shape)`` per block gives
    the same numbers."""
    generator = getattr(rng, "generator", None)
    return generator if isinstance(generator, np.random.Generator) else None


def _block_rows(n_steps: int, fft: bool = False) -> int:
    return max(1, (FFT_BLOCK_ELEMENTS if fft else BLOCK_ELEMENTS) // n_steps)


def host_noise(
    n_samples: int, n_steps: int, coefficients: tuple[float, ...], rng: RandomSource
) -> np.ndarray:
    """``<c_i, z>`` for ``z = rng.standard_normal((n_samples, n_steps))`` (drawn blockwise, same
    stream): float64 ``(n_samples, n_steps)``, in a reused array (:mod:`.buffers`)."""
    out = reusable((n_samples, n_steps), role="noise")
    for _ in noise_blocks(n_samples, n_steps, coefficients, rng, out=out):
        pass
    return out


def noise_blocks(
    n_samples: int,
    n_steps: int,
    coefficients: tuple[float, ...],
    rng: RandomSource,
    out: np.ndarray | None = None,
) -> Iterator[tuple[int, np.ndarray]]:
    """The rows of :func:`host_noise` block by block: ``(first row, block)`` pairs, written into
    the rows of ``out`` when given, else into one reused buffer (each block then valid until
    the next is asked for). The correlation method is
    :func:`~minsep.schemes.kernels.correlation.plan`'s (direct, overlap-save or one long FFT,
    by measurement on this machine)."""
    c = effective_coefficients(coefficients, n_steps)
    method = noise_plan(n_steps, int(c.size))
    rows = min(block_rows(method), max(1, n_samples))
    generator = generator_of(rng)
    if generator is not None and method.input_block(rows) is not None:
        yield from _drawn_in_place(n_samples, rows, c, method, generator, out)
        return
    block = None
    for start, z in drawn_blocks("standard_normal", n_samples, n_steps, rows, rng):
        if out is not None:
            target = out[start : start + z.shape[0]]
        else:
            if block is None:
                block = reusable(z.shape, role="noise-block")
            target = block[: z.shape[0]]
        method.run(z, c, target)
        yield start, target


def _drawn_in_place(
    n_samples: int,
    rows: int,
    c: np.ndarray,
    method: correlation.Plan,
    generator: np.random.Generator,
    out: np.ndarray | None,
) -> Iterator[tuple[int, np.ndarray]]:
    """:func:`noise_blocks` under an FFTW plan: each block's normals drawn straight into the
    transform's input (:meth:`~.correlation.Plan.input_block`; the same numbers in the same
    order as :func:`drawn_blocks`), which saves copying them there."""
    n_steps = method.n_steps
    block = None
    for start in range(0, n_samples, rows):
        size = min(rows, n_samples - start)
        z = method.input_block(size)
        assert z is not None
        sfc64.fill(generator, "standard_normal", z)
        if out is not None:
            target = out[start : start + size]
        else:
            if block is None:
                block = reusable((rows, n_steps), role="noise-block")
            target = block[:size]
        method.run_input(size, c, target)
        yield start, target


def blockwise_losses(
    n_samples: int,
    blocks: Iterable[tuple[int, np.ndarray]],
    evaluate: Callable[[int, np.ndarray, slice, np.ndarray], None],
    count: int,
) -> list[np.ndarray]:
    """``ln P/Q`` at ``count`` sigmas, each block of a draw evaluated right after it is drawn:
    ``evaluate(k, block, rows, out)`` writes sigma k's values of the rows ``rows`` into ``out``
    (what the fused ``losses`` entries share)."""
    outs = [np.empty(n_samples) for _ in range(count)]
    for start, block in blocks:
        rows = slice(start, start + block.shape[0])
        for k, out in enumerate(outs):
            evaluate(k, block, rows, out[rows])
    return outs


def noise_plan(n_steps: int, bands: int) -> correlation.Plan:
    """The correlation plan of :func:`noise_blocks` for n steps and k effective bands."""
    return correlation.plan(n_steps, bands, _block_rows(n_steps, fft=True))


def block_rows(method: correlation.Plan) -> int:
    """Rows per block of normals under ``method`` (the FFT plans' batch, else an L2-sized block)."""
    if method.method != "direct":
        return _block_rows(method.n_steps, fft=True)
    return _block_rows(method.n_steps)


def drawn_blocks(
    draw: str, n_samples: int, n_steps: int, rows: int, rng: RandomSource
) -> Iterator[tuple[int, np.ndarray]]:
    """``rng.<draw>((n_samples, n_steps))`` (``draw``: ``"standard_normal"`` or ``"random"``) in
    blocks of ``rows`` rows, as ``(first row, block)`` pairs: the same numbers in the same order
    (numpy fills row-major), drawn into one reused buffer when ``rng`` exposes its Generator
    (each block then valid until the next is asked for), by the compiled SFC64 kernels of
    :mod:`.sfc64` where they reproduce the generator (faster normals: docs/performance.md)."""
    rows = min(rows, max(1, n_samples))
    generator = generator_of(rng)
    buffer = reusable((rows, n_steps), role=draw)
    for start in range(0, n_samples, rows):
        size = min(rows, n_samples - start)
        if generator is not None:
            block = buffer[:size]
            sfc64.fill(generator, draw, block)
        else:
            block = np.asarray(getattr(rng, draw)((size, n_steps)), dtype=np.float64)
        yield start, block
