"""``privacy_losses``: the engine's per-chunk call. b-min-sep and truncated b-min-sep fuse the
draw with the evaluation on the host kernels; the losses must be those of
``privacy_loss(draw(...))`` from the same seed, bit for bit, for every sigma of a sweep and
both directions."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from minsep.framework.backend import numpy_backend
from minsep.framework.interfaces import Direction
from minsep.schemes.kernels import fused
from minsep.schemes.kernels.jit import NUMBA_AVAILABLE
from minsep.schemes.losses import BMinSepLossModel, TruncatedBMinSepLossModel

pytestmark = pytest.mark.skipif(not NUMBA_AVAILABLE, reason="needs numba (the fast extra)")

MANY = tuple(float(v) for v in np.linspace(1.0, 0.1, 40))
CASES = [
    # (coefficients, n, b, p, warm)
    ((1.0,), 50, 1, 0.1, False),
    ((0.8, 0.5, 0.3), 64, 3, 0.2, True),
    ((0.6, 0.5, 0.4, 0.3), 3, 4, 0.5, True),  # n < k
    ((0.8, 0.6), 40, 2, 1.0, True),  # p = 1
    (MANY, 150, len(MANY), 0.02, True),  # many bands: measured correlation method
]
SIGMAS = (0.03, 0.4, 1.0, 7.0)


def _rng(seed: int) -> Any:
    return numpy_backend().rng(np.random.SeedSequence(seed))


@pytest.mark.parametrize("direction", list(Direction))
@pytest.mark.parametrize("case", CASES)
def test_fused_losses_are_the_draw_then_the_losses(
    case: tuple[Any, ...], direction: Direction
) -> None:
    c, n, b, p, warm = case
    model = BMinSepLossModel(coefficients=c, n_steps=n, min_sep=b, probability=p, warm_start=warm)
    backend = numpy_backend()
    samples = 2 * fused._block_rows(n) + 7  # several blocks and a short last one
    got = model.privacy_losses(samples, direction, _rng(8), backend, SIGMAS)
    transcript = model.draw(samples, direction, _rng(8), backend)
    assert len(got) == len(SIGMAS)
    for loss, sigma in zip(got, SIGMAS, strict=True):
        np.testing.assert_array_equal(loss, model.privacy_loss(transcript, sigma))
        assert loss.shape == (samples,) and np.all(np.isfinite(loss))


@pytest.mark.parametrize("setting", ["overlap", "fft"])
def test_fused_losses_agree_under_the_fft_methods(
    setting: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MINSEP_CORRELATION", setting)
    model = BMinSepLossModel(
        coefficients=MANY, n_steps=900, min_sep=45, probability=0.01, warm_start=True
    )
    backend = numpy_backend()
    samples = 2 * fused._block_rows(900, fft=True) + 3
    got = model.privacy_losses(samples, Direction.REMOVE, _rng(9), backend, (0.5, 2.0))
    transcript = model.draw(samples, Direction.REMOVE, _rng(9), backend)
    for loss, sigma in zip(got, (0.5, 2.0), strict=True):
        np.testing.assert_array_equal(loss, model.privacy_loss(transcript, sigma))


def test_the_array_kernels_take_the_default() -> None:
    model = BMinSepLossModel(
        coefficients=(0.8, 0.5), n_steps=30, min_sep=2, probability=0.1, warm_start=False
    )
    backend = numpy_backend("array")
    got = model.privacy_losses(50, Direction.ADD, _rng(3), backend, (1.0,))
    want = model.privacy_loss(model.draw(50, Direction.ADD, _rng(3), backend), 1.0)
    np.testing.assert_array_equal(got[0], want)


TRUNCATED_CASES = [
    # (coefficients, n, b, p, warm, |D|, B_max)
    ((0.8, 0.5, 0.3), 64, 3, 0.2, True, 40, 6),  # B_max near the mean count: many truncations
    ((1.0,), 50, 1, 0.1, False, 200, 25),
    (MANY, 150, len(MANY), 0.02, True, 3000, 40),  # many bands: measured correlation method
]


@pytest.mark.parametrize("direction", list(Direction))
@pytest.mark.parametrize("case", TRUNCATED_CASES)
def test_truncated_fused_losses_are_the_draw_then_the_losses(
    case: tuple[Any, ...], direction: Direction
) -> None:
    c, n, b, p, warm, size, cap = case
    model = TruncatedBMinSepLossModel(
        coefficients=c,
        n_steps=n,
        min_sep=b,
        probability=p,
        warm_start=warm,
        dataset_size=size,
        max_batch_size=cap,
    )
    backend = numpy_backend()
    samples = 2 * fused._block_rows(n) + 5  # several blocks and a short last one
    got = model.privacy_losses(samples, direction, _rng(12), backend, SIGMAS)
    transcript = model.draw(samples, direction, _rng(12), backend)
    truncating = np.asarray(transcript.counts) >= cap
    assert truncating.any()  # the truncating branch of the kernel ran
    for loss, sigma in zip(got, SIGMAS, strict=True):
        np.testing.assert_array_equal(loss, model.privacy_loss(transcript, sigma))
        assert loss.shape == (samples,) and np.all(np.isfinite(loss))
