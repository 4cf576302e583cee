"""``compare`` with strategies as a compared dimension (issue 18 item 4).

A strategy that is not banded (a geometric Toeplitz C, registered for the test only) gets
b-min-sep rows at every feasible min-sep, accounted by the bounds of docs/math.md §2.1, and an
unamplified row; the table names the best strategy per scheme.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from minsep.framework.compare import (
    ComparisonSetup,
    best_strategies,
    compare,
    format_csv,
    format_table,
)
from minsep.framework.errors import ConfigurationError
from minsep.framework.registries import strategies
from minsep.framework.setup import parse_strategy_spec
from tests.theorems.nonbanded import DenseTestStrategy, geometric_column, toeplitz_from_column

NAME = "geometric_test"


class GeometricTest(DenseTestStrategy):
    """``t_m = ratio^m`` (unit norm) for any n; sensitivity by the triangle inequality."""

    @classmethod
    def for_steps(cls, n_steps: int, **options: Any) -> GeometricTest:
        column = geometric_column(n_steps, float(options.get("ratio", 0.5)))
        return cls(toeplitz_from_column(column), column)

    def public_parameters(self) -> dict[str, Any]:
        return {"strategy": NAME}

    def sensitivity(self, n_steps: int, min_sep: int, max_participations: int) -> float:
        norms = np.sqrt(np.sum(self.matrix(n_steps) ** 2, axis=0))
        count = min(max_participations, -(-n_steps // min_sep))
        return float(np.sort(norms)[::-1][:count].sum())  # >= ||sum of the columns||


@pytest.fixture
def registered() -> Iterator[str]:
    strategies.register(NAME)(GeometricTest)
    try:
        yield NAME
    finally:
        strategies.unregister(NAME)


def test_a_non_banded_strategy_is_compared_at_every_feasible_min_sep(registered: str) -> None:
    spec = f"{registered}:ratio=0.4"
    setup = ComparisonSetup(
        n_steps=16,
        rate=1 / 4,
        delta=0.05,
        sigma=2.0,
        bands=(2,),
        strategies=(spec,),
        families=("b_min_sep", "unamplified"),
        accountant_options={"samples": 2000, "pilot_samples": 1000, "seed": 5, "progress": False},
    )
    rows = compare(setup)
    ours = [r for r in rows if r.strategy == spec]
    amplified = sorted(r.min_sep for r in ours if r.family == "b_min_sep")
    assert amplified == [1, 2, 4]  # every power of two up to 1/p0: no bands to respect
    assert all(r.bands is None and r.accountant == "monte_carlo" for r in ours if r.min_sep < 4)
    assert any(r.family == "unamplified" for r in ours)
    assert all(r.epsilon is not None and np.isfinite(r.epsilon) for r in rows)
    banded = [r for r in rows if r.strategy == "banded_toeplitz/k=2"]
    assert banded and all(r.bands == 2 for r in banded)
    winners = best_strategies(rows)
    assert [w.family for w in winners] == ["b_min_sep", "unamplified"]
    for winner in winners:
        same = [r.mse for r in rows if r.family == winner.family and r.mse is not None]
        assert winner.mse == min(same)
    table = format_table(setup, rows)
    assert "best strategy per scheme" in table and spec in table
    assert "strategy" in format_csv(rows).splitlines()[0]


def test_a_banded_variant_respects_its_bands() -> None:
    setup = ComparisonSetup(
        n_steps=16,
        rate=1 / 4,
        sigma=2.0,
        bands=(1,),
        strategies=("banded_toeplitz:bands=2:objective=max",),
    )
    seps = setup.context().strategies["banded_toeplitz:bands=2:objective=max"]
    assert seps == (2, 4)


def test_without_extra_strategies_the_table_is_unchanged() -> None:
    setup = ComparisonSetup(n_steps=16, rate=1 / 4, sigma=2.0, bands=(1,))
    assert setup.context().strategies == {}
    assert "strategy" not in format_table(setup, []).splitlines()[1]


@pytest.mark.parametrize(
    "spec", ["no_such_strategy", "banded_toeplitz:bands", "banded_toeplitz:=3"]
)
def test_bad_specs_are_refused_naming_the_option(spec: str) -> None:
    with pytest.raises(ConfigurationError, match="strategies"):
        ComparisonSetup(sigma=1.0, strategies=(spec,))


def test_spec_values_are_typed() -> None:
    assert parse_strategy_spec("banded_toeplitz:bands=4:objective=max") == (
        "banded_toeplitz",
        {"bands": 4, "objective": "max"},
    )
