"""The registered implementations' examples, for parametrizing the contract tests.

Everything is looked up in the registries (entry points included), so a newly registered
scheme, strategy or accountant is picked up with no edit to any test.
"""

from __future__ import annotations

import warnings

from minsep.framework.errors import ConfigurationError, NotAccountableError
from minsep.framework.interfaces import PrivacyLossModel, SamplingScheme, Strategy
from minsep.framework.registries import schemes, strategies
from minsep.testing.zero_out import MAX_PATTERNS, PatternLaw, ZeroOutOracle, min_sep_law


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


def pattern_law(scheme: SamplingScheme) -> PatternLaw | None:
    """The scheme's enumerated pattern law: :meth:`SamplingScheme.pattern_law`, else the law of
    its availability chain (docs/math.md §3) when it has one and ``2^n`` is small enough."""
    law = scheme.pattern_law()
    if law is not None:
        return law
    chain = scheme.participation_chain()
    if chain is None or 2**chain.n_steps > MAX_PATTERNS:
        return None
    return min_sep_law(chain.n_steps, chain.probability, chain.min_sep, chain.warm_start)


def zero_out_oracle(
    scheme: SamplingScheme, strategy: Strategy, model: PrivacyLossModel
) -> ZeroOutOracle | None:
    """The brute-force oracle of ``model``: the scheme's pattern law with ``C`` the strategy's
    matrix; None when the law is not given, or the model's ratio is a bound or rests on a
    conjecture (no pointwise equality to check), or one participation moves a step by more
    than the zero-out unit."""
    if model.bounds_ratio or model.conjectured or scheme.max_step_contribution != 1.0:
        return None
    law = pattern_law(scheme)
    if law is None:
        return None
    return ZeroOutOracle(matrix=strategy.matrix(scheme.n_steps), law=law)
