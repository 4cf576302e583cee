"""The compiled SFC64 draws (:mod:`minsep.schemes.kernels.sfc64`) are numpy's: the same doubles
and standard normals as ``Generator(SFC64)``, bit for bit, through the ziggurat's rectangles,
wedges and tail, with numpy's state left behind; where they cannot be (another bit generator,
disagreeing tables) numpy draws."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from minsep.framework.backend import numpy_backend
from minsep.schemes.kernels import fused, sfc64
from minsep.schemes.kernels.jit import NUMBA_AVAILABLE

pytestmark = pytest.mark.skipif(not NUMBA_AVAILABLE, reason="needs numba")


def _generator(seed: int) -> np.random.Generator:
    return np.random.Generator(np.random.SFC64(seed))


def test_the_compiled_normals_are_checked_and_in_use() -> None:
    assert sfc64.compiled_normals_reason() is None


def test_compiled_doubles_are_numpys() -> None:
    generator = _generator(11)
    state = sfc64.state_words(generator)
    assert state is not None
    got = np.empty(1001)
    sfc64.sfc64_doubles(state, got)
    np.testing.assert_array_equal(got, generator.random(1001))
    np.testing.assert_array_equal(state, sfc64.state_words(generator))


@pytest.mark.parametrize("seed", [0, 1, 7, 2**63 + 5])
def test_compiled_normals_are_numpys_through_every_branch(seed: int) -> None:
    """2^20 draws, each compared: about 260 lie in the tail beyond r and 15,600 leave their
    layer's rectangle (1.5 % per draw, from the tables)."""
    generator = _generator(seed)
    state = sfc64.state_words(generator)
    assert state is not None
    tables = sfc64.ziggurat_tables()
    assert tables is not None
    got = np.empty(1 << 20)
    sfc64.sfc64_normals(state, got, *tables)
    want = generator.standard_normal(1 << 20)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(state, sfc64.state_words(generator))
    r = tables[3]
    assert np.count_nonzero(np.abs(got) > r) >= 150  # the tail branch ran, and agreed


@pytest.mark.parametrize("draw", ["standard_normal", "random"])
@pytest.mark.parametrize("shape", [(0,), (1,), (3, 7), (64, 1024)])
def test_fill_is_the_generator_and_leaves_its_state(draw: str, shape: tuple[int, ...]) -> None:
    ours, theirs = _generator(3), _generator(3)
    out = np.empty(shape)
    sfc64.fill(ours, draw, out)
    np.testing.assert_array_equal(out, getattr(theirs, draw)(shape))
    # whatever draws next from the generator continues numpy's stream
    np.testing.assert_array_equal(ours.standard_normal(9), theirs.standard_normal(9))
    np.testing.assert_array_equal(ours.integers(0, 2**40, 5), theirs.integers(0, 2**40, 5))


def test_fill_keeps_the_32_bit_buffer() -> None:
    """SFC64 keeps half a word for 32-bit draws; numpy's normals leave it alone, and so does
    the kernel."""
    ours, theirs = _generator(5), _generator(5)
    for generator in (ours, theirs):
        generator.integers(0, 2**31, 1, dtype=np.int32)  # leaves 32 bits buffered
    out = np.empty(100)
    sfc64.fill(ours, "standard_normal", out)
    np.testing.assert_array_equal(out, theirs.standard_normal(100))
    mine, want = ours.bit_generator.state, theirs.bit_generator.state
    assert (mine["has_uint32"], mine["uinteger"]) == (want["has_uint32"], want["uinteger"])
    np.testing.assert_array_equal(mine["state"]["state"], want["state"]["state"])


@pytest.mark.parametrize("bit_generator", [np.random.PCG64, np.random.Philox])
def test_other_bit_generators_draw_through_numpy(bit_generator: Any) -> None:
    ours, theirs = np.random.Generator(bit_generator(2)), np.random.Generator(bit_generator(2))
    out = np.empty((4, 50))
    sfc64.fill(ours, "standard_normal", out)
    np.testing.assert_array_equal(out, theirs.standard_normal((4, 50)))


def test_an_unknown_draw_is_refused() -> None:
    with pytest.raises(ValueError, match="draw"):
        sfc64.fill(_generator(4), "integers", np.empty(3))


def test_a_strided_target_is_refused_as_numpy_refuses_it() -> None:
    out = np.empty((6, 10))[:, ::2]
    with pytest.raises(ValueError, match="contiguous"):
        sfc64.fill(_generator(4), "standard_normal", out)


def test_disagreeing_tables_fall_back_to_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The start-up check catches tables that are not numpy's (here one layer width off by an
    ulp), and numpy then draws: the numbers never depend on the kernel."""
    tables = sfc64.ziggurat_tables()
    assert tables is not None
    ki, wi, fi, r, inv_r = tables
    wrong = wi.copy()
    wrong[100] = np.nextafter(wrong[100], 1.0)
    monkeypatch.setattr(sfc64, "ziggurat_tables", lambda: (ki, wrong, fi, r, inv_r))
    sfc64.compiled_normals_reason.cache_clear()
    try:
        assert "disagrees" in str(sfc64.compiled_normals_reason())
        ours, theirs = _generator(6), _generator(6)
        out = np.empty(5000)
        sfc64.fill(ours, "standard_normal", out)
        np.testing.assert_array_equal(out, theirs.standard_normal(5000))
    finally:
        sfc64.compiled_normals_reason.cache_clear()


def test_drawn_blocks_are_the_whole_draw() -> None:
    """The blocks the fused kernels consume are ``rng.standard_normal((S, n))`` row by row."""
    backend = numpy_backend()
    rng = backend.rng(np.random.SeedSequence(21))
    blocks = [block.copy() for _, block in fused.drawn_blocks("standard_normal", 203, 300, 64, rng)]
    want = backend.rng(np.random.SeedSequence(21)).standard_normal((203, 300))
    np.testing.assert_array_equal(np.concatenate(blocks), want)


@pytest.mark.parametrize("bit_generator", [np.random.SFC64, np.random.PCG64])
@pytest.mark.parametrize("draw", ["standard_normal", "random"])
def test_rows_of_a_wider_array_are_filled_in_order(bit_generator: Any, draw: str) -> None:
    """A column slice (contiguous rows, not adjacent: the zero-padded input of an FFT) gets
    the numbers of a contiguous array of its shape, row after row; the padding is untouched."""
    ours, theirs = np.random.Generator(bit_generator(8)), np.random.Generator(bit_generator(8))
    wide = np.zeros((5, 130))
    sfc64.fill(ours, draw, wide[:, :100])
    np.testing.assert_array_equal(wide[:, :100], getattr(theirs, draw)((5, 100)))
    assert not wide[:, 100:].any()
    np.testing.assert_array_equal(ours.standard_normal(9), theirs.standard_normal(9))
