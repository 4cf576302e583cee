"""Accountants declare what they are and their options; auto, the first answer and compare pick
from the declarations, so an accountant from a separate package joins by declaring itself."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, ClassVar

import attrs
import pytest

from minsep.accountants.gaussian import GaussianAccountant
from minsep.framework import setup
from minsep.framework import validation as v
from minsep.framework.cli.first_answer import first_answer_accountants
from minsep.framework.cli.main import main
from minsep.framework.interfaces import AccountantKind, Question
from minsep.framework.registries import accountants
from minsep.framework.results import EpsilonResult

SETUP = ["--scheme", "b_min_sep", "--min-sep", "2", "--steps", "12", "--rate", "0.2",
         "--sigma", "2", "--delta", "0.1", "--json"]  # fmt: skip


@attrs.frozen
class PluginExact(GaussianAccountant):
    """A plugin declaring itself a sound exact accountant (it answers with the Gaussian bound,
    sound for every scheme, and notes its option).

    Attributes:
        slack: an option of the plugin's own.
    """

    kind: ClassVar[AccountantKind] = AccountantKind.EXACT
    sound: ClassVar[bool] = True
    rank: ClassVar[int] = 0
    command_line_options: ClassVar[dict[str, str] | None] = None

    slack: float = attrs.field(default=1.0, validator=v.positive())

    def _epsilon(self, question: Question) -> EpsilonResult:
        result = super()._epsilon(question)
        return attrs.evolve(result, notes=(*result.notes, f"slack {self.slack}"))


@attrs.frozen
class PluginBound(GaussianAccountant):
    """A plugin declaring itself a sound deterministic bound, tried first."""

    sound: ClassVar[bool] = True
    rank: ClassVar[int] = 0


@attrs.frozen
class PluginUnsound(PluginExact):
    """The same exact plugin, not claiming soundness: never picked automatically."""

    sound: ClassVar[bool] = False
    rank: ClassVar[int] = -1


@pytest.fixture
def plugins() -> Iterator[None]:
    names = {
        "plugin_exact": PluginExact,
        "plugin_bound": PluginBound,
        "plugin_unsound": PluginUnsound,
    }
    for name, cls in names.items():
        accountants.register(name)(cls)
    yield
    for name in names:
        accountants.unregister(name)


def test_the_builtin_order_follows_from_the_declarations() -> None:
    assert setup.preference() == ("pld", "monte_carlo", "rdp", "gaussian")
    assert first_answer_accountants() == ("rdp", "gaussian")


def test_sound_plugins_join_auto_and_the_first_answer_by_declaration(plugins: None) -> None:
    assert setup.preference()[:3] == ("plugin_exact", "pld", "monte_carlo")
    assert "plugin_unsound" not in setup.preference()
    assert first_answer_accountants() == ("plugin_bound", "rdp", "gaussian")


def test_auto_picks_a_sound_plugin_and_takes_its_options_as_flags(
    plugins: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["epsilon", *SETUP, "--slack", "2.5"]) == 0
    record: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert record["accountant"] == "plugin_exact"
    assert "slack 2.5" in record["notes"]
    assert main(["list", "accountants"]) == 0
    listing = capsys.readouterr().out
    assert "exact, sound, rank 0" in listing and "options: --slack" in listing
    assert "not declared sound: never picked by auto" in listing


def test_the_first_answer_asks_a_sound_plugin_bound(
    plugins: None, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["epsilon", *SETUP, "--accountant", "monte_carlo", "--samples", "20000"]
    assert main([*args, "--seed", "0", "--no-cache"]) == 0
    record: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert "plugin_bound" in record["first_answer"]["bounds"]
