"""PLD calibration at a loose target returns the cost floor without building a PLD, soundly."""

from __future__ import annotations

from typing import Any

from minsep.framework.registries import accountants, schemes, strategies


def _pair() -> tuple[Any, Any]:
    scheme: Any = schemes.get("poisson")(n_steps=8, rate=0.25)
    strategy: Any = strategies.get("identity")()
    return scheme, strategy


def test_loose_target_returns_the_floor_backed_by_the_unamplified_bound() -> None:
    scheme, strategy = _pair()
    pld: Any = accountants.get("pld")()
    floor = pld.sigma_floor(scheme, strategy)
    result = pld.calibrate(scheme, strategy, 1e6, 1e-3)
    assert result.certified and result.sigma == floor and result.candidates == (floor,)
    bound = accountants.get("gaussian")().epsilon(scheme, strategy, floor, 1e-3)
    assert bound.certified_epsilon <= 1e6  # the bound that makes the floor a sound answer
    assert "no PLD was built" in " ".join(result.notes)


def test_tight_target_still_searches_above_the_floor() -> None:
    scheme, strategy = _pair()
    pld: Any = accountants.get("pld")()
    result = pld.calibrate(scheme, strategy, 2.0, 1e-3)
    assert result.sigma > pld.sigma_floor(scheme, strategy)
    assert len(result.candidates) > 1
    exact = pld.epsilon(scheme, strategy, result.sigma, 1e-3).epsilon
    assert exact <= 2.0
