"""The accountant contract: checked questions about (scheme, strategy) and their answers.

Every answer is a result object saying how it was obtained; accounting never under-reports
epsilon (docs/math.md §7 for the Monte Carlo certificates).
"""

from __future__ import annotations

import enum
import math
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import attrs

from minsep.framework.environment import environment
from minsep.framework.errors import ConfigurationError, NotAccountableError
from minsep.framework.scheme import SamplingScheme
from minsep.framework.strategy import Strategy
from minsep.framework.validation import check_range

if TYPE_CHECKING:
    from minsep.framework.results import (
        CalibrationResult,
        CurveResult,
        DeltaResult,
        EpsilonResult,
    )


#: A result type (EpsilonResult, DeltaResult, CalibrationResult).
R = TypeVar("R")


#: Default failure probability of a simultaneous Monte Carlo curve (``Accountant.delta_curve``).
DEFAULT_CURVE_FAILURE = 1e-6


#: Numeric arguments of the questions: ``check_range`` keywords of their allowed ranges.
_QUESTION_NUMBERS: dict[str, dict[str, Any]] = {
    "sigma": {"low": 0.0, "low_open": True},
    "delta": {"low": 0.0, "high": 1.0, "low_open": True, "high_open": True},
    "epsilon": {"low": 0.0},
}


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@attrs.frozen
class Question:
    """One checked question to an accountant: ``name`` (``"epsilon"``, ``"delta"``,
    ``"calibrate"``, ...) about ``(scheme, strategy)`` with its numbers as Python floats
    (NaN where the question has no such number).

    Built by :meth:`checked`, which refuses, before any work and with a ConfigurationError
    naming the argument: a scheme that is not a :class:`SamplingScheme` or a strategy that is
    not a :class:`Strategy` (swapped or None arguments), and numbers out of range (sigma > 0,
    delta in (0, 1), epsilon >= 0, finite; strings and bools refused, numpy scalars taken).
    """

    accountant: Accountant
    name: str
    scheme: SamplingScheme
    strategy: Strategy
    sigma: float = math.nan
    delta: float = math.nan
    epsilon: float = math.nan

    @classmethod
    def checked(
        cls,
        accountant: Accountant,
        name: str,
        scheme: Any,
        strategy: Any,
        **numbers: Any,
    ) -> Question:
        """The question with its arguments checked (see the class)."""
        owner = f"{type(accountant).__name__}.{name}"
        order = ", ".join(["scheme", "strategy", *numbers])
        for argument, value, kind in (
            ("scheme", scheme, SamplingScheme),
            ("strategy", strategy, Strategy),
        ):
            if not isinstance(value, kind):
                raise ConfigurationError(
                    f"{owner}.{argument} = {_short(value)} is invalid: must be a "
                    f"{kind.__name__} (got {type(value).__name__}; the arguments are ({order}))",
                    parameter=argument,
                )
        checked = {}
        for argument, value in numbers.items():
            limits = _QUESTION_NUMBERS.get(argument)
            if limits is None:
                raise ConfigurationError(f"{owner} has no argument {argument!r}")
            checked[argument] = float(check_range(owner, argument, value, **limits))
        return cls(accountant, name, scheme, strategy, **checked)

    def provenance(self, method: str) -> dict[str, Any]:
        """The fields every result of this question shares (who answered, how, about what)."""
        return self.accountant.provenance(self.scheme, self.strategy, method)

    def bound_epsilon(
        self, value: float, method: str = "exact", notes: Sequence[str] = ()
    ) -> EpsilonResult:
        """The answer of a deterministic route (exact, or a proven bound such as RDP): its
        epsilon is its own certificate, with no failure probability."""
        from minsep.framework.results import EpsilonResult

        return EpsilonResult(
            **self.provenance(method),
            notes=tuple(notes),
            epsilon=value,
            certified_epsilon=value,
            delta=self.delta,
            sigma=self.sigma,
        )

    def bound_delta(
        self, value: float, method: str = "exact", notes: Sequence[str] = ()
    ) -> DeltaResult:
        """:meth:`bound_epsilon` for a delta question."""
        from minsep.framework.results import DeltaResult

        return DeltaResult(
            **self.provenance(method),
            notes=tuple(notes),
            delta=value,
            certified_delta=value,
            epsilon=self.epsilon,
            sigma=self.sigma,
        )

    def timed(self, answer: Callable[[Question], R]) -> R:
        """``answer(self)`` with ``seconds`` set to the wall time it took and the
        ``environment`` (package versions, git commit) that computed it."""
        start = time.perf_counter()
        result = answer(self)
        return attrs.evolve(  # type: ignore[misc]
            result, seconds=time.perf_counter() - start, environment=environment()
        )


