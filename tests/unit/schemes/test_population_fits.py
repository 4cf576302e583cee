"""A population too large for memory is refused by name, by the check and by a scheme's
sampler (issue 28)."""

from __future__ import annotations

import numpy as np
import pytest

from minsep.framework.errors import ConfigurationError
from minsep.framework.setup import build_scheme
from minsep.schemes.base import BYTES_PER_EXAMPLE, check_population_fits


def test_a_population_too_large_for_memory_is_refused_by_name() -> None:
    assert check_population_fits(1000, "S", memory=1000 * BYTES_PER_EXAMPLE) == 1000
    with pytest.raises(ConfigurationError, match=r"S.population = 1001 .*\[1, 1,000\]"):
        check_population_fits(1001, "S", memory=1000 * BYTES_PER_EXAMPLE)
    scheme = build_scheme("b_min_sep", 16, 1 / 8, {"min_sep": 4})
    with pytest.raises(ConfigurationError, match="population = 1000000000000") as info:
        next(iter(scheme.batches(10**12, np.random.default_rng(0))))
    assert info.value.parameter == "population"
    assert len(next(iter(scheme.batches(1000, np.random.default_rng(0))))) <= 1000
