"""The registered implementations' examples, for parametrizing the contract tests.

Everything is looked up in the registries (entry points included), so a newly registered
scheme, strategy or accountant is picked up with no edit to any test.
"""

from __future__ import annotations

import warnings

from minsep.framework.errors import ConfigurationError, NotAccountableError
from minsep.framework.interfaces import PrivacyLossModel, SamplingScheme, Strategy
from minsep.framework.registries import schemes, strategies


def example_pairs() -> dict[str, tuple[SamplingScheme, Strategy]]:
    """``"scheme-strategy"`` -> the two registered examples, for every combination."""
    return {
        f"{s}-{t}": (schemes.get(s).example(), strategies.get(t).example())
        for s in schemes.names()
        for t in strategies.names()
    }


def build_loss_model(scheme: SamplingScheme, strategy: Strategy) -> PrivacyLossModel:
    """``scheme.loss_model(strategy)``, silencing only the warning of conjectured models."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*conjecture", category=UserWarning)
        return scheme.loss_model(strategy)


def loss_model_pairs() -> dict[str, tuple[SamplingScheme, Strategy]]:
    """The example pairs whose scheme has a Monte Carlo loss model for the strategy."""
    found = {}
    for key, (scheme, strategy) in example_pairs().items():
        try:
            build_loss_model(scheme, strategy)
        except (NotAccountableError, ConfigurationError):
            continue
        found[key] = (scheme, strategy)
    return found
