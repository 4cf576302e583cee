"""Plugins load one by one (a broken one costs one warning line, nothing else), and a plugin
field named like a base-class property works with its public name in every message."""

from __future__ import annotations

import importlib.metadata as md
import subprocess
import sys
from collections.abc import Iterator

import attrs
import pytest

from minsep.framework import validation as v
from minsep.framework.errors import ConfigurationError, UnknownNameError
from minsep.framework.interfaces import SamplingScheme
from minsep.framework.registries import accountants, schemes, strategies
from minsep.framework.registry import PluginLoadWarning, Registry
from minsep.schemes.poisson import Poisson
from minsep.strategies.identity import Identity

BROKEN = md.EntryPoint(
    name="broken_plugin", value="minsep_no_such_package.schemes", group="minsep.schemes"
)


@pytest.fixture
def broken_plugin_installed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The installed entry points plus one whose import fails; registries reload them."""
    real = md.entry_points

    def entry_points(group: str) -> list[md.EntryPoint]:
        found = list(real(group=group))
        return [*found, BROKEN] if group == BROKEN.group else found

    monkeypatch.setattr(md, "entry_points", entry_points)
    for registry in (schemes, strategies, accountants):
        monkeypatch.setattr(registry, "_plugins_loaded", False)
        monkeypatch.setattr(registry, "_failed", {})
    yield
    for registry in (schemes, strategies, accountants):
        registry._plugins_loaded = False


def test_a_failing_plugin_is_skipped_with_one_warning(broken_plugin_installed: None) -> None:
    with pytest.warns(PluginLoadWarning) as caught:
        names = schemes.names()
    assert {"b_min_sep", "poisson"} <= set(names) and "broken_plugin" not in names
    (warning,) = caught
    text = str(warning.message)
    assert "broken_plugin" in text and "ModuleNotFoundError" in text and "\n" not in text
    with pytest.raises(UnknownNameError, match="failed to load: ModuleNotFoundError"):
        schemes.get("broken_plugin")
    assert set(schemes.failed) == {"broken_plugin"}


#: ``minsep list`` in a fresh interpreter whose entry points include :data:`BROKEN`.
_LIST_WITH_BROKEN_PLUGIN = """
import importlib.metadata as md, sys
real = md.entry_points
broken = md.EntryPoint(name="broken_plugin", value="minsep_no_such_package.schemes",
                       group="minsep.schemes")
md.entry_points = lambda group: [*real(group=group), *([broken] if group == broken.group else [])]
from minsep.framework.cli.main import main
sys.exit(main(["list"]))
"""


def test_minsep_list_works_with_one_warning_line() -> None:
    """What a user sees: the listing, and one stderr line naming the plugin and its error."""
    done = subprocess.run(
        [sys.executable, "-c", _LIST_WITH_BROKEN_PLUGIN],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "b_min_sep" in done.stdout and "banded_toeplitz" in done.stdout
    assert "monte_carlo" in done.stdout
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "broken_plugin" in lines[0] and "ModuleNotFoundError" in lines[0]


def test_a_class_entry_point_is_still_registered_beside_a_broken_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    good = md.EntryPoint(
        name="capped",
        value="tests.unit.framework.test_plugin_loading:CappedPoisson",
        group="minsep.t",
    )
    broken = md.EntryPoint(name="broken", value="minsep_no_such:Thing", group="minsep.t")
    monkeypatch.setattr(md, "entry_points", lambda group: [broken, good])
    reg: Registry[SamplingScheme] = Registry("scheme", SamplingScheme, "minsep.t")
    with pytest.warns(PluginLoadWarning, match="'broken'"):
        assert reg.get("capped") is CappedPoisson


# --- fields named like base-class properties ---------------------------------------------------


@attrs.frozen
class CappedPoisson(Poisson):
    """Poisson with a declared participation cap (a field named like the base property).

    Attributes:
        max_participations: the cap.
    """

    max_participations: int = attrs.field(default=3, validator=v.positive_int())


@attrs.frozen
class PrivateAliasPoisson(Poisson):
    """The same cap kept in a private field beside the base property."""

    _cap: int = attrs.field(default=3, alias="cap", validator=v.positive_int())


@attrs.frozen
class BandedIdentity(Identity):
    """A strategy with a ``bands`` field."""

    bands: int = attrs.field(default=1, validator=v.positive_int())


def test_a_field_named_like_a_base_property_is_a_plain_option() -> None:
    scheme = CappedPoisson.from_rate(10, 0.1, max_participations=2)
    assert scheme.max_participations == 2
    assert [p.name for p in CappedPoisson.parameters()] == ["max_participations"]
    assert CappedPoisson.parameters()[0].help == "the cap."
    with pytest.raises(ConfigurationError, match=r"\.max_participations = 0 is invalid"):
        CappedPoisson(n_steps=10, rate=0.1, max_participations=0)
    assert BandedIdentity(bands=2).bands == 2
    with pytest.raises(ConfigurationError, match=r"BandedIdentity\.bands = 0"):
        BandedIdentity(bands=0)


def test_a_private_field_is_named_by_its_alias_everywhere() -> None:
    assert [p.name for p in PrivateAliasPoisson.parameters()] == ["cap"]
    with pytest.raises(ConfigurationError) as info:
        PrivateAliasPoisson(n_steps=10, rate=0.1, cap=0)
    assert "PrivateAliasPoisson.cap = 0" in str(info.value) and "_cap" not in str(info.value)
    with pytest.raises(ConfigurationError, match=r"must be among \['cap'\]") as info:
        PrivateAliasPoisson.from_rate(10, 0.1, capp=1)
    assert "_cap" not in str(info.value)
