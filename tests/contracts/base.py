"""The contracts, re-exported from :mod:`minsep.testing` (where plugin authors import them)."""

from minsep.testing import (
    AccountantContract,
    LossModelContract,
    SchemeContract,
    StrategyContract,
)

__all__ = ["AccountantContract", "LossModelContract", "SchemeContract", "StrategyContract"]
