"""Fixtures of the framework tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from minsep.framework.registries import schemes
from tests.unit.montecarlo_toys import TOY_NAME, ToyScheme


@pytest.fixture
def toy() -> Iterator[str]:
    """:class:`ToyScheme` registered as :data:`TOY_NAME` for the duration of a test."""
    schemes.register(TOY_NAME)(ToyScheme)
    yield TOY_NAME
    schemes.unregister(TOY_NAME)
