"""Run the code of docs/adding-a-strategy.md and put the strategy it builds through the contract."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from minsep.framework.errors import NotAccountableError
from minsep.framework.registries import schemes, strategies
from minsep.strategies import BufferedLinearToeplitz
from tests.unit.docs.doc_pages import DOCS, executed, python_blocks

DOC = DOCS / "adding-a-strategy.md"
NAME = "geometric"


@pytest.fixture
def walkthrough() -> Iterator[dict[str, Any]]:
    """The namespace after executing every Python block of the page, in order."""
    with executed(DOC, "docs_adding_a_strategy", lambda: strategies.unregister(NAME)) as namespace:
        yield namespace


def test_page_has_the_walkthrough_blocks() -> None:
    blocks = python_blocks(DOC)
    assert len(blocks) == 3
    assert "@strategies.register" in blocks[0] and "class TestGeometric" in blocks[1]


def test_walkthrough_strategy_passes_the_contract(walkthrough: dict[str, Any]) -> None:
    cls = walkthrough["Geometric"]
    assert strategies.get(NAME) is cls
    contract = walkthrough["TestGeometric"]()
    strategy = cls.example()
    for name in dir(contract):
        if not name.startswith("test_"):
            continue
        check = getattr(contract, name)
        marks = getattr(check, "pytestmark", [])
        grids = [m for m in marks if m.name == "parametrize"]
        if not grids:
            check(strategy)
            continue
        names, values = grids[0].args
        for value in values:
            args = value if isinstance(value, tuple) else (value,)
            keys = [k.strip() for k in names] if not isinstance(names, str) else names.split(",")
            check(strategy, **dict(zip([k.strip() for k in keys], args, strict=True)))


def test_walkthrough_strategy_is_the_one_buffer_blt(walkthrough: dict[str, Any]) -> None:
    geometric = walkthrough["Geometric"](0.6)
    blt = BufferedLinearToeplitz((0.6,), (0.6,))
    np.testing.assert_allclose(geometric.matrix(10), blt.matrix(10), rtol=1e-12)
    assert geometric.prefix_mse(30) == pytest.approx(blt.prefix_mse(30), rel=1e-12)
    scheme = schemes.get("b_min_sep").from_rate(64, 0.25, min_sep=4)
    assert scheme.loss_model(geometric).bounds_ratio  # App. B.1, not the banded model
    with pytest.raises(NotAccountableError):
        scheme.dp_event(geometric, 1.0)
