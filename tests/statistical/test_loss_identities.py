"""Change of measure: E_Q[P/Q] = 1 and E_P[Q/P] = 1 on variants the registered examples miss.

Every registered loss model runs the same identity through ``LossModelContract`` (its
``test_change_of_measure_under_*`` checks, tests/contracts/test_registered.py).

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
from minsep.schemes.losses import BMinSepLossModel, TruncatedBMinSepLossModel
from minsep.testing import assert_change_of_measure
from minsep.testing.registered import loss_model_pairs

SAMPLES = 40_000
SIGMA = 1.5
BANDS = (0.7, 0.5, 0.4, 0.3)

#: Every registered scheme's loss model, on every registered strategy it accepts: a new scheme
#: is covered as soon as it is registered.
REGISTERED = loss_model_pairs()

#: Variants the registered examples do not reach: cold starts, four bands, higher rates.
VARIANTS: dict[str, PrivacyLossModel] = {
    "cold-b_min_sep-b4": BMinSepLossModel(
        coefficients=BANDS, n_steps=20, min_sep=4, probability=0.3, warm_start=False
    ),
    "warm-b_min_sep-b5": BMinSepLossModel(
        coefficients=BANDS, n_steps=20, min_sep=5, probability=0.3, warm_start=True
    ),
    "cold-truncated-b4": TruncatedBMinSepLossModel(
        coefficients=BANDS,
        n_steps=20,
        min_sep=4,
        probability=0.3,
        warm_start=False,
        dataset_size=12,
        max_batch_size=3,
    ),
}


def test_every_registered_scheme_with_a_loss_model_is_checked() -> None:
    assert {"b_min_sep", "balls_in_bins", "multi_attribution", "truncated"} <= {
        scheme.name for scheme, _ in REGISTERED.values()
    }


@pytest.mark.parametrize("direction", list(Direction))
@pytest.mark.parametrize("key", sorted(VARIANTS))
def test_exp_minus_loss_has_mean_one_for_variants(key: str, direction: Direction) -> None:
    seed = 100 + sorted(VARIANTS).index(key)
    assert_change_of_measure(VARIANTS[key], direction, SIGMA, samples=SAMPLES, seed=seed)


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
