"""Accountants: exact PLD (dp_accounting), exact-order RDP, unamplified Gaussian, Monte Carlo."""

from minsep.accountants import gaussian as gaussian  # registers "gaussian"
from minsep.accountants import monte_carlo as monte_carlo  # registers "monte_carlo"
from minsep.accountants import pld as pld  # registers "pld"
from minsep.accountants import rdp as rdp  # registers "rdp"
from minsep.framework.registries import accountants as registry

__all__ = ["registry"]
