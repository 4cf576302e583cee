"""Schemes that declare a phase mixture are described by it correctly.

The ``rdp`` accountant trusts :meth:`SamplingScheme.phase_mixture` for the law of one unit's
pattern (docs/rdp-escort.md §10); here the declared mixture is checked against the scheme's
public parameters and its real sampler (the law of whole participation patterns, chi-square).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from minsep.framework.phase_mixture import PhaseMixture
from minsep.schemes.cyclic_poisson.scheme import CyclicPoisson
from minsep.strategies import BandedToeplitz, Identity
from tests.theorems.support import law_fit_pvalue


def mixture_law(mixture: PhaseMixture) -> dict[tuple[int, ...], float]:
    n, b, q = mixture.n_steps, mixture.phases, mixture.probability
    law: dict[tuple[int, ...], float] = {}
    for g in range(b):
        steps = [i for i in range(n) if i % b == g]
        for coins in itertools.product((0, 1), repeat=len(steps)):
            x = [0] * n
            for step, coin in zip(steps, coins, strict=True):
                x[step] = coin
            k = sum(coins)
            key = tuple(x)
            law[key] = law.get(key, 0.0) + q**k * (1 - q) ** (len(steps) - k) / b
    return law


def test_only_the_random_partition_declares_a_mixture() -> None:
    random = CyclicPoisson(n_steps=10, rate=0.1, min_sep=3, partition="random")
    mixture = random.phase_mixture()
    assert mixture == PhaseMixture(n_steps=10, phases=3, probability=random.group_rate)
    assert CyclicPoisson(n_steps=10, rate=0.1, min_sep=3).phase_mixture() is None
    assert random.participation_chain() is None


@pytest.mark.parametrize(("n", "b", "rate"), [(7, 3, 0.1), (5, 2, 0.3), (3, 4, 0.2)])
def test_mixture_matches_the_sampler(n: int, b: int, rate: float) -> None:
    scheme = CyclicPoisson(n_steps=n, rate=rate, min_sep=b, partition="random")
    mixture = scheme.phase_mixture()
    assert mixture is not None
    law = mixture_law(mixture)
    population, runs = 300, 100
    rng = np.random.default_rng(7)
    patterns = []
    for _ in range(runs):
        x = np.zeros((population, n), dtype=np.int64)
        for step, batch in enumerate(scheme.batches(population, rng)):
            x[batch, step] += 1
        patterns.append(x)
    observed_rows = np.concatenate(patterns)  # examples are independent under "random"
    assert law_fit_pvalue(observed_rows, law) > 1e-4


@pytest.mark.parametrize(("n", "b", "rate"), [(7, 3, 0.1), (5, 2, 0.5), (3, 4, 0.2)])
def test_the_loss_models_escort_law_is_the_schemes_mixture(n: int, b: int, rate: float) -> None:
    """The escort proposal samples the loss model's law (docs/rdp-escort.md §10.6): the same
    mixture the scheme declares (and the sampler above draws), under the model's coefficients."""
    scheme = CyclicPoisson(n_steps=n, rate=rate, min_sep=b, partition="random")
    strategy = BandedToeplitz(coefficients=(0.8, 0.6)) if b >= 2 else Identity()
    model = scheme.loss_model(strategy)
    law = model.escort_law()  # type: ignore[attr-defined]
    assert law.mixture == scheme.phase_mixture()
    assert tuple(law.coefficients) == tuple(model.coefficients)  # type: ignore[attr-defined]
