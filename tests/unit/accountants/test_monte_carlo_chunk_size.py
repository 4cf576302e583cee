"""Monte Carlo results record the chunk size their draws depend on (issue 28)."""

from __future__ import annotations

import json

from minsep.accountants.monte_carlo import RunSettings
from minsep.framework.registries import accountants
from minsep.framework.setup import build_scheme


def test_monte_carlo_results_record_the_chunk_size_their_draws_depend_on() -> None:
    from minsep.framework.montecarlo.planning import fixed_bytes, sample_bytes
    from minsep.framework.results import Result
    from minsep.framework.setup import build_strategy

    scheme = build_scheme("b_min_sep", 16, 1 / 8, {"min_sep": 4})
    strategy = build_strategy(16, 4)
    mc = accountants.get("monte_carlo")
    plain = mc(samples=4000, pilot_samples=1000, seed=3, run=RunSettings(chunk_size=1000))
    model = plain._model(scheme, strategy)
    budget = fixed_bytes(model) + 300 * sample_bytes(model, "numpy")
    small = mc(samples=4000, pilot_samples=1000, seed=3, run=RunSettings(memory_budget=budget))
    first = plain.epsilon(scheme, strategy, 1.0, 1e-2)
    second = small.epsilon(scheme, strategy, 1.0, 1e-2)
    assert (first.chunk_size, second.chunk_size) == (1000, 300)
    assert Result.from_json(first.to_json()).chunk_size == 1000
    assert json.loads(first.to_json())["monte_carlo"]["chunk_size"] == 1000
