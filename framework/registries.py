"""The three registries of minsep (lookups across them: :mod:`minsep.framework.setup`)."""

from __future__ import annotations

from minsep.framework.interfaces import Accountant, SamplingScheme, Strategy
from minsep.framework.registry import Registry

schemes: Registry[SamplingScheme] = Registry("scheme", SamplingScheme, "minsep.schemes")
strategies: Registry[Strategy] = Registry("strategy", Strategy, "minsep.strategies")
accountants: Registry[Accountant] = Registry("accountant", Accountant, "minsep.accountants")
