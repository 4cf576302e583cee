"""Cyclic Poisson's PLD says what it is (docs/math.md §4, §4.1): the whole-column event is
exact for the fixed partition when group 0's last column is whole, and an upper bound when that
column is cut at step n or when the phase is random."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting import dp_event as events

from minsep.framework.registries import accountants
from minsep.framework.setup import build_scheme, build_strategy

DELTA = 1.2e-5


def _question(partition: str = "equal", steps: int = 256, bands: int = 7, rate: float = 1 / 7):
    scheme = build_scheme("cyclic_poisson", steps, rate, {"min_sep": bands, "partition": partition})
    return scheme, build_strategy(steps, bands)


def test_the_cut_last_column_norm_is_read_off_the_matrix() -> None:
    scheme, strategy = _question()
    m = math.ceil(256 / 7)
    matrix = strategy.matrix(256)
    expected = np.linalg.norm(matrix[:, (m - 1) * 7]) / np.linalg.norm(matrix[:, 0])
    assert scheme.last_column_norm(strategy) == pytest.approx(float(expected), rel=1e-12)
    assert scheme.last_column_norm(strategy) < 1.0
    whole, strategy_259 = _question(steps=259)  # 259 = 37 * 7: the last column is whole
    assert whole.last_column_norm(strategy_259) == 1.0


def test_a_cut_column_makes_the_pld_an_upper_bound_above_the_exact_event() -> None:
    """q = 1: the exact mechanism is the Gaussian of the group's summed columns (what the
    unamplified accountant computes, 46.409); the whole-column event gives 46.636."""
    scheme, strategy = _question()
    pld = accountants.get("pld")().epsilon(scheme, strategy, 0.952, DELTA)
    gaussian = accountants.get("gaussian")().epsilon(scheme, strategy, 0.952, DELTA)
    assert pld.method == "upper bound"
    assert pld.certified_epsilon == pytest.approx(46.636, abs=1e-3)
    assert gaussian.certified_epsilon == pytest.approx(46.409, abs=1e-3)
    s = scheme.last_column_norm(strategy)
    one = events.GaussianDpEvent  # q = 1: no subsampling
    exact = events.ComposedDpEvent([events.SelfComposedDpEvent(one(0.952), 36), one(0.952 / s)])
    exact_epsilon = accountants.get("pld")()._epsilon_of(exact, DELTA)
    assert exact_epsilon == pytest.approx(gaussian.certified_epsilon, rel=1e-5)
    assert exact_epsilon < pld.certified_epsilon


@pytest.mark.parametrize(
    ("partition", "steps", "method"),
    [("equal", 64, "exact"), ("random", 64, "upper bound"), ("equal", 62, "upper bound")],
)
def test_pld_results_say_exact_or_upper_bound(partition: str, steps: int, method: str) -> None:
    scheme, strategy = _question(partition, steps=steps, bands=4, rate=1 / 16)
    pld = accountants.get("pld")()
    assert pld.epsilon(scheme, strategy, 1.0, 1e-5).method == method
    assert pld.delta(scheme, strategy, 1.0, 2.0).method == method
    assert pld.calibrate(scheme, strategy, 4.0, 1e-5).method == method
    truncated = build_scheme(
        "truncated", steps, 1 / 16,
        {"base": "cyclic_poisson", "min_sep": 4, "max_batch_size": 40, "dataset_size": 480},
    )  # fmt: skip
    if partition == "equal":
        assert pld.epsilon(truncated, strategy, 1.0, 1e-5).method == method
