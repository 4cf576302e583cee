"""Contract test bases and assertions for minsep plugins (needs pytest: the ``dev`` extra).

A plugin's test module subclasses a contract and provides its fixture; every ``test_*`` method
then runs against the plugin::

    from minsep.testing import SchemeContract

    class TestMyScheme(SchemeContract):
        @pytest.fixture
        def scheme(self) -> MyScheme:
            return MyScheme.example()

minsep's own test suite runs every registered scheme, strategy, accountant and loss model
through these same contracts, so a registered plugin is checked without any test of its own.
"""

from minsep.testing.accountant_contract import AccountantContract
from minsep.testing.assertions import (
    assert_change_of_measure,
    assert_loss_model_matches_bruteforce,
    assert_mc_agrees_with_exact,
    assert_refuses_invalid,
    change_of_measure_mean,
)
from minsep.testing.loss_model_contract import LossModelContract
from minsep.testing.scheme_contract import SchemeContract
from minsep.testing.strategy_contract import StrategyContract
from minsep.testing.zero_out import (
    PatternLaw,
    ZeroOutOracle,
    enumerate_law,
    min_sep_law,
)

__all__ = [
    "AccountantContract",
    "LossModelContract",
    "PatternLaw",
    "SchemeContract",
    "StrategyContract",
    "ZeroOutOracle",
    "assert_change_of_measure",
    "assert_loss_model_matches_bruteforce",
    "assert_mc_agrees_with_exact",
    "assert_refuses_invalid",
    "change_of_measure_mean",
    "enumerate_law",
    "min_sep_law",
]
