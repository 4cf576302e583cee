"""The rows a comparison evaluates: each proposed row built (scheme and strategy) and given
the first accountant that can account it (:func:`plan`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from minsep.framework.compare_setup import ComparisonSetup, proposals
from minsep.framework.errors import (
    ConfigurationError,
    MinsepError,
)
from minsep.framework.format import warn
from minsep.framework.interfaces import Accountant, SamplingScheme, Strategy
from minsep.framework.registries import accountants, schemes
from minsep.framework.setup import (
    build_strategy,
    build_strategy_spec,
    preference,
    strategy_label,
)


@attrs.frozen
class RowPlan:
    family: str
    label: str
    scheme: SamplingScheme
    strategy: Strategy
    accountant: str
    strategy_name: str = ""


def _can(
    accountant_for: Callable[[str], Accountant], name: str, scheme: Any, strategy: Strategy
) -> bool:
    """Whether accountant ``name`` is registered and accounts the pair (an accountant whose
    hooks refuse a strategy by raising a MinsepError counts as unable)."""
    if name not in accountants:
        return False
    accountant = accountant_for(name)  # bad accountant options raise here, never "unable"
    try:
        return accountant.supports(scheme, strategy)
    except MinsepError:
        return False


def plan(setup: ComparisonSetup, accountant_for: Callable[[str], Accountant]) -> list[RowPlan]:
    """The rows to evaluate, in table order; infeasible combinations are skipped with a note."""
    cache: dict[int | str, Strategy] = {}
    out: list[RowPlan] = []
    proposed = proposals(setup)
    for name in setup.families or ():
        if name in schemes and not any(p.family == name for p in proposed):
            required = [p.flag for p in schemes.get(name).parameters() if p.required]
            large = [k for k in setup.bands if not setup.min_seps_for(k)]
            why = (
                f"no feasible min-sep for bands {', '.join(map(str, large))} (> |D|/B = "
                f"{setup.epoch_length:.6g}), or it needs options without defaults"
                if large
                else "it needs options without defaults"
            )
            warn(
                f"compare: scheme {name!r} proposes no rows at this setup: {why} "
                f"({', '.join(required) or 'none'}); its class can propose rows through "
                "compare_variants (docs/adding-a-scheme.md)"
            )
    for proposal in proposed:
        if setup.families is not None and proposal.family not in setup.families:
            continue
        variant, label = proposal.variant, proposal.label()
        try:
            scheme = schemes.get(proposal.scheme).from_rate(
                setup.n_steps, setup.rate, **variant.options
            )
        except ConfigurationError as exc:
            warn(f"compare: skipping {label} with {variant.bands} bands: {exc}")
            continue
        key: int | str = variant.bands if variant.strategy is None else variant.strategy
        if key not in cache:
            cache[key] = (
                build_strategy(setup.n_steps, variant.bands)
                if variant.strategy is None
                else build_strategy_spec(variant.strategy, setup.n_steps)
            )
        strategy = cache[key]
        what = f"{variant.bands} bands" if variant.strategy is None else variant.strategy
        choices = preference() if variant.accountant is None else (variant.accountant,)
        chosen = next((a for a in choices if _can(accountant_for, a, scheme, strategy)), None)
        if chosen is None:
            warn(f"compare: no accountant can account {label} with {what}")
            continue
        name = strategy_label(strategy) if variant.strategy is None else variant.strategy
        out.append(RowPlan(proposal.family, label, scheme, strategy, chosen, name))
    return out
