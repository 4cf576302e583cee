"""The named choices of a Monte Carlo question, as str-valued enums.

Their values are the words of the command line and of the results' JSON (``"escort"``,
``"betting"``), so text written before the enums reads back unchanged; a member compares
equal to its word.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from minsep.framework.validation import member

__all__ = ["EpsilonBound", "ProposalKind", "Word", "epsilon_bound", "proposal_kind"]


class Word(StrEnum):
    """A str-valued enum whose ``repr`` is its word's, so that messages naming a value read
    as before the enums (``proposal = 'escort'``)."""

    def __repr__(self) -> str:
        return repr(self.value)


class ProposalKind(Word):
    """What the engine samples from (docs/rdp-escort.md §8)."""

    #: The escort where the model supports it and plain sampling cannot certify cheaply.
    AUTO = "auto"
    #: The dominating pair itself.
    PLAIN = "plain"
    #: Importance sampling from the escort R_lam (b-min-sep BandMF only).
    ESCORT = "escort"


class EpsilonBound(Word):
    """How a certified epsilon is verified (docs/math.md §7, §7.2)."""

    #: A walk down a fine epsilon grid with the betting test (one failure event).
    BETTING = "betting"
    #: The pilot's candidate ladder verified by Fact 4.2 with a union bound.
    FACT42 = "fact42"


def proposal_kind(value: Any) -> Any:
    """attrs converter: a proposal word to its :class:`ProposalKind` (others unchanged)."""
    return member(ProposalKind, value)


def epsilon_bound(value: Any) -> Any:
    """attrs converter: a bound word to its :class:`EpsilonBound` (others unchanged)."""
    return member(EpsilonBound, value)
