"""Host correlation plans (direct, overlap-save, one long FFT) and their choice.

Every plan computes the sliding dot ``<c_i, z>`` of docs/math.md §2; the FFT ones agree with
the direct sum to 1e-12 relative to the size of the terms.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from minsep.framework.errors import ConfigurationError
from minsep.schemes.kernels import blocks, correlation, fftw_correlation, fused
from minsep.schemes.kernels.jit import NUMBA_AVAILABLE

pytestmark = pytest.mark.skipif(not NUMBA_AVAILABLE, reason="needs numba (the fast extra)")

SHAPES = [(1, 20), (3, 20), (7, 20), (300, 20), (1000, 64), (1025, 64), (7200, 256), (50, 160)]


def _normals(rows: int, n: int, seed: int = 0) -> np.ndarray:
    return np.random.Generator(np.random.SFC64(seed)).standard_normal((rows, n))


def _coefficients(k: int) -> np.ndarray:
    return np.random.Generator(np.random.SFC64(k)).uniform(0.05, 1.0, k)


@pytest.mark.parametrize(("n", "k"), SHAPES)
def test_every_candidate_is_the_sliding_dot(n: int, k: int) -> None:
    kk = min(k, n)  # effective coefficients
    c = _coefficients(k)[:kk]
    z = _normals(5, n)
    want = blocks.sliding_dot(z, tuple(c.tolist()), np, "direct")
    scale = np.sum(np.abs(c)) * np.max(np.abs(z))
    plans = correlation.candidates(n, kk, rows=8)
    assert {p.method for p in plans} >= {"fft"}
    for plan in [*plans, correlation.fixed_plan(n, kk, 8)]:
        out = np.full_like(z, np.nan)
        plan.run(z, c, out)
        np.testing.assert_allclose(out, want, rtol=0, atol=1e-12 * scale, err_msg=str(plan))


def test_overlap_save_covers_several_blocks_and_a_ragged_end() -> None:
    n, k = 1000, 40
    c = _coefficients(k)
    plan = correlation.Plan("overlap", n, k, correlation._fast_length(2 * k), rows=4)
    assert plan.blocks > 10 and n % plan.block_outputs  # the last block is cut at n
    z = _normals(3, n, seed=2)  # fewer rows than the scratch holds
    out = np.empty_like(z)
    plan.run(z, c, out)
    want = blocks.sliding_dot(z, tuple(c.tolist()), np, "direct")
    np.testing.assert_allclose(out, want, rtol=0, atol=1e-12 * np.sum(c) * np.max(np.abs(z)))


@pytest.mark.parametrize("setting", ["direct", "overlap", "fft", "fixed"])
def test_the_environment_forces_a_method(setting: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MINSEP_CORRELATION", setting)
    plan = correlation.plan(7200, 256, 18)
    expected = {"direct": "direct", "overlap": "overlap", "fft": "fft", "fixed": "overlap"}
    assert plan.method == expected[setting]
    assert correlation.plan(7200, 8, 18).method == "direct"  # few bands: always direct


def test_an_invalid_setting_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MINSEP_CORRELATION", "fastest")
    with pytest.raises(ConfigurationError, match=r"MINSEP_CORRELATION = 'fastest'.*measure"):
        correlation.plan(100, 40, 4)


def test_the_measured_plan_is_a_candidate_and_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MINSEP_CORRELATION", raising=False)
    first = correlation.plan(600, 48, 8)
    assert first in correlation.candidates(600, 48, 8)
    assert correlation.plan(600, 48, 8) is first  # measured once per process


@pytest.mark.parametrize("setting", ["direct", "overlap", "fft"])
def test_host_noise_agrees_with_the_sliding_dot_under_every_method(
    setting: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MINSEP_CORRELATION", setting)
    n, bands = 700, tuple(float(v) for v in np.linspace(1.0, 0.2, 30))
    rows = fused._block_rows(n, fft=True) * 2 + 5  # several blocks and a short last one
    rng = np.random.Generator(np.random.SFC64(4))
    want = blocks.sliding_dot(rng.standard_normal((rows, n)), bands, np, "direct")

    class Source:
        generator = np.random.Generator(np.random.SFC64(4))

    got = fused.host_noise(rows, n, bands, Source())  # type: ignore[arg-type]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * sum(bands) * np.max(np.abs(want)))


def test_processes_share_the_measured_choice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first measurement is written to the machine's cache file; a later process (here: the
    per-process cache cleared) reads it back instead of measuring again, so pool workers
    correlate as the parent did."""
    monkeypatch.delenv("MINSEP_CORRELATION", raising=False)
    monkeypatch.setenv("MINSEP_CACHE_DIR", str(tmp_path))
    path = correlation.cache_file()
    assert path is not None and path.parent == tmp_path
    correlation.measured_plan.cache_clear()
    try:
        first = correlation.plan(500, 33, 4)
        table = json.loads(path.read_text())
        assert table == {"500,33,4": [first.method, first.length, first.engine]}
        # another process finds a different (valid) choice recorded: it takes that one
        other = next(p for p in correlation.candidates(500, 33, 4) if p != first)
        path.write_text(json.dumps({"500,33,4": [other.method, other.length, other.engine]}))
        correlation.measured_plan.cache_clear()
        assert correlation.plan(500, 33, 4) == other
        # a corrupt or foreign entry is measured again and overwritten
        path.write_text(json.dumps({"500,33,4": ["fft", 7, "numpy"]}))
        correlation.measured_plan.cache_clear()
        again = correlation.plan(500, 33, 4)
        assert again in correlation.candidates(500, 33, 4)
        assert json.loads(path.read_text())["500,33,4"] == [
            again.method,
            again.length,
            again.engine,
        ]
        # an entry of the older two-field format is measured again as well
        path.write_text(json.dumps({"500,33,4": [first.method, first.length]}))
        correlation.measured_plan.cache_clear()
        assert correlation.plan(500, 33, 4) in correlation.candidates(500, 33, 4)
        assert len(json.loads(path.read_text())["500,33,4"]) == 3
        path.write_text("{not json")
        correlation.measured_plan.cache_clear()
        assert correlation.plan(500, 33, 4) in correlation.candidates(500, 33, 4)
    finally:
        correlation.measured_plan.cache_clear()