class AccountantKind(enum.Enum):
    """What an accountant's answers are; ``auto`` tries the kinds in this order."""

    #: The privacy curve itself, up to a discretisation that only over-reports (PLD).
    EXACT = "exact"
    #: Certified from samples, the failure probability folded into delta (docs/math.md §7).
    MONTE_CARLO = "Monte Carlo"
    #: A deterministic upper bound, answered in seconds (Renyi DP, unamplified Gaussian).
    BOUND = "deterministic bound"


class Accountant(ABC):
    """Turns (scheme, strategy, sigma) into privacy guarantees.

    Every answer is a result object carrying how it was obtained (exact, Monte Carlo with a
    failure probability, ...). Accounting must never under-report epsilon.

    An accountant declares what it is (:attr:`kind`, :attr:`sound`, :attr:`rank`) and which
    of its options the command line sets (:attr:`command_line_options`); ``--accountant auto``,
    the first answer and ``compare`` pick among the registered accountants from these
    declarations (:func:`minsep.framework.setup.preference`), plugins included.
    """

    #: What the answers are (an exact curve, a Monte Carlo certificate, a deterministic bound).
    kind: ClassVar[AccountantKind] = AccountantKind.BOUND
    #: The accountant's claim that its answers never under-report epsilon or delta (with the
    #: failure probability folded in for Monte Carlo), proven in its docs. Only sound
    #: accountants are picked automatically; a plugin opts in by setting it.
    sound: ClassVar[bool] = False
    #: Order among sound accountants of one kind (smaller first: tighter or cheaper); names
    #: break ties.
    rank: ClassVar[int] = 50
    #: The options the command line sets, as ``{field: flag dest}`` (the flag is ``--`` and the
    #: dest with ``-`` for ``_``). None (the default): every attrs init field of a command-line
    #: kind under its own name. A flag no other accountant or command has is generated.
    command_line_options: ClassVar[Mapping[str, str] | None] = None

    registry_name: ClassVar[str]
    #: The registry the class is registered in (set by ``Registry.register``); lets
    #: :meth:`require` name the accountants that can, without importing the registries.
    registry: ClassVar[Any]

    @classmethod
    def example(cls) -> Accountant:
        """A cheap valid instance (e.g. few Monte Carlo samples) for the contract tests."""
        return cls()

    @classmethod
    def invalid_examples(cls) -> list[tuple[dict[str, Any], str]]:
        """``(constructor kwargs, parameter name)`` pairs that must raise ConfigurationError."""
        return []

    @abstractmethod
    def why_not(self, scheme: SamplingScheme, strategy: Strategy) -> str | None:
        """None if this accountant can account the pair, else the reason it cannot."""

    def provenance(self, scheme: SamplingScheme, strategy: Strategy, method: str) -> dict[str, Any]:
        """The fields every result shares: who answered, how, and about what."""
        return {
            "accountant": getattr(type(self), "registry_name", type(self).__name__),
            "method": method,
            "scheme": scheme.public_parameters(),
            "strategy": strategy.public_parameters(),
        }

    def start_workers(self, scheme: SamplingScheme, strategy: Strategy, sigma: float = 1.0) -> None:
        """Start the worker processes a question on the pair will use, without waiting, so
        that their start-up overlaps the caller's own work (the command line calls it before
        its first answer). Answers must not depend on it. Default: nothing to start."""
        return None

    def supports(self, scheme: SamplingScheme, strategy: Strategy) -> bool:
        """True when :meth:`why_not` finds no obstacle."""
        return self.why_not(scheme, strategy) is None

    def require(self, scheme: SamplingScheme, strategy: Strategy) -> None:
        """Raise NotAccountableError naming the accountants that can account the pair."""
        reason = self.why_not(scheme, strategy)
        if reason is None:
            return
        registry = getattr(type(self), "registry", None)
        able = (
            []
            if registry is None
            else [e.name for e in registry.entries() if e.cls().supports(scheme, strategy)]
        )
        raise NotAccountableError(
            f"accountant {getattr(self, 'registry_name', type(self).__name__)!r} cannot "
            f"account scheme {scheme.name!r} with strategy "
            f"{getattr(strategy, 'registry_name', type(strategy).__name__)!r}: {reason}. "
            f"Accountants that can: {', '.join(able) if able else 'none'}"
        )

    # -- the questions: template methods ------------------------------------------------
    #
    # The public questions check their arguments (``Question.checked``: types,
    # swapped or None scheme/strategy, ranges), refuse an unsupported pair naming the
    # accountants that can, and time the answer, once for every accountant. Implementations
    # fill in the math: ``_epsilon``, ``_delta``, ``_calibrate``, each given the checked
    # :class:`Question` (whose ``provenance(method)`` gives the
    # fields every result shares).

    def ask(
        self, name: str, scheme: SamplingScheme, strategy: Strategy, **numbers: Any
    ) -> Question:
        """The checked question ``name`` about ``(scheme, strategy)``; raises ConfigurationError
        for bad arguments and NotAccountableError for a pair this accountant cannot account."""

        question = Question.checked(self, name, scheme, strategy, **numbers)
        self.check_configuration(question.scheme, question.strategy)
        self.require(question.scheme, question.strategy)
        return question

    def check_configuration(  # noqa: B027 - an optional hook, not an abstract one
        self, scheme: SamplingScheme, strategy: Strategy
    ) -> None:
        """Raise ConfigurationError when this accountant's own settings cannot serve the pair
        (e.g. explicitly chosen Renyi orders whose state space exceeds the memory budget for
        this scheme). Runs before :meth:`require`, so a settings problem is reported as one
        rather than as an unsupported pair. Default: nothing to check."""

    def epsilon(
        self, scheme: SamplingScheme, strategy: Strategy, sigma: float, delta: float
    ) -> EpsilonResult:
        """The smallest epsilon such that the run is (epsilon, delta)-DP at ``sigma``."""
        question = self.ask("epsilon", scheme, strategy, sigma=sigma, delta=delta)
        return question.timed(self._epsilon)

    def delta(
        self, scheme: SamplingScheme, strategy: Strategy, sigma: float, epsilon: float
    ) -> DeltaResult:
        """delta(epsilon) = max over directions of E[(1 - e^{epsilon - L})_+]."""
        question = self.ask("delta", scheme, strategy, sigma=sigma, epsilon=epsilon)
        return question.timed(self._delta)

    def calibrate(
        self, scheme: SamplingScheme, strategy: Strategy, epsilon: float, delta: float
    ) -> CalibrationResult:
        """The smallest noise multiplier certified (epsilon, delta)-DP (conservative)."""
        question = self.ask("calibrate", scheme, strategy, epsilon=epsilon, delta=delta)
        return question.timed(self._calibrate)

    def delta_curve(
        self,
        scheme: SamplingScheme,
        strategy: Strategy,
        sigma: float,
        epsilons: Sequence[float],
        failure_probability: float = DEFAULT_CURVE_FAILURE,
    ) -> CurveResult:
        """delta(eps) on the increasing grid ``epsilons``, bounds that hold **together**
        (docs/math.md §7, §7.1): for exact and proven routes always, for Monte Carlo except
        with the result's ``failure_probability`` (``failure_probability`` is that budget
        where the accountant spends one; the per-point route sums its points' own)."""
        from minsep.framework.compose import check_epsilon_grid

        owner = f"{type(self).__name__}.delta_curve"
        grid = check_epsilon_grid(owner, epsilons)
        beta = float(
            check_range(
                owner,
                "failure_probability",
                failure_probability,
                low=0.0,
                high=1.0,
                low_open=True,
                high_open=True,
            )
        )
        question = self.ask("delta_curve", scheme, strategy, sigma=sigma)
        return question.timed(lambda q: self._delta_curve(q, grid, beta))

    def _delta_curve(
        self, question: Question, epsilons: tuple[float, ...], failure_probability: float
    ) -> CurveResult:
        """:meth:`delta_curve` by :meth:`_delta` at every grid point: each certified delta
        holds except with its own failure probability, so all hold together except with
        their sum (union bound), which the result reports. An accountant that bounds the
        curve simultaneously from one sample (Monte Carlo) overrides this."""
        from minsep.framework.evidence import MonteCarloEvidence
        from minsep.framework.results import CurveResult

        answers = [self._delta(attrs.evolve(question, epsilon=e)) for e in epsilons]
        first = answers[0]
        return CurveResult(
            **question.provenance(first.method),
            notes=tuple(dict.fromkeys(n for a in answers for n in a.notes)),
            epsilons=epsilons,
            delta=tuple(a.delta for a in answers),
            certified_delta=tuple(a.certified_delta for a in answers),
            sigma=question.sigma,
            failure_probability=min(math.fsum(a.failure_probability for a in answers), 1.0),
            monte_carlo=(  # the draws of the first point; its verification is not the curve's
                None
                if first.monte_carlo is None
                else MonteCarloEvidence(
                    samples=first.monte_carlo.samples,
                    seed=first.monte_carlo.seed,
                    backend=first.monte_carlo.backend,
                    kernels=first.monte_carlo.kernels,
                    chunk_size=first.monte_carlo.chunk_size,
                )
            ),
        )

    @abstractmethod
    def _epsilon(self, question: Question) -> EpsilonResult:
        """:meth:`epsilon` for a checked, supported question (``question.sigma``,
        ``question.delta``)."""

    @abstractmethod
    def _delta(self, question: Question) -> DeltaResult:
        """:meth:`delta` for a checked, supported question (``question.sigma``,
        ``question.epsilon``)."""

    @abstractmethod
    def _calibrate(self, question: Question) -> CalibrationResult:
        """:meth:`calibrate` for a checked, supported question (``question.epsilon``,
        ``question.delta``)."""
