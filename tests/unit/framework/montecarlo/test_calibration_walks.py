"""Algorithm 5 from a start inside the sweep (docs/math.md §7): the first walk begins at the
given entry; should it fail, a second walk begins at the top and stops before it; both verify at
the base delta of two claims."""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs
import pytest

from minsep.framework.errors import CalibrationError, ConfigurationError
from minsep.framework.montecarlo import EngineConfig, base_delta, calibrate_sweep
from minsep.framework.montecarlo.proposals import ProposalInfo, SweepQuestion
from tests.unit.montecarlo_toys import GaussianToy

SWEEP = (3.0, 2.0, 1.5, 1.2, 1.0, 0.9, 0.8)
CONFIG = EngineConfig(chunk_size=20_000, progress=False)


@attrs.define
class ScriptedPlan:
    """A sweep plan whose entries pass down to ``last_pass`` (inclusive), recording checks."""

    question: SweepQuestion
    last_pass: int
    checked: list[int] = attrs.field(factory=list)

    @property
    def base_delta(self) -> float:
        question = self.question
        return base_delta(question.samples, question.delta, candidates=question.walks)

    @property
    def failure_probability(self) -> float:
        return 0.0

    @property
    def info(self) -> ProposalInfo | None:
        return None

    def check(self, index: int) -> tuple[float, bool]:
        self.checked.append(index)
        return float(index), index <= self.last_pass

    def unchecked(self, index: int) -> float:
        return math.nan

    def refusal(self, deltas: Sequence[float]) -> str:
        return "no entry passed"


@attrs.define
class ScriptedProposal:
    last_pass: int
    plans: list[ScriptedPlan] = attrs.field(factory=list)
    betting: bool = False

    def plan_sweep(self, model: object, question: SweepQuestion) -> ScriptedPlan:
        plan = ScriptedPlan(question, self.last_pass)
        self.plans.append(plan)
        return plan


def run(last_pass: int, start: int) -> tuple[int, list[int], int, list[float]]:
    proposal = ScriptedProposal(last_pass)
    result = calibrate_sweep(
        GaussianToy(), SWEEP, 1.0, 1e-3, samples=50_000, seed=0, proposal=proposal, start=start
    )  # type: ignore[arg-type]
    plan = proposal.plans[0]
    return result.index, plan.checked, plan.question.walks, list(result.deltas)


def test_a_walk_from_the_top_is_algorithm_5() -> None:
    index, checked, walks, _ = run(last_pass=3, start=0)
    assert (index, checked, walks) == (3, [0, 1, 2, 3, 4], 1)


def test_a_passing_start_walks_down_only() -> None:
    index, checked, walks, deltas = run(last_pass=4, start=3)
    assert (index, checked, walks) == (4, [3, 4, 5], 2)
    assert math.isnan(deltas[0]) and deltas[3] == 3.0  # the entries above were never checked


def test_a_failing_start_walks_again_from_the_top_and_stops_before_it() -> None:
    index, checked, walks, _ = run(last_pass=1, start=4)
    assert (index, checked, walks) == (1, [4, 0, 1, 2], 2)
    index, checked, _, _ = run(last_pass=3, start=4)  # every entry above the start passes
    assert (index, checked) == (3, [4, 0, 1, 2, 3])


def test_no_walk_passing_is_refused() -> None:
    with pytest.raises(CalibrationError, match="no entry passed"):
        run(last_pass=-1, start=2)


@pytest.mark.parametrize("start", [-1, len(SWEEP), 1.5])
def test_a_start_outside_the_sweep_is_refused(start: float) -> None:
    with pytest.raises(ConfigurationError, match="start"):
        run(last_pass=2, start=start)  # type: ignore[arg-type]


def test_two_walks_verify_at_the_base_delta_of_two_claims() -> None:
    """Plain draws from a start: sound against the toy's exact curve, at a smaller base delta
    than the one walk from the top."""
    model, epsilon, delta = GaussianToy(), 2.0, 1e-3
    sweep = tuple(2.4 / 1.03**j for j in range(16))
    top = calibrate_sweep(model, sweep, epsilon, delta, samples=60_000, seed=1, config=CONFIG)
    inside = calibrate_sweep(
        model, sweep, epsilon, delta, samples=60_000, seed=1, config=CONFIG, start=top.index - 2
    )
    assert inside.base_delta == base_delta(60_000, delta, candidates=2) < top.base_delta
    assert inside.start == top.index - 2 and inside.index >= inside.start
    assert model.exact_delta(epsilon, inside.sigma) <= delta
    assert inside.sigma >= top.sigma  # the stricter base delta never releases a smaller sigma
