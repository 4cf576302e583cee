"""Strategy coefficients (issue 13 §4): normalised at any normal scale, to the same bits as
before for ordinary values, and bad ones refused by name."""

from __future__ import annotations

import math

import numpy as np
import pytest

from minsep.framework.errors import ConfigurationError
from minsep.framework.registries import strategies


@pytest.mark.parametrize("scale", [1e308, 1e-300, 1e-160, 1.0, 3e200])
def test_coefficients_normalise_at_any_normal_scale(scale: float) -> None:
    coefficients = strategies.get("banded_toeplitz")((scale, scale)).coefficients
    np.testing.assert_allclose(coefficients, [math.sqrt(0.5)] * 2, rtol=1e-15)


def test_ordinary_coefficients_normalise_to_the_same_bits_as_before() -> None:
    values = (1.0, 0.7, 0.3)
    norm = math.sqrt(sum(v * v for v in values))
    got = tuple(strategies.get("banded_toeplitz")(values).coefficients)
    assert got == tuple(v / norm for v in values)


@pytest.mark.parametrize(
    "values",
    [(1e-320, 1e-320), (5e-324,), (0.0, 0.0), (float("inf"), 1.0), (1.0, -1e-300), (math.nan,)],
)
def test_bad_coefficients_are_refused_by_name(values: tuple[float, ...]) -> None:
    with pytest.raises(ConfigurationError, match="coefficients"):
        strategies.get("banded_toeplitz")(values)


# -- numpy seeds and other numeric options -------------------------------------------------
