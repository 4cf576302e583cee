"""Shared pieces of the accounting hooks: coefficients, band checks, sigma checks.

Each family's Monte Carlo loss model lives next to its sampler (``minsep.schemes.<family>.loss``)
and is imported inside the hook body, so that building and sampling schemes never pays for
(or depends on) the compiled kernels.
"""

from __future__ import annotations

from typing import Any

import attrs

from minsep.framework.errors import NotAccountableError
from minsep.framework.interfaces import PrivacyLossModel, SamplingScheme, Strategy
from minsep.framework.participation import ParticipationChain
from minsep.framework.validation import check_range


def coefficients(strategy: Strategy) -> tuple[float, ...]:
    """The strategy's first-column coefficients as a tuple of floats."""
    return tuple(float(c) for c in strategy.coefficients)


def require_bands_at_most(
    scheme: SamplingScheme, strategy: Strategy, limit: int, what: str, why: str
) -> None:
    """Raise NotAccountableError unless ``strategy.bands <= limit``.

    ``what`` names the limit (e.g. ``"min_sep = 4"``), ``why`` says which analysis needs it.
    """
    bands = strategy.bands
    if bands > limit:
        raise NotAccountableError(
            f"scheme {scheme.name!r} cannot be accounted with a {bands}-band strategy: "
            f"needs bands <= {what} ({why})"
        )


def require_bands_within_min_sep(scheme: Any, strategy: Strategy, why: str) -> None:
    """:func:`require_bands_at_most` with the scheme's ``min_sep`` as the limit."""
    require_bands_at_most(scheme, strategy, scheme.min_sep, f"min_sep = {scheme.min_sep}", why)


def chain_loss_model(
    strategy: Strategy, chain: ParticipationChain, **truncation: int
) -> PrivacyLossModel:
    """The loss model of Theorem 5.1 on ``chain`` (the sensitive example's availability chain,
    docs/math.md §3), or with ``dataset_size`` and ``max_batch_size`` the truncated one of
    App. D (§6)."""
    fields = {"coefficients": coefficients(strategy), **attrs.asdict(chain), **truncation}
    if truncation:
        from minsep.schemes.truncated.loss import TruncatedBMinSepLossModel

        truncated: PrivacyLossModel = TruncatedBMinSepLossModel(**fields)
        return truncated
    from minsep.schemes.b_min_sep.loss import BMinSepLossModel

    model: PrivacyLossModel = BMinSepLossModel(**fields)
    return model


def require_sigma(sigma: float, owner: str) -> float:
    """Check a noise multiplier (> 0, finite) and return it as a float."""
    check_range(owner, "sigma", sigma, low=0.0, low_open=True)
    return float(sigma)
