"""Which law a Monte Carlo question samples from: the accountant's ``proposal`` resolved for one
question (docs/rdp-escort.md §8).

``plain`` samples the dominating pair; ``escort`` asks for importance sampling from the
escort R_lam (refused, naming the parameter, for a model without an escort law);
``auto`` takes the escort where :func:`~minsep.accountants.routes.auto_proposal` finds it
needed or far cheaper. The choice is fixed before any verification draw.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from minsep.accountants.escort_engine import EscortProposal, EscortTarget
from minsep.accountants.routes import auto_proposal
from minsep.framework.errors import ConfigurationError
from minsep.framework.interfaces import PrivacyLossModel
from minsep.framework.methods import ProposalKind

__all__ = ["Asked", "Chosen", "choose_proposal"]

#: The proposal of one question (None: plain sampling) and the notes saying why.
Chosen = tuple[EscortProposal | None, tuple[str, ...]]


@attrs.frozen
class Asked:
    """A question's inputs to the choice: the accountant's ``proposal``, ``samples``,
    ``precision`` and ``routed`` reason, the model and the question's numbers (``sigma`` None
    for a calibration, ``delta`` None for a delta question), and the route's ``add_samples``."""

    kind: ProposalKind
    samples: int
    precision: float | None
    routed: str | None
    model: PrivacyLossModel
    sigma: float | None
    delta: float | None
    epsilon: float
    add_samples: int | None = None

    def escort(self) -> EscortProposal:
        """The escort proposal, sized by ``precision`` when it is set, with the route's plain
        add draws of a calibration (``add_samples``, None: ``samples``)."""
        return EscortProposal(precision=self.precision, add_samples=self.add_samples)


def _plain(asked: Asked) -> Chosen:
    return None, ()


def _escort(asked: Asked) -> Chosen:
    if not isinstance(asked.model, EscortTarget):
        raise ConfigurationError(
            f"MonteCarloAccountant.proposal = 'escort' is invalid for "
            f"{type(asked.model).__name__}: the escort needs a loss model with an escort law "
            "(b-min-sep BandMF, Poisson, random-phase cyclic Poisson); use proposal 'plain' or "
            "'auto'",
            parameter="proposal",
        )
    if asked.routed is not None:
        notes: tuple[str, ...] = (f"proposal: escort (route): {asked.routed}.",)
        if asked.add_samples is not None:
            notes += (
                f"the {asked.samples:,} samples serve the escort's remove direction; the add "
                f"direction, where no bound settles it, is verified on {asked.add_samples:,} "
                "plain draws of its own per walked sweep entry (docs/rdp-escort.md §8).",
            )
        return asked.escort(), notes
    return asked.escort(), ("proposal: escort (requested).",)


def _auto(asked: Asked) -> Chosen:
    if not isinstance(asked.model, EscortTarget):
        return None, ()
    escort, note = auto_proposal(
        asked.model, asked.samples, asked.sigma, asked.delta, asked.epsilon
    )
    notes = () if note is None else (note,)
    if not escort:
        return None, notes
    return (asked.escort() if asked.delta is not None else EscortProposal()), notes


_CHOOSERS: dict[ProposalKind, Callable[[Asked], Chosen]] = {
    ProposalKind.PLAIN: _plain,
    ProposalKind.ESCORT: _escort,
    ProposalKind.AUTO: _auto,
}


def choose_proposal(asked: Asked) -> Chosen:
    """The escort proposal (or None: plain) for a question, and a note saying why."""
    return _CHOOSERS[asked.kind](asked)
