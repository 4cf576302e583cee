"""Strategy matrices: identity (DP-SGD) and MSE-optimal banded Toeplitz (BandMF)."""

from minsep.framework.registries import strategies as registry

__all__ = ["registry"]
