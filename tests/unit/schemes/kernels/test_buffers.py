"""Reused host arrays (:mod:`minsep.schemes.kernels.buffers`): an array someone still holds is
never handed out again, so a kept transcript is never overwritten by a later draw."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from minsep.framework.backend import numpy_backend
from minsep.framework.interfaces import Direction
from minsep.schemes.kernels import buffers
from minsep.schemes.kernels.jit import NUMBA_AVAILABLE
from minsep.schemes.losses import BMinSepLossModel

needs_pool = pytest.mark.skipif(not buffers.ENABLED, reason="reference counts are not exact")


@pytest.fixture(autouse=True)
def _empty_pool() -> None:
    buffers.release()


@needs_pool
def test_a_free_array_is_reused_and_a_held_one_is_not() -> None:
    first = buffers.reusable((64, 32))
    address = first.ctypes.data
    second = buffers.reusable((64, 32))
    assert second.ctypes.data != address  # first is still held here
    del first
    third = buffers.reusable((64, 32))
    assert third.ctypes.data == address  # first was released: reused


@needs_pool
def test_a_view_keeps_its_array_held() -> None:
    array = buffers.reusable((16, 16))
    address = array.ctypes.data
    view = array[3:5]
    del array
    other = buffers.reusable((16, 16))
    assert other.ctypes.data != address
    del view
    assert buffers.reusable((16, 16)).ctypes.data == address


@needs_pool
def test_a_miss_drops_the_free_arrays() -> None:
    big = buffers.reusable((1000, 100))
    address = big.ctypes.data
    del big
    assert buffers._pool()[0][1].ctypes.data == address  # free, still pooled
    buffers.reusable((10, 10))  # a miss of the same role: the free big array leaves the pool
    assert [a.shape for _, a in buffers._pool()] == [(10, 10)]


@needs_pool
def test_a_miss_keeps_the_free_arrays_of_other_roles() -> None:
    noise = buffers.reusable((1000, 100), role="noise")
    address = noise.ctypes.data
    del noise
    buffers.reusable((10, 100), role="block")  # another role: the noise array stays pooled
    assert buffers.reusable((1000, 100), role="noise").ctypes.data == address
    assert buffers.reusable((1000, 100), role="other").ctypes.data != address


@needs_pool
def test_threads_have_their_own_pools() -> None:
    mine = buffers.reusable((8, 8))
    address = mine.ctypes.data
    del mine
    seen: list[int] = []
    thread = threading.Thread(target=lambda: seen.append(buffers.reusable((8, 8)).ctypes.data))
    thread.start()
    thread.join()
    assert len(seen) == 1 and seen[0] != address
    assert buffers.reusable((8, 8)).ctypes.data == address


def test_dtype_and_shape_are_as_asked() -> None:
    array = buffers.reusable((3, 5), np.int32)
    assert array.shape == (3, 5) and array.dtype == np.int32 and array.flags.c_contiguous


@pytest.mark.skipif(not NUMBA_AVAILABLE, reason="needs numba")
@pytest.mark.parametrize("coefficients", [(0.8, 0.5, 0.3), tuple(np.linspace(1, 0.1, 40))])
def test_a_kept_transcript_survives_later_draws(coefficients: tuple[float, ...]) -> None:
    model = BMinSepLossModel(
        coefficients=tuple(float(c) for c in coefficients),
        n_steps=300,
        min_sep=len(coefficients),
        probability=0.01,
        warm_start=True,
    )
    backend = numpy_backend()

    def draw(seed: int) -> object:
        rng = backend.rng(np.random.SeedSequence(seed))
        return model.draw(200, Direction.REMOVE, rng, backend)

    kept = draw(1)
    noise, steps = kept.noise.copy(), kept.steps.copy()  # type: ignore[attr-defined]
    loss = model.log_ratio(kept, 1.0)
    for seed in (2, 3, 4):
        other = draw(seed)
        assert not np.shares_memory(other.noise, kept.noise)  # type: ignore[attr-defined]
        del other
    np.testing.assert_array_equal(kept.noise, noise)  # type: ignore[attr-defined]
    np.testing.assert_array_equal(kept.steps, steps)  # type: ignore[attr-defined]
    np.testing.assert_array_equal(model.log_ratio(kept, 1.0), loss)
    # the same seed gives the same bits whether or not the arrays were reused
    again = draw(1)
    np.testing.assert_array_equal(again.noise, noise)  # type: ignore[attr-defined]
    np.testing.assert_array_equal(again.steps, steps)  # type: ignore[attr-defined]
