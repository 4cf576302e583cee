"""Strategies: construction, validation, dense comparisons and the docs/math.md §8 oracle."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.special import comb

from minsep.framework.errors import ConfigurationError
from minsep.framework.registries import strategies
from minsep.strategies import (
    BandedToeplitz,
    Identity,
    clear_memory_cache,
    inverse_coefficients,
    prefix_mse,
    toeplitz_matrix,
)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MINSEP_CACHE_DIR", str(tmp_path / "cache"))
    clear_memory_cache()


COEFFICIENT_CASES = [
    (1.0,),
    (1.0, 0.5),
    (1.0, 0.5, 0.25),
    (0.9, 0.7, 0.7, 0.2, 0.1),
    (1.0, 0.0, 0.3),  # non-monotone, with a zero band
    (2.0, 0.3, 0.6, 0.1),  # non-monotone
]


def _dense_inverse(c: tuple[float, ...], n: int) -> np.ndarray:
    k = len(c)
    C = np.zeros((n, n))
    for i in range(n):
        for j in range(max(0, i - k + 1), i + 1):
            C[i, j] = c[i - j]
    return np.linalg.inv(C)


def test_registered_names() -> None:
    assert strategies.get("identity") is Identity
    assert strategies.get("banded_toeplitz") is BandedToeplitz


@pytest.mark.parametrize("c", COEFFICIENT_CASES)
@pytest.mark.parametrize("n", [1, 2, 3, 7, 25])
def test_matrix_inverse_and_prefix_mse_match_dense(c: tuple[float, ...], n: int) -> None:
    C = toeplitz_matrix(c, n)
    for i in range(n):
        for j in range(n):
            expected = c[i - j] if 0 <= i - j < len(c) else 0.0
            assert C[i, j] == expected
    inverse = _dense_inverse(c, n)
    np.testing.assert_allclose(inverse_coefficients(c, n), inverse[:, 0], rtol=1e-10, atol=1e-12)
    A = np.tril(np.ones((n, n)))
    dense = np.linalg.norm(A @ inverse, "fro") ** 2 / n
    assert prefix_mse(c, n) == pytest.approx(dense, rel=1e-10)


def test_strategy_methods_use_unit_norm_coefficients() -> None:
    raw = (3.0, 1.5, 0.75)
    strategy = BandedToeplitz(raw)
    unit = np.array(raw) / np.linalg.norm(raw)
    np.testing.assert_allclose(strategy.coefficients, unit, rtol=1e-15)
    assert math.isclose(float(np.linalg.norm(strategy.coefficients)), 1.0, rel_tol=1e-15)
    assert strategy.bands == 3
    n = 11
    np.testing.assert_allclose(strategy.matrix(n), toeplitz_matrix(unit, n), rtol=1e-15)
    np.testing.assert_allclose(
        strategy.inverse_coefficients(n), np.linalg.inv(strategy.matrix(n))[:, 0], rtol=1e-10
    )
    assert strategy.prefix_mse(n) == pytest.approx(prefix_mse(unit, n), rel=1e-14)
    # Scale invariance: ||c||^2 prefix_mse(c) does not depend on the scale of c.
    assert strategy.prefix_mse(n) == pytest.approx(11.8125 * prefix_mse(raw, n), rel=1e-12)


def test_prefix_mse_oracle_math_section_8() -> None:
    """Normalised C(2j, j)/4^j, k = 4, n = 16: ||A C^-1||_F^2 = 60.2918 (docs/math.md §8)."""
    j = np.arange(4)
    strategy = BandedToeplitz(tuple(comb(2 * j, j) / 4.0**j))
    assert 16 * strategy.prefix_mse(16) == pytest.approx(60.2918, abs=5e-5)


def test_identity() -> None:
    identity = Identity()
    np.testing.assert_array_equal(identity.coefficients, [1.0])
    assert identity.bands == 1
    np.testing.assert_array_equal(identity.matrix(5), np.eye(5))
    for n in (1, 2, 10, 1000):
        assert identity.prefix_mse(n) == pytest.approx((n + 1) / 2, rel=1e-13)
    assert Identity.for_steps(100) == Identity()
    with pytest.raises(ConfigurationError, match="bands"):
        Identity.for_steps(100, bands=4)


def test_banded_toeplitz_of_one_band_is_the_identity() -> None:
    strategy = BandedToeplitz((2.5,))
    np.testing.assert_array_equal(strategy.coefficients, [1.0])
    assert strategy.prefix_mse(9) == Identity().prefix_mse(9)


def test_frozen_hashable_and_public_parameters() -> None:
    a = BandedToeplitz((1.0, 0.5))
    b = BandedToeplitz([2.0, 1.0])
    assert a == b and hash(a) == hash(b)
    with pytest.raises(AttributeError):
        a._coefficients = (1.0,)  # type: ignore[misc]
    params = a.public_parameters()
    assert params["strategy"] == "banded_toeplitz"
    assert params["bands"] == 2
    assert params["coefficients"] == pytest.approx([2 / math.sqrt(5), 1 / math.sqrt(5)])
    assert "coefficients=" in repr(a)
    assert Identity().public_parameters() == {
        "strategy": "identity",
        "bands": 1,
        "coefficients": [1.0],
    }


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"coefficients": ()}, "coefficients"),
        ({"coefficients": (0.0, 1.0)}, "coefficients"),
        ({"coefficients": (1.0, -1e-3)}, "coefficients"),
        ({"coefficients": (1.0, float("nan"))}, "coefficients"),
        ({"coefficients": [[1.0, 0.5]]}, "coefficients"),
        ({"coefficients": None}, "coefficients"),
    ],
)
def test_invalid_coefficients_are_refused(kwargs: dict[str, Any], parameter: str) -> None:
    with pytest.raises(ConfigurationError, match=parameter):
        BandedToeplitz(**kwargs)


def test_method_arguments_are_validated() -> None:
    strategy = BandedToeplitz.example()
    for call in (
        lambda: strategy.matrix(0),
        lambda: strategy.prefix_mse(-3),
        lambda: strategy.prefix_mse(2.5),  # type: ignore[arg-type]
        lambda: strategy.inverse_coefficients(True),
        lambda: strategy.sensitivity(0, 1, 1),
    ):
        with pytest.raises(ConfigurationError, match="n_steps"):
            call()
    with pytest.raises(ConfigurationError, match="min_sep"):
        strategy.sensitivity(10, 0, 1)
    with pytest.raises(ConfigurationError, match="max_participations"):
        strategy.sensitivity(10, 2, 0)
    with pytest.raises(ConfigurationError, match="n_steps"):
        prefix_mse((1.0, 0.5), 0)


def test_for_steps() -> None:
    strategy = BandedToeplitz.for_steps(64, bands=4)
    assert strategy == BandedToeplitz.optimal(64, 4)
    assert BandedToeplitz.for_steps(64, bands=4, objective="max") == BandedToeplitz.optimal(
        64, 4, "max"
    )
    np.testing.assert_array_equal(BandedToeplitz.for_steps(64, bands=1).coefficients, [1.0])
    fixed = BandedToeplitz.for_steps(64, coefficients=(1.0, 0.5))
    assert fixed == BandedToeplitz((1.0, 0.5))
    with pytest.raises(ConfigurationError, match="bands"):
        BandedToeplitz.for_steps(64)
    with pytest.raises(ConfigurationError, match="bandz"):
        BandedToeplitz.for_steps(64, bandz=4)
    with pytest.raises(ConfigurationError, match="coefficients"):
        BandedToeplitz.for_steps(64, bands=2, coefficients=(1.0, 0.5))
    with pytest.raises(ConfigurationError, match="bands"):
        BandedToeplitz.for_steps(64, bands=65)
    with pytest.raises(ConfigurationError, match="objective"):
        BandedToeplitz.for_steps(64, bands=2, objective="median")