def test_an_unusable_cache_directory_measures_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.delenv("MINSEP_CORRELATION", raising=False)
    monkeypatch.setenv("MINSEP_CACHE_DIR", str(blocker / "sub"))  # cannot be created
    assert correlation.cache_file() is None
    correlation.measured_plan.cache_clear()
    try:
        assert correlation.plan(400, 20, 4) in correlation.candidates(400, 20, 4)
    finally:
        correlation.measured_plan.cache_clear()


needs_fftw = pytest.mark.skipif(
    not fftw_correlation.available(), reason="needs pyfftw (the fftw extra)"
)


@needs_fftw
def test_fftw_plans_are_candidates_of_every_fft_method() -> None:
    plans = correlation.candidates(7200, 256, rows=8)
    fftw = {(p.method, p.length) for p in plans if p.engine == "fftw"}
    assert fftw == {
        (p.method, p.length) for p in plans if p.method != "direct" and p.engine == "numpy"
    }
    assert all(p.engine == "numpy" for p in correlation.candidates(7200, 256, 8, fftw=False))


@needs_fftw
@pytest.mark.parametrize("method", ["overlap", "fft"])
def test_fftw_gives_each_row_the_same_bits_wherever_it_sits(method: str) -> None:
    """A plan is made for exactly ``rows`` rows and a short block is padded, so a row's bits do
    not depend on the block it was drawn in (a pool's results do not depend on the chunking of
    blocks), and a block with more rows than the plan runs in pieces."""
    n, k, rows = 1000, 40, 4
    c = _coefficients(k)
    plan = correlation.forced_plan(method, n, k, rows)
    plan = correlation.Plan(method, n, k, plan.length, rows, engine="fftw")
    z = _normals(11, n, seed=5)
    together = np.empty_like(z)
    plan.run(z, c, together)  # three pieces of 4, 4 and 3 rows
    for row in range(z.shape[0]):
        alone = np.empty((1, n))
        plan.run(z[row : row + 1], c, alone)
        assert np.array_equal(alone[0], together[row])
    want = blocks.sliding_dot(z, tuple(c.tolist()), np, "direct")
    np.testing.assert_allclose(together, want, rtol=0, atol=1e-12 * np.sum(c) * np.max(np.abs(z)))


