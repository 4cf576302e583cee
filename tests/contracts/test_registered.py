"""Run every registered scheme, strategy and accountant through its contract."""

from __future__ import annotations

import pytest

from minsep.framework.interfaces import Accountant, SamplingScheme, Strategy
from minsep.framework.registries import accountants, schemes, strategies
from tests.contracts.base import AccountantContract, SchemeContract, StrategyContract


@pytest.fixture(params=sorted(schemes.names()))
def scheme(request: pytest.FixtureRequest) -> SamplingScheme:
    return schemes.get(request.param).example()


@pytest.fixture(params=sorted(strategies.names()))
def strategy(request: pytest.FixtureRequest) -> Strategy:
    return strategies.get(request.param).example()


@pytest.fixture(params=sorted(accountants.names()))
def accountant(request: pytest.FixtureRequest) -> Accountant:
    return accountants.get(request.param).example()


@pytest.fixture
def pairs() -> list[tuple[SamplingScheme, Strategy]]:
    return [
        (schemes.get(s).example(), strategies.get(t).example())
        for s in sorted(schemes.names())
        for t in sorted(strategies.names())
    ]


class TestRegisteredSchemes(SchemeContract):
    pass


class TestRegisteredStrategies(StrategyContract):
    pass


class TestRegisteredAccountants(AccountantContract):
    pass
