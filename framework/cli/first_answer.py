"""A first answer in seconds: the deterministic bounds, printed before a long run starts.

A Monte Carlo certificate takes minutes; the accountants that declare themselves sound
deterministic bounds (:func:`first_answer_accountants`: ``kind`` BOUND, ``sound``) answer the
same question in seconds with a looser bound: built in, the Renyi-DP bound (``rdp``, amplified,
loose by the RDP conversion) and the unamplified Gaussian bound (``gaussian``: the noise without
any privacy amplification by sampling, sound for every scheme); a plugin joins by declaring it.
Every bound they give is an upper bound on the true epsilon or delta (a sufficient
sigma for ``calibrate``), so the best of them is a valid answer to report while the certified
one is computed; docs/math.md §6 and §9 state them.

Which of them applies is decided by the accountants' own hooks (``supports``), never by the
scheme's type. An accountant that refuses (e.g. an RDP state too large for its memory budget)
is skipped; an error here never stops the real run.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import attrs

from minsep.framework import setup
from minsep.framework.errors import MinsepError
from minsep.framework.format import fmt
from minsep.framework.interfaces import Accountant, AccountantKind, SamplingScheme, Strategy
from minsep.framework.results import Result

__all__ = ["FirstAnswer", "first_answer", "first_answer_accountants"]


def first_answer_accountants() -> tuple[str, ...]:
    """The accountants asked for a first answer, in the order they are tried: the registered
    ones declaring themselves sound deterministic bounds, by declared rank."""
    return setup.preference((AccountantKind.BOUND,))


#: What each question reports: the result's guarantee, and which direction is better.
_VALUE: dict[str, tuple[str, Callable[[Any], float]]] = {
    "epsilon": ("epsilon", lambda r: float(r.certified_epsilon)),
    "delta": ("delta", lambda r: float(r.certified_delta)),
    "calibrate": ("sigma", lambda r: float(r.sigma)),
}


@attrs.frozen
class FirstAnswer:
    """The best deterministic bound on a question and what each accountant gave.

    Attributes:
        quantity: ``"epsilon"``, ``"delta"`` or ``"sigma"``.
        value: the smallest bound (an upper bound on epsilon or delta, a sufficient sigma).
        accountant: who gave ``value``.
        method: that accountant's method (``"rdp"``, ``"exact"`` for the unamplified bound).
        bounds: every accountant's bound, by name.
        seconds: the time all of them took.
    """

    quantity: str
    value: float
    accountant: str
    method: str
    bounds: dict[str, float]
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        """Plain data (the ``first_answer`` field of a result's JSON); without ``seconds``, so
        that results of one question compare equal up to their ``seconds`` fields."""
        return attrs.asdict(self, filter=lambda a, _: a.name != "seconds")

    def line(self) -> str:
        """One line for stderr, labelled as the bound it is."""
        claim = (
            f"sigma = {fmt(self.value)} suffices"
            if self.quantity == "sigma"
            else f"{self.quantity} <= {fmt(self.value)}"
        )
        others = ", ".join(f"{name} {fmt(v)}" for name, v in self.bounds.items())
        return (
            f"first answer (deterministic upper bound, not the certified answer): {claim} "
            f"by {self.accountant} [{others}] in {self.seconds:.2g} s; the certified answer "
            "follows"
        )


def first_answer(
    question: str,
    scheme: SamplingScheme,
    strategy: Strategy,
    numbers: dict[str, float],
    answering: Accountant,
) -> FirstAnswer | None:
    """The best bound of the :func:`first_answer_accountants` on ``question`` (``"epsilon"``,
    ``"delta"`` or ``"calibrate"``, with its ``numbers``), or None when none applies or the
    answering accountant is itself one of them (its answer is as quick)."""
    asked = first_answer_accountants()
    if question not in _VALUE or _name(answering) in asked:
        return None
    quantity, value_of = _VALUE[question]
    start = time.perf_counter()
    found: dict[str, tuple[float, str]] = {}
    for name in asked:
        try:
            accountant = setup.build_accountant(name, strict=False)
            if not accountant.supports(scheme, strategy):
                continue
            result: Result = getattr(accountant, question)(scheme, strategy, **numbers)
        except (MinsepError, ValueError, ArithmeticError):
            continue
        value = value_of(result)
        if math.isfinite(value):
            found[name] = (value, result.method)
    if not found:
        return None
    best = min(found, key=lambda n: found[n][0])
    return FirstAnswer(
        quantity=quantity,
        value=found[best][0],
        accountant=best,
        method=found[best][1],
        bounds={n: v for n, (v, _) in found.items()},
        seconds=time.perf_counter() - start,
    )


def _name(accountant: Accountant) -> str:
    return str(getattr(type(accountant), "registry_name", type(accountant).__name__))