def test_the_cache_file_names_pyfftw_when_installed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("MINSEP_CACHE_DIR", str(tmp_path))
    path = correlation.cache_file()
    assert path is not None
    assert ("-pyfftw" in path.name) == (correlation._installed_version("pyfftw") is not None)


@pytest.mark.parametrize("k", range(1, 9))
@pytest.mark.parametrize("n", [1, 5, 7, 8, 9, 300])
def test_the_narrow_direct_sum_is_the_tiled_one_bit_for_bit(n: int, k: int) -> None:
    """Up to NARROW_BANDS bands each output is summed in registers, in the tiled passes' order
    (c_0 z_i, then + c_j z_{i+j} for j = 1, 2, ...), so both give the same bits."""
    from minsep.schemes.kernels import cpu_kernels

    assert k <= cpu_kernels.NARROW_BANDS
    c = _coefficients(k)
    z = _normals(1, n, seed=n + k)[0]
    narrow, tiled = np.full(n, np.nan), np.full(n, np.nan)
    cpu_kernels.correlate_row(z, c, narrow, n)
    cpu_kernels._correlate_row_tiled(z, c, tiled, n)
    np.testing.assert_array_equal(narrow, tiled)
    want = blocks.sliding_dot(z[None, :], tuple(c.tolist()), np, "direct")[0]
    np.testing.assert_allclose(narrow, want, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("width", [1, 2, 7, 2049])
def test_the_compiled_spectral_product_rounds_each_product(width: int) -> None:
    """Split kernel, interleaved spectra: ``(ac - bd) + (ad + bc)i`` with every product and sum
    rounded on its own (numpy's float64 ufuncs, one operation each), bit for bit: no fused
    multiply-add, so every machine computes the same bits."""
    from minsep.schemes.kernels import cpu_kernels

    rng = np.random.default_rng(width)
    spectra = rng.standard_normal((3, width)) + 1j * rng.standard_normal((3, width))
    kernel = rng.standard_normal(width) + 1j * rng.standard_normal(width)
    a, b, c, d = spectra.real, spectra.imag, kernel.real, kernel.imag
    want = np.empty_like(spectra)
    want.real = np.subtract(np.multiply(a, c), np.multiply(b, d))
    want.imag = np.add(np.multiply(a, d), np.multiply(b, c))
    got = spectra.copy()
    cpu_kernels.multiply_spectra(
        got.view(np.float64), np.ascontiguousarray(c), np.ascontiguousarray(d)
    )
    np.testing.assert_array_equal(got.view(np.uint64), want.view(np.uint64))


@needs_fftw
@pytest.mark.parametrize("samples", [1, 3, 11, 40])
def test_normals_drawn_into_fftws_input_are_those_of_the_plan(
    samples: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under an FFTW plan the noise blocks draw their normals straight into the transform's
    input: the same correlations, bit for bit, as drawing them first and running the plan, and
    the generator left where the whole draw leaves it."""
    n, k, rows = 1000, 40, 8
    c = _coefficients(k)
    base = correlation.forced_plan("overlap", n, k, rows)
    plan = correlation.Plan("overlap", n, k, base.length, rows, engine="fftw")
    monkeypatch.setattr(fused, "noise_plan", lambda n_steps, bands: plan)
    monkeypatch.setattr(fused, "block_rows", lambda method: rows)

    class Source:
        generator = np.random.Generator(np.random.SFC64(6))

    got = fused.host_noise(samples, n, tuple(c.tolist()), Source()).copy()  # type: ignore[arg-type]
    generator = np.random.Generator(np.random.SFC64(6))
    z = generator.standard_normal((samples, n))
    want = np.empty_like(z)
    plan.run(z, c, want)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(Source.generator.random(4), generator.random(4))
