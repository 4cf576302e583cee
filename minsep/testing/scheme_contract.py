"""The contract every sampling scheme satisfies (its sampler and its public parameters)."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
import pytest

from minsep.framework.interfaces import SamplingScheme
from minsep.testing.assertions import assert_refuses_invalid


class SchemeContract:
    """Override the ``scheme`` fixture (or parametrize it) to check a scheme.

    Every check takes only the scheme, so a contract instance can also be driven by hand
    (``getattr(contract, name)(scheme)``).
    """

    def test_is_frozen_attrs(self, scheme: SamplingScheme) -> None:
        cls: Any = type(scheme)
        assert attrs.has(cls), "schemes are attrs classes"
        field = attrs.fields(cls)[0]
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            setattr(scheme, field.name, getattr(scheme, field.name))

    def test_public_parameters(self, scheme: SamplingScheme) -> None:
        assert 0.0 < scheme.rate <= 1.0
        assert scheme.n_steps >= 1
        assert scheme.min_separation >= 1
        assert scheme.max_participations >= 1
        assert 1.0 <= scheme.max_step_contribution < float("inf")
        params = scheme.public_parameters()
        assert params["scheme"] == scheme.name

    def test_invalid_input_is_refused_naming_the_parameter(self, scheme: SamplingScheme) -> None:
        assert_refuses_invalid(type(scheme), type(scheme).invalid_examples())

    def test_batches_are_valid_and_reproducible(self, scheme: SamplingScheme) -> None:
        population = scheme.example_population()
        first = list(scheme.batches(population, np.random.default_rng(7)))
        second = list(scheme.batches(population, np.random.default_rng(7)))
        assert len(first) == scheme.n_steps
        size = population if isinstance(population, int) else len(population)
        for a, b in zip(first, second, strict=True):
            assert a.dtype.kind == "i"
            np.testing.assert_array_equal(a, b)
            real = a[a >= 0]
            assert real.size == np.unique(real).size, "an example appears twice in a batch"
            assert np.all(real < size)

    def test_min_separation_holds(self, scheme: SamplingScheme) -> None:
        population = scheme.example_population()
        last_seen: dict[int, int] = {}
        for step, batch in enumerate(scheme.batches(population, np.random.default_rng(3))):
            for index in batch[batch >= 0].tolist():
                if index in last_seen:
                    assert step - last_seen[index] >= scheme.min_separation
                last_seen[index] = step
