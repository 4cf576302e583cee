"""``SamplingScheme.prefix_scheme`` (docs/math.md §1.2): the first k batches of the n-step scheme
are the k-step scheme's, drawn from the same generator state, for the schemes that declare it."""

from __future__ import annotations

import numpy as np
import pytest

from minsep.framework.registries import schemes

DECLARED = [
    ("poisson", {}),
    ("b_min_sep", {"min_sep": 4}),
    ("b_min_sep", {"min_sep": 4, "warm_start": False}),
]


@pytest.mark.parametrize(("name", "options"), DECLARED)
def test_the_prefix_scheme_draws_the_first_batches(name: str, options: dict[str, object]) -> None:
    whole = schemes.get(name).from_rate(40, 1 / 8, **options)
    prefix = whole.prefix_scheme(13)
    assert prefix is not None and prefix.n_steps == 13
    long = list(whole.batches(500, np.random.default_rng(7)))
    short = list(prefix.batches(500, np.random.default_rng(7)))
    assert len(short) == 13
    for a, b in zip(long[:13], short, strict=True):
        np.testing.assert_array_equal(np.sort(a), np.sort(b))


@pytest.mark.parametrize("name", ["balls_in_bins", "cyclic_poisson"])
def test_schemes_whose_law_depends_on_n_declare_no_prefix(name: str) -> None:
    scheme = schemes.get(name).example()
    assert scheme.prefix_scheme(max(1, scheme.n_steps // 2)) is None
