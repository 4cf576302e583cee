"""Cyclic Poisson's PLD: the last column cut at step n is accounted exactly (docs/math.md §4),
and for the random phase the fixed-partition PLD is labelled an upper bound (§4.1)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from minsep.framework.registries import accountants
from minsep.framework.setup import build_scheme, build_strategy

DELTA = 1.2e-5


def _question(partition: str = "equal", steps: int = 256, bands: int = 7, rate: float = 1 / 7):
    scheme = build_scheme("cyclic_poisson", steps, rate, {"min_sep": bands, "partition": partition})
    return scheme, build_strategy(steps, bands)


def test_the_cut_last_column_norm_is_read_off_the_matrix() -> None:
    scheme, strategy = _question()
    m = math.ceil(256 / 7)
    column = strategy.matrix(256)[:, (m - 1) * 7]
    whole = strategy.matrix(256)[:, 0]
    assert scheme.last_column_norm(strategy) == pytest.approx(
        float(np.linalg.norm(column) / np.linalg.norm(whole)), rel=1e-12
    )
    assert scheme.last_column_norm(strategy) < 1.0
    uncut, _ = _question(steps=252 + 7)  # 259 = 37 * 7: the last column is whole
    assert uncut.last_column_norm(strategy) == 1.0


def test_without_amplification_the_pld_equals_the_unamplified_gaussian() -> None:
    """q = 1: the mechanism is the Gaussian of the group's summed columns, exactly what the
    unamplified accountant computes; the old event (every column whole) gave 46.636."""
    scheme, strategy = _question()
    pld = accountants.get("pld")().epsilon(scheme, strategy, 0.952, DELTA)
    gaussian = accountants.get("gaussian")().epsilon(scheme, strategy, 0.952, DELTA)
    assert pld.method == "exact"
    assert gaussian.certified_epsilon <= pld.certified_epsilon
    assert pld.certified_epsilon == pytest.approx(gaussian.certified_epsilon, rel=1e-5)


def test_amplified_pld_lies_between_one_fewer_and_one_more_whole_column() -> None:
    from dp_accounting import dp_event as events

    scheme, strategy = _question(steps=62, bands=4, rate=1 / 16)
    accountant = accountants.get("pld")()
    cut = accountant.epsilon(scheme, strategy, 1.0, DELTA).certified_epsilon

    def whole(count: int) -> float:
        one = events.PoissonSampledDpEvent(scheme.group_rate, events.GaussianDpEvent(1.0))
        return float(accountant._epsilon_of(events.SelfComposedDpEvent(one, count), DELTA))

    m = scheme.compositions
    assert scheme.last_column_norm(strategy) < 1.0
    assert whole(m - 1) < cut < whole(m)


def test_random_phase_pld_is_labelled_an_upper_bound() -> None:
    for partition, method in (("equal", "exact"), ("random", "upper bound")):
        scheme, strategy = _question(partition, steps=64, bands=4, rate=1 / 16)
        pld = accountants.get("pld")()
        assert pld.epsilon(scheme, strategy, 1.0, 1e-5).method == method
        assert pld.delta(scheme, strategy, 1.0, 2.0).method == method
        assert pld.calibrate(scheme, strategy, 4.0, 1e-5).method == method
