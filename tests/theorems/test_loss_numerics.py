"""Every loss model: finite at small sigma and long horizons; portable array code."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

from minsep.framework.backend import namespace_backend, numpy_backend
from minsep.framework.interfaces import Direction, PrivacyLossModel
from minsep.schemes.losses import (
    BallsInBinsLossModel,
    BMinSepLossModel,
    ConjecturedMultiAttributionLossModel,
    MultiAttributionLossModel,
    TruncatedBMinSepLossModel,
)

LONG = 10_000
FEW_BANDS = (0.8, 0.5, 0.3, 0.1)
MANY_BANDS = tuple(float(v) for v in np.linspace(1.0, 0.1, 40))  # the FFT path


def _models(n: int, bands: tuple[float, ...]) -> list[PrivacyLossModel]:
    b = max(len(bands), 4)
    return [
        BMinSepLossModel(
            coefficients=(1.0,), n_steps=n, min_sep=1, probability=0.05, warm_start=False
        ),
        BMinSepLossModel(
            coefficients=bands, n_steps=n, min_sep=b, probability=0.3, warm_start=False
        ),
        BMinSepLossModel(
            coefficients=bands, n_steps=n, min_sep=b, probability=0.3, warm_start=True
        ),
        BMinSepLossModel(
            coefficients=bands, n_steps=n, min_sep=b, probability=1.0, warm_start=True
        ),
        BallsInBinsLossModel(coefficients=bands, n_steps=n, cycle_length=b + 3),
        MultiAttributionLossModel(
            coefficients=bands, n_steps=n, min_sep=b, probability=0.1, max_user_examples=3
        ),
        TruncatedBMinSepLossModel(
            coefficients=bands,
            n_steps=n,
            min_sep=b,
            probability=0.2,
            warm_start=True,
            dataset_size=60,
            max_batch_size=9,
        ),
        TruncatedBMinSepLossModel(
            coefficients=bands,
            n_steps=n,
            min_sep=b,
            probability=0.2,
            warm_start=False,
            dataset_size=60,
            max_batch_size=9,
        ),
    ]


def _label(model: PrivacyLossModel) -> str:
    return type(model).__name__


@pytest.mark.parametrize("bands", [FEW_BANDS, MANY_BANDS], ids=["direct", "fft"])
@pytest.mark.parametrize("index", range(8))
def test_finite_at_small_sigma_over_a_long_horizon(index: int, bands: tuple[float, ...]) -> None:
    model = _models(LONG, bands)[index]
    backend = numpy_backend()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # overflow / invalid-value warnings fail the test
        for seed, direction in enumerate(Direction):
            rng = backend.rng(np.random.SeedSequence(seed))
            transcript = model.draw(3, direction, rng, backend)
            for sigma in (0.1, 1.0, 10.0):
                loss = model.privacy_loss(transcript, sigma)
                assert loss.shape == (3,) and loss.dtype == np.float64
                assert np.all(np.isfinite(loss)), (_label(model), direction, sigma, loss)


def test_removal_losses_are_large_at_small_sigma() -> None:
    """A sanity check that the finite values are not clamped: at sigma = 0.1 the removal loss
    of a participating unit is of order ||c||^2 / (2 sigma^2) per participation."""
    model = BMinSepLossModel(
        coefficients=FEW_BANDS, n_steps=200, min_sep=4, probability=0.3, warm_start=False
    )
    backend = numpy_backend()
    transcript = model.draw(5, Direction.REMOVE, backend.rng(np.random.SeedSequence(1)), backend)
    assert np.all(model.log_ratio(transcript, 0.1) > 100.0)


@pytest.mark.parametrize("index", range(8))
def test_array_api_strict_gives_the_numpy_values(index: int) -> None:
    """The model code keeps to the array-API standard (what cupy also provides): the same seed
    on ``array_api_strict`` reproduces the numpy transcript and losses."""
    xp = pytest.importorskip("array_api_strict")
    strict = namespace_backend(xp)
    host = numpy_backend()
    for bands in (FEW_BANDS, MANY_BANDS):
        model: Any = _models(50, bands)[index]
        for direction in Direction:
            a = model.draw(6, direction, strict.rng(np.random.SeedSequence(4)), strict)
            b = model.draw(6, direction, host.rng(np.random.SeedSequence(4)), host)
            for sigma in (0.3, 2.0):
                got = strict.to_numpy(model.privacy_loss(a, sigma))
                # losses are sums of O(1) terms: near zero only an absolute bound is rounding
                want = model.privacy_loss(b, sigma)
                np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)


def test_conjectured_model_also_runs_long() -> None:
    model = ConjecturedMultiAttributionLossModel(
        coefficients=FEW_BANDS, n_steps=LONG, min_sep=4, probability=0.1, max_user_examples=2
    )
    backend = numpy_backend()
    with pytest.warns(UserWarning, match="conjecture"):
        transcript = model.draw(
            2, Direction.REMOVE, backend.rng(np.random.SeedSequence(0)), backend
        )
        assert np.all(np.isfinite(model.log_ratio(transcript, 0.1)))
