"""The contract every accountant satisfies: refusals, consistency and calibration."""

from __future__ import annotations

import math
from functools import partial
from typing import ClassVar

import attrs
import pytest

from minsep.framework.errors import ConfigurationError, NotAccountableError
from minsep.framework.interfaces import Accountant, AccountantKind, SamplingScheme, Strategy
from minsep.framework.option_groups import flat_fields
from minsep.testing.assertions import assert_refuses_invalid

Pair = tuple[SamplingScheme, Strategy]


def supported_pairs(accountant: Accountant, pairs: list[Pair]) -> list[Pair]:
    """The pairs ``accountant`` can account, in the given order."""
    return [
        (scheme, strategy) for scheme, strategy in pairs if accountant.supports(scheme, strategy)
    ]


class AccountantContract:
    """Override the ``accountant`` and ``pairs`` fixtures to check an accountant.

    ``pairs`` is a list of (scheme, strategy) examples. Every pair is checked for consistent
    support; the numerical checks run on the first ``PAIRS_CHECKED`` supported pairs and fail
    when there is none (an accountant that can account none of its examples checks nothing).
    """

    SIGMA: ClassVar[float] = 1.5
    DELTA: ClassVar[float] = 1e-3
    #: The (epsilon, delta) target of the calibration check.
    TARGET_EPSILON: ClassVar[float] = 2.0
    #: How many supported pairs the epsilon/delta consistency check runs on.
    PAIRS_CHECKED: ClassVar[int] = 2
    #: Calibration must be tight: at this fraction of the returned sigma, epsilon is too large.
    LOOSER_SIGMA: ClassVar[float] = 0.5

    def test_invalid_input_is_refused_naming_the_parameter(self, accountant: Accountant) -> None:
        assert_refuses_invalid(type(accountant), type(accountant).invalid_examples())

    def test_declares_what_it_is(self, accountant: Accountant) -> None:
        """``kind``, ``sound`` and ``rank`` are well-typed, and every declared command-line
        option is a constructor keyword or an option of one of its option records
        (:mod:`~minsep.framework.option_groups`; ``auto`` and the flags are built from them)."""
        cls = type(accountant)
        assert isinstance(cls.kind, AccountantKind), f"kind {cls.kind!r}"
        assert isinstance(cls.sound, bool) and isinstance(cls.rank, int)
        declared = cls.command_line_options or {}
        fields = {f.alias or f.name for f in attrs.fields(cls)} if attrs.has(cls) else set()
        fields |= set(flat_fields(cls))  # the options of its option records too
        unknown = sorted(set(declared) - fields)
        assert not unknown, f"command_line_options names no field: {unknown}"

    def test_support_is_consistent(self, accountant: Accountant, pairs: list[Pair]) -> None:
        """Supported pairs pass ``require``; the others are refused by every question with an
        error naming the accountants that can answer it."""
        assert pairs, "the pairs fixture is empty: the contract would check nothing"
        for scheme, strategy in pairs:
            reason = accountant.why_not(scheme, strategy)
            assert accountant.supports(scheme, strategy) is (reason is None)
            if reason is None:
                accountant.require(scheme, strategy)
                continue
            assert isinstance(reason, str) and reason.strip(), "why_not must say why"
            questions = (
                partial(accountant.epsilon, scheme, strategy, self.SIGMA, self.DELTA),
                partial(accountant.delta, scheme, strategy, self.SIGMA, 1.0),
                partial(accountant.calibrate, scheme, strategy, self.TARGET_EPSILON, self.DELTA),
            )
            for ask in questions:
                with pytest.raises(NotAccountableError, match="Accountants that can"):
                    ask()

    def test_epsilon_delta_consistent(self, accountant: Accountant, pairs: list[Pair]) -> None:
        """Answers are consistent (certified >= estimate, delta decreasing in epsilon, epsilon
        not increasing in sigma). A supported pair may still be refused for this sigma and
        delta with a ConfigurationError that says why (RDP on a truncated scheme whose
        truncation is not rare at this delta, say); at least one pair must be answered."""
        supported = supported_pairs(accountant, pairs)[: self.PAIRS_CHECKED]
        assert supported, f"{type(accountant).__name__} supports none of the example pairs"
        answered = 0
        for scheme, strategy in supported:
            try:
                eps = accountant.epsilon(scheme, strategy, self.SIGMA, self.DELTA)
            except ConfigurationError as refusal:
                assert str(refusal).strip(), "a refusal must say why"
                continue
            answered += 1
            assert math.isfinite(eps.epsilon) and eps.epsilon >= 0
            assert eps.certified_epsilon >= eps.epsilon - 1e-12
            assert 0 <= eps.failure_probability < 1
            loose = accountant.delta(scheme, strategy, self.SIGMA, eps.epsilon + 1.0)
            tight = accountant.delta(scheme, strategy, self.SIGMA, max(eps.epsilon - 0.5, 0.0))
            assert 0 <= loose.delta <= tight.delta <= 1
            more_noise = accountant.epsilon(scheme, strategy, 2 * self.SIGMA, self.DELTA)
            assert more_noise.epsilon <= eps.epsilon + 1e-9
        assert answered, f"{type(accountant).__name__} refused every supported pair"

    def test_calibrate_meets_the_target(self, accountant: Accountant, pairs: list[Pair]) -> None:
        """epsilon at the calibrated sigma is at most the target, and the sigma is not
        wastefully large: at ``LOOSER_SIGMA`` times it, the target is missed."""
        supported = supported_pairs(accountant, pairs)
        assert supported, f"{type(accountant).__name__} supports none of the example pairs"
        scheme, strategy = supported[0]
        result = accountant.calibrate(scheme, strategy, self.TARGET_EPSILON, self.DELTA)
        assert result.certified
        assert math.isfinite(result.sigma) and result.sigma > 0
        assert result.epsilon == self.TARGET_EPSILON and result.delta == self.DELTA
        at_sigma = accountant.epsilon(scheme, strategy, result.sigma, self.DELTA)
        assert at_sigma.epsilon <= self.TARGET_EPSILON, (
            f"epsilon {at_sigma.epsilon} at the calibrated sigma {result.sigma} exceeds the "
            f"target {self.TARGET_EPSILON}"
        )
        looser = accountant.epsilon(scheme, strategy, self.LOOSER_SIGMA * result.sigma, self.DELTA)
        assert looser.epsilon > self.TARGET_EPSILON, (
            f"calibration is loose: epsilon {looser.epsilon} at {self.LOOSER_SIGMA} x sigma "
            f"{result.sigma} already meets the target {self.TARGET_EPSILON}"
        )
