"""Accountants: exact PLD (dp_accounting), unamplified Gaussian, and Monte Carlo (EVR)."""

from minsep.framework.registries import accountants as registry

__all__ = ["registry"]
