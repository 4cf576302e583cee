"""The three registries of minsep and lookups across them."""

from __future__ import annotations

from typing import Any

from minsep.framework.interfaces import Accountant, SamplingScheme, Strategy
from minsep.framework.registry import Registry

schemes: Registry[SamplingScheme] = Registry("scheme", SamplingScheme, "minsep.schemes")
strategies: Registry[Strategy] = Registry("strategy", Strategy, "minsep.strategies")
accountants: Registry[Accountant] = Registry("accountant", Accountant, "minsep.accountants")


def accountants_supporting(scheme: SamplingScheme, strategy: Strategy, **kwargs: Any) -> list[str]:
    """Names of registered accountants that can account ``(scheme, strategy)``."""
    able = []
    for entry in accountants.entries():
        try:
            accountant = entry.cls(**kwargs)
        except TypeError:
            accountant = entry.cls()
        if accountant.supports(scheme, strategy):
            able.append(entry.name)
    return able
