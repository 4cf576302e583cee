"""The Monte Carlo accountant's route for rarely truncated schemes (docs/math.md §6.2).

A truncated scheme whose base offers a reduction (``Truncated.reduction``: b-min-sep) is
answered through the untruncated pair: the question is asked of the base at ``delta - B``
and the answer is lifted back, so every route of the untruncated pair (the escort of
docs/rdp-escort.md §8 included) serves the truncated run. The budget B is the overhead o(eps)
at the question's epsilon (calibrate, delta: the certified delta is the base's + o(eps)); an
epsilon question fixes B = max(phi^2 S, :data:`EPSILON_SHARE` delta) before any draw and raises
an answer whose overhead exceeds B to ``ln(1 / pi(empty))``, where the overhead is at most B.
It applies when

- the accountant's proposal is not ``"plain"`` (``plain`` keeps sampling the App. D pair
  itself, the direct route);
- B is at most :data:`MAX_OVERHEAD_SHARE` of delta (truncation is rare); for a delta question,
  at most ``1 / samples`` (plain verification cannot resolve deltas below about that anyway).

Otherwise the question goes to the App. D pair unchanged. The lifted answer names the reduction
in its notes and in its evidence's ``proposal`` (so it is never served from the answer cache,
whose re-derivation rules do not cover it).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from minsep.framework.accountant import Question
from minsep.framework.errors import ConfigurationError, NotAccountableError
from minsep.framework.interfaces import SamplingScheme, Strategy
from minsep.framework.results import CalibrationResult, DeltaResult, EpsilonResult, Result

if TYPE_CHECKING:
    from minsep.schemes.truncated.reduction import TruncationReduction

__all__ = [
    "EPSILON_SHARE",
    "MAX_OVERHEAD_SHARE",
    "Reduced",
    "reduce_question",
    "reduce_route",
    "reduced_base",
    "reducing",
]

#: The largest share of delta the reduction's overhead may take (epsilon, calibrate).
MAX_OVERHEAD_SHARE = 0.5
#: An epsilon question's budget: this share of delta (or phi^2 S where larger), fixed before
#: any draw; answers with overhead above it are raised to ln(1/pi(empty)).
EPSILON_SHARE = 0.05

R = TypeVar("R", bound=Result)


@attrs.frozen
class Reduced:
    """A question asked of the untruncated base (at ``delta - budget``), and how to lift its
    answer (docs/math.md §6.2)."""

    original: Question
    question: Question
    reduction: TruncationReduction
    budget: float

    def note(self) -> str:
        o = self.reduction.overheads
        return (
            f"truncation reduction (docs/math.md §6.2): B_max = {self.reduction.max_batch_size}"
            f" is exceeded at {o.expected_truncations:.3g} steps on average (S = "
            f"{o.participation:.4g}), so the untruncated pair answered, at delta - "
            f"{self.budget:.4g} where the question has a delta"
        )

    def _common(self, result: Result) -> dict[str, Any]:
        evidence = result.monte_carlo
        proposal = {
            "method": "truncation_reduction",
            "budget": self.budget,
            **self.reduction.overheads.to_dict(),
            "base_proposal": None if evidence is None else evidence.proposal,
        }
        return {
            "scheme": self.original.scheme.public_parameters(),
            "notes": (*result.notes, self.note()),
            "monte_carlo": None if evidence is None else attrs.evolve(evidence, proposal=proposal),
        }

    def lift(self, result: R) -> R:
        """The answer about the truncated scheme (module docstring)."""
        o = self.reduction.overheads
        fields = self._common(result)
        if isinstance(result, EpsilonResult):
            answer = result.certified_epsilon
            fields["delta"] = self.original.delta
            if not o.covers(answer, self.budget):
                fields["certified_epsilon"] = max(answer, o.epsilon_floor)
                fields["notes"] = (
                    *fields["notes"],
                    f"the untruncated pair certified {answer:.6g}, where the add direction's "
                    f"overhead exceeds the budget; raised to ln(1/pi(empty)) = "
                    f"{o.epsilon_floor:.6g}; proposal 'plain' samples the truncated pair",
                )
        elif isinstance(result, DeltaResult):
            lifted = min(result.certified_delta + self.budget, 1.0)
            fields["certified_delta"] = lifted
        elif isinstance(result, CalibrationResult):
            fields["delta"] = self.original.delta
        return attrs.evolve(result, **fields)


def _reduction(
    accountant: Any, scheme: SamplingScheme, strategy: Strategy, kind: str, delta: float,
    epsilon: float,
) -> tuple[TruncationReduction, float] | str | None:  # fmt: skip
    """The reduction serving this question and its budget; None where the scheme has none
    (or the proposal is plain); else why it does not serve (the direct route)."""
    hook = getattr(scheme, "reduction", None)
    if hook is None or str(getattr(accountant, "proposal", "auto")) == "plain":
        return None
    try:
        reduction: TruncationReduction = hook(strategy)
    except (NotAccountableError, ConfigurationError) as exc:
        return str(exc)
    overheads = reduction.overheads
    if kind == "epsilon":
        budget = overheads.epsilon_budget(delta, EPSILON_SHARE)
    elif kind in ("calibrate", "delta"):
        budget = overheads.at(epsilon)
    else:
        return f"the {kind} question has no truncation reduction (docs/math.md §6.2)"
    samples = getattr(accountant, "samples", None)
    if kind == "delta" and samples is not None and budget > 1.0 / samples:
        # plain verification cannot resolve deltas below about 1 / samples anyway
        return f"the truncation overhead {budget:.4g} at epsilon {epsilon:g} exceeds 1 / samples"
    if kind != "delta":
        why = overheads.why_not(budget, delta, MAX_OVERHEAD_SHARE)
        if why is not None:
            return why
    return reduction, budget


def reduce_question(accountant: Any, question: Question) -> Reduced | None:
    """The untruncated question standing in for ``question``, or None (direct route)."""
    found = _reduction(
        accountant, question.scheme, question.strategy, question.name, question.delta,
        question.epsilon,
    )  # fmt: skip
    if found is None or isinstance(found, str):
        if isinstance(found, str) and getattr(accountant, "requires_reduction", False):
            raise ConfigurationError(f"{type(accountant).__name__}: {found}")
        return None
    reduction, budget = found
    fields: dict[str, Any] = {"scheme": reduction.base}
    if math.isfinite(question.delta):
        fields["delta"] = question.delta - budget
    return Reduced(question, attrs.evolve(question, **fields), reduction, budget)


def reduce_route(
    accountant: Any, scheme: SamplingScheme, strategy: Strategy, question: str,
    numbers: Mapping[str, float],
) -> tuple[SamplingScheme, dict[str, float]]:  # fmt: skip
    """The scheme and numbers :meth:`MonteCarloAccountant.route` should plan for: the base's
    at the reduced delta where the reduction serves the question, else unchanged."""
    delta = float(numbers.get("delta", math.nan))
    epsilon = float(numbers.get("epsilon", math.nan))
    found = _reduction(accountant, scheme, strategy, question, delta, epsilon)
    if found is None or isinstance(found, str) or not math.isfinite(delta):
        return scheme, dict(numbers)
    return found[0].base, {**numbers, "delta": delta - found[1]}


def reduced_base(scheme: SamplingScheme, strategy: Strategy) -> SamplingScheme:
    """The untruncated base of a scheme with a reduction (``scheme`` itself otherwise, or
    where the reduction is refused: its question then says why)."""
    hook = getattr(scheme, "reduction", None)
    if hook is None:
        return scheme
    try:
        base: SamplingScheme = hook(strategy).base
    except (NotAccountableError, ConfigurationError):
        return scheme
    return base


def reducing(method: Callable[[Any, Question], R]) -> Callable[[Any, Question], R]:
    """Decorate ``_epsilon``/``_delta``/``_calibrate``: a question the reduction serves is
    asked of the untruncated base and its answer lifted (module docstring)."""

    @functools.wraps(method)
    def wrapper(self: Any, question: Question) -> R:
        reduced = reduce_question(self, question)
        if reduced is None:
            return method(self, question)
        return reduced.lift(method(self, reduced.question))

    return wrapper
