"""The truncation + padding wrapper (docs/math.md §6)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs
import numpy as np
import pytest

from minsep.framework.errors import ConfigurationError
from minsep.schemes import PADDING, BMinSep, MultiAttribution, Poisson, Truncated
from minsep.schemes.base import Keep, SchemeBase
from minsep.schemes.multi_attribution.scheme import example_graph
from minsep.schemes.truncated.scheme import real_examples


@attrs.frozen
class Spy(SchemeBase):
    """Wraps a scheme and records each pre-truncation sample handed to ``keep``."""

    inner: SchemeBase
    seen: list[np.ndarray] = attrs.field(factory=list, eq=False)

    @property
    def n_steps(self) -> int:
        return self.inner.n_steps

    @property
    def rate(self) -> float:
        return self.inner.rate

    @property
    def min_separation(self) -> int:
        return self.inner.min_separation

    def generate_batches(
        self, prepared: Any, rng: np.random.Generator, keep: Keep | None
    ) -> Iterator[np.ndarray]:
        def spy(sample: np.ndarray) -> np.ndarray:
            self.seen.append(sample.copy())
            return sample if keep is None else keep(sample)

        return self.inner.generate_batches(prepared, rng, spy)


def run_spy(base: SchemeBase, cap: int, size: int, seed: int) -> tuple[Spy, list[np.ndarray]]:
    spy = Spy(inner=base)
    wrapper = Truncated(base=spy, max_batch_size=cap, dataset_size=size)
    return spy, list(wrapper.batches(size, np.random.default_rng(seed)))


def test_fixed_size_padding_and_uniform_subset_of_the_sample() -> None:
    base = BMinSep(n_steps=40, rate=0.1, min_sep=3)
    spy, batches = run_spy(base, cap=18, size=200, seed=1)
    assert len(spy.seen) == len(batches) == 40
    truncated_steps = 0
    for sample, batch in zip(spy.seen, batches, strict=True):
        assert batch.shape == (18,) and batch.dtype == np.int64
        real = real_examples(batch)
        assert real.size == min(sample.size, 18)
        assert np.all(batch[real.size :] == PADDING)
        assert np.all(np.diff(real) > 0)
        assert np.isin(real, sample).all()
        truncated_steps += sample.size > 18
    assert truncated_steps > 5  # the example exercises truncation


def test_dropped_examples_stay_barred() -> None:
    # Heavy truncation: the pre-truncation samples must still respect b-min-sep, i.e. examples
    # sampled but dropped are not offered again within b - 1 steps.
    base = BMinSep(n_steps=60, rate=0.2, min_sep=4)
    spy, _ = run_spy(base, cap=5, size=300, seed=2)
    last = np.full(300, -10)
    for step, sample in enumerate(spy.seen):
        assert np.all(step - last[sample] >= 4)
        last[sample] = step


def test_truncation_keeps_a_uniform_subset() -> None:
    # Keep the first B_max would keep the low indices; a uniform subset keeps half of each half.
    base = Poisson(n_steps=400, rate=0.5)
    _, batches = run_spy(base, cap=10, size=100, seed=3)
    low = sum(int(np.sum(real_examples(b) < 50)) for b in batches)
    total = sum(real_examples(b).size for b in batches)
    # Each kept slot is a low index with probability ~1/2: sd ~ sqrt(total)/2, bound 5 sd.
    assert abs(low - total / 2) < 5 * np.sqrt(total) / 2


def test_population_must_match_dataset_size() -> None:
    scheme = Truncated(base=Poisson(n_steps=3, rate=0.1), max_batch_size=4, dataset_size=50)
    with pytest.raises(ConfigurationError, match="dataset_size = 50"):
        scheme.batches(60, np.random.default_rng(0))


def test_cannot_nest_or_wrap_non_schemes() -> None:
    inner = Truncated.example()
    with pytest.raises(ConfigurationError, match="base"):
        Truncated(base=inner, max_batch_size=3, dataset_size=200)
    with pytest.raises(ConfigurationError, match="base"):
        Truncated(base=object(), max_batch_size=3, dataset_size=200)  # type: ignore[arg-type]


def test_from_rate() -> None:
    scheme = Truncated.from_rate(
        10, 0.05, min_sep=4, warm_start=False, max_batch_size=60, dataset_size=1000
    )
    assert isinstance(scheme, Truncated)
    assert scheme.base == BMinSep(n_steps=10, rate=0.05, min_sep=4, warm_start=False)
    poisson = Truncated.from_rate(10, 0.05, base="poisson", max_batch_size=9, dataset_size=99)
    assert isinstance(poisson, Truncated) and poisson.base == Poisson(n_steps=10, rate=0.05)
    with pytest.raises(ConfigurationError, match="max_batch_size"):
        Truncated.from_rate(10, 0.05, min_sep=4, dataset_size=1000)
    with pytest.raises(ConfigurationError, match="base"):
        Truncated.from_rate(10, 0.05, base=BMinSep, max_batch_size=5, dataset_size=9)
    with pytest.raises(ConfigurationError, match="bogus"):
        Truncated.from_rate(10, 0.05, min_sep=2, bogus=1, max_batch_size=5, dataset_size=9)


def test_properties_and_public_parameters() -> None:
    base = BMinSep(n_steps=10, rate=0.05, min_sep=4)
    scheme = Truncated(base=base, max_batch_size=7, dataset_size=100)
    assert (scheme.n_steps, scheme.rate, scheme.min_separation) == (10, 0.05, 4)
    assert scheme.max_participations == base.max_participations
    assert scheme.public_parameters() == {
        "scheme": "truncated",
        "base": base.public_parameters(),
        "max_batch_size": 7,
        "dataset_size": 100,
    }


def test_wraps_multi_attribution_over_a_graph() -> None:
    graph = example_graph()
    base = MultiAttribution.example()
    scheme = Truncated(base=base, max_batch_size=3, dataset_size=len(graph))
    assert scheme.example_population() is not None
    for batch in scheme.batches(graph, np.random.default_rng(0)):
        assert batch.shape == (3,)
