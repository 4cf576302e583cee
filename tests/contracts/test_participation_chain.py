"""Every registered scheme that declares a participation chain is described by it correctly.

The ``rdp`` accountant trusts :meth:`SamplingScheme.participation_chain` for the law of one
unit's pattern; here the declared chain is checked against the scheme's public parameters and
against its real sampler (per-example participation counts and the no-participation
probability), for the scheme's example and its cold/warm variants where they exist.
"""

from __future__ import annotations

import math

import attrs
import numpy as np
import pytest

from minsep.framework.interfaces import SamplingScheme
from minsep.framework.registries import schemes


def _examples() -> list[SamplingScheme]:
    out = []
    for name in sorted(schemes.names()):
        scheme = schemes.get(name).example()
        if scheme.participation_chain() is None:
            continue
        out.append(scheme)
        if "warm_start" in attrs.fields_dict(type(scheme)):  # the other start as well
            out.append(attrs.evolve(scheme, warm_start=not scheme.warm_start))  # type: ignore[misc]
    return out


EXAMPLES = _examples()


def test_some_scheme_declares_a_chain() -> None:
    assert {s.name for s in EXAMPLES} >= {"b_min_sep", "poisson"}


@pytest.mark.parametrize("scheme", EXAMPLES, ids=repr)
def test_chain_matches_the_public_parameters(scheme: SamplingScheme) -> None:
    chain = scheme.participation_chain()
    assert chain is not None
    assert chain.n_steps == scheme.n_steps
    assert chain.min_sep == scheme.min_separation
    p, b = chain.probability, chain.min_sep
    assert p / (1 + (b - 1) * p) == pytest.approx(scheme.rate, rel=1e-12)


@pytest.mark.parametrize("scheme", EXAMPLES, ids=repr)
def test_chain_matches_the_sampler(scheme: SamplingScheme) -> None:
    """The sampler's per-example no-participation frequency and mean count match the chain."""
    chain = scheme.participation_chain()
    assert chain is not None
    population, runs = 1000, 60
    rng = np.random.default_rng(2024)
    counts = []
    for _ in range(runs):
        per_example = np.zeros(population, dtype=np.int64)
        for batch in scheme.batches(population, rng):
            per_example[batch] += 1
        counts.append(per_example)
    observed = np.concatenate(counts)  # examples are independent under these schemes
    none = float(np.mean(observed == 0))
    expected_none = math.exp(chain.log_no_participation())
    se = math.sqrt(expected_none * (1 - expected_none) / observed.size)
    assert abs(none - expected_none) <= 5 * se
    # Mean participations: sum over steps of P(participate at t), by propagating the chain.
    b, p = chain.min_sep, chain.probability
    law, mean = chain.initial_law(), 0.0
    for _ in range(chain.n_steps):
        joins = law[0] * p
        mean += joins
        nxt = np.zeros(b)
        nxt[:-1] = law[1:]  # countdown a -> a - 1
        nxt[0] += law[0] - joins
        nxt[-1] += joins
        law = nxt
    tolerance = 5 * float(observed.std()) / math.sqrt(observed.size)
    assert float(observed.mean()) == pytest.approx(mean, abs=tolerance)
