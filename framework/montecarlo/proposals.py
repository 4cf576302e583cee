"""Where the Monte Carlo engine draws from: the proposal of an accounting question.

The plain proposal draws privacy losses from the dominating pair itself (the engine's
default). An importance-sampling proposal (e.g. the escort of docs/rdp-escort.md §8) draws
from another law and reweights; it answers the same three questions (certify an epsilon,
certify a delta, Algorithm 5) and records what it did in a :class:`ProposalInfo`. The engine
dispatches on the object: :func:`~minsep.framework.montecarlo.evr.certify_epsilon`,
:func:`~minsep.framework.montecarlo.evr.certify_delta` and
:func:`~minsep.framework.montecarlo.calibration.calibrate_sweep` hand the question to a
proposal whose ``plain`` is False.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import attrs

from minsep.framework.errors import MinsepError

if TYPE_CHECKING:  # pragma: no cover
    from minsep.framework.interfaces import PrivacyLossModel
    from minsep.framework.montecarlo.calibration import SweepCalibration
    from minsep.framework.montecarlo.evr import DeltaCertificate, EpsilonCertificate
    from minsep.framework.montecarlo.sampling import EngineConfig

__all__ = ["PROPOSAL_KINDS", "Proposal", "ProposalInfo", "SupportBoundError"]

#: The names the accountant and the CLI accept.
PROPOSAL_KINDS = ("auto", "plain", "escort")


class SupportBoundError(MinsepError):
    """An importance weight exceeded its declared support bound: the run refuses to certify."""


@attrs.frozen
class ProposalInfo:
    """What a proposal did for one question (reported in the results).

    Attributes:
        method: ``"plain"`` or ``"escort"``.
        order: the Renyi order lam of the escort (None for plain).
        log_z: ``ln Z_lam`` used (inflated by 1e-10 relative; None for plain).
        support: the support bound ``s`` the weights were normalised by (None for plain).
        add: how the add direction was handled: ``"exact zero"`` (eps >= ln 1/pi(empty)),
            ``"deterministic"`` (the Chernoff bound of docs/math.md §10, no samples) or
            ``"plain"`` (plain Monte Carlo).
        add_delta: the deterministic add-direction bound at the released claim (route
            ``"deterministic"``; None otherwise).
    """

    method: str
    order: int | None = None
    log_z: float | None = None
    support: float | None = None
    add: str = "plain"
    add_delta: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the results' ``proposal`` field."""
        return attrs.asdict(self)


@runtime_checkable
class Proposal(Protocol):
    """The law the engine samples from for one question; ``plain`` False means the engine
    hands the question to the proposal's own methods."""

    plain: bool

    def certify_epsilon(
        self,
        model: PrivacyLossModel,
        sigma: float,
        delta: float,
        *,
        samples: int,
        pilot_samples: int,
        seed: int,
        config: EngineConfig | None,
        ladder: Sequence[float],
    ) -> EpsilonCertificate: ...

    def certify_delta(
        self,
        model: PrivacyLossModel,
        sigma: float,
        epsilon: float,
        *,
        samples: int,
        pilot_samples: int,
        seed: int,
        config: EngineConfig | None,
        factors: Sequence[float],
    ) -> DeltaCertificate: ...

    def calibrate_sweep(
        self,
        model: PrivacyLossModel,
        sweep: Sequence[float],
        epsilon: float,
        delta: float,
        *,
        samples: int,
        seed: int,
        config: EngineConfig | None,
        stream: int,
    ) -> SweepCalibration: ...
