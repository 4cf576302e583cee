"""Change of measure: E_Q[P/Q] = 1 and E_P[Q/P] = 1 for the drawn transcripts of every model.

In both directions ``exp(-L)`` has mean 1, where L is the privacy loss (docs/math.md §1). The REMOVE
identity ties the sampler to the density ratio: a sampler drawing x from another law than the
one ``log_ratio`` integrates over breaks it (checked below with a perturbed sampler).
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
import pytest

from minsep.framework.backend import numpy_backend
from minsep.framework.interfaces import Direction, PrivacyLossModel
from minsep.schemes.losses import (
    BallsInBinsLossModel,
    BMinSepLossModel,
    MultiAttributionLossModel,
    TruncatedBMinSepLossModel,
)

SAMPLES = 40_000
SIGMA = 1.5
BANDS = (0.7, 0.5, 0.4, 0.3)

MODELS: list[PrivacyLossModel] = [
    BMinSepLossModel(coefficients=(1.0,), n_steps=20, min_sep=1, probability=0.2, warm_start=False),
    BMinSepLossModel(coefficients=BANDS, n_steps=20, min_sep=4, probability=0.3, warm_start=False),
    BMinSepLossModel(coefficients=BANDS, n_steps=20, min_sep=5, probability=0.3, warm_start=True),
    BallsInBinsLossModel(coefficients=BANDS, n_steps=20, cycle_length=3),
    MultiAttributionLossModel(
        coefficients=BANDS, n_steps=20, min_sep=4, probability=0.15, max_user_examples=3
    ),
    TruncatedBMinSepLossModel(
        coefficients=BANDS,
        n_steps=20,
        min_sep=4,
        probability=0.3,
        warm_start=True,
        dataset_size=12,
        max_batch_size=3,
    ),
    TruncatedBMinSepLossModel(
        coefficients=BANDS,
        n_steps=20,
        min_sep=4,
        probability=0.3,
        warm_start=False,
        dataset_size=12,
        max_batch_size=3,
    ),
]


def _mean_and_error(
    model: PrivacyLossModel, direction: Direction, seed: int
) -> tuple[float, float]:
    backend = numpy_backend()
    transcript = model.draw(SAMPLES, direction, backend.rng(np.random.SeedSequence(seed)), backend)
    values = np.exp(-np.asarray(model.privacy_loss(transcript, SIGMA)))
    return float(values.mean()), float(values.std() / np.sqrt(values.size))


@pytest.mark.parametrize("direction", list(Direction))
@pytest.mark.parametrize("index", range(len(MODELS)))
def test_exp_minus_loss_has_mean_one(index: int, direction: Direction) -> None:
    mean, error = _mean_and_error(MODELS[index], direction, seed=index)
    assert error < 0.05
    assert abs(mean - 1.0) < 5 * error + 1e-3


def test_a_mismatched_sampler_is_detected() -> None:
    """Drawing x at a higher p than the ratio assumes breaks the REMOVE identity."""
    model = BMinSepLossModel(
        coefficients=BANDS, n_steps=20, min_sep=4, probability=0.3, warm_start=False
    )
    hotter = attrs.evolve(model, probability=0.45)
    backend = numpy_backend()
    transcript: Any = hotter.draw(
        SAMPLES, Direction.REMOVE, backend.rng(np.random.SeedSequence(1)), backend
    )
    values = np.exp(-np.asarray(model.privacy_loss(transcript, SIGMA)))
    error = values.std() / np.sqrt(values.size)
    assert abs(values.mean() - 1.0) > 10 * error
