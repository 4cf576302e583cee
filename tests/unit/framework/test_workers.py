"""``--workers auto`` / ``workers="auto"``: parsing, the choice under a mocked load, plumbing."""

from __future__ import annotations

import argparse
import logging
import os
from typing import Any

import pytest

from minsep.accountants.monte_carlo import MonteCarloAccountant, RunSettings
from minsep.framework import setup, workers
from minsep.framework.cli import common
from minsep.framework.cli.compare_command import setup_from_args
from minsep.framework.cli.main import build_parser
from minsep.framework.errors import ConfigurationError


@pytest.fixture
def machine(monkeypatch: pytest.MonkeyPatch) -> dict[str, float]:
    """A machine of 4 usable CPUs whose 1-minute load the test sets in ``state["load"]`` (no
    ``/proc/stat`` measurement: the load average is what ``auto`` reads)."""
    state = {"load": 0.0}
    monkeypatch.setattr(workers, "usable_cpus", lambda: 4)
    monkeypatch.setattr(workers, "busy_cpus", lambda: None)
    monkeypatch.setattr(workers, "_measured", [])
    monkeypatch.setattr(os, "getloadavg", lambda: (state["load"], 0.0, 0.0))
    return state


@pytest.mark.parametrize(
    ("cpus", "load", "expected"),
    [(4, 0.0, 4), (4, 0.4, 4), (4, 0.6, 3), (4, 1.6, 2), (4, 3.9, 1), (4, 12.0, 1), (1, 0.0, 1)],
)
def test_choose_workers_is_usable_cpus_less_the_rounded_load(
    cpus: int, load: float, expected: int
) -> None:
    assert workers.choose_workers(cpus, load) == expected


def test_choose_workers_reads_the_load_average(machine: dict[str, float]) -> None:
    machine["load"] = 2.2
    assert workers.choose_workers() == 2
    machine["load"] = 0.1
    assert workers.choose_workers() == 4


def _stat(*cpus: tuple[int, int, int]) -> str:
    """A /proc/stat with an aggregate line and ``cpuN`` lines of (user, idle, iowait) ticks."""
    lines = ["cpu  999 0 999 999 999 0 0 0 0 0"]
    for number, (user, idle, iowait) in enumerate(cpus):
        lines.append(f"cpu{number} {user} 0 5 {idle} {iowait} 1 1 3 0 0")
    return "\n".join([*lines, "intr 12345 0 0", "ctxt 99"]) + "\n"


class FakeStat:
    """A /proc/stat file whose contents change to ``after`` during the measurement's sleep."""

    def __init__(self, path: Any) -> None:
        self.path = path
        self.after = ""

    def set(self, before: str, after: str | None = None) -> None:
        self.path.write_text(before)
        self.after = before if after is None else after


@pytest.fixture
def proc_stat(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> FakeStat:
    """A fake /proc/stat on usable CPUs {0, 2}, no measurement kept."""
    fake = FakeStat(tmp_path / "stat")
    monkeypatch.setattr(workers, "PROC_STAT", str(fake.path))
    monkeypatch.setattr(workers, "_affinity", lambda: {0, 2})
    monkeypatch.setattr(workers, "_measured", [])
    monkeypatch.setattr(workers.time, "sleep", lambda seconds: fake.path.write_text(fake.after))
    return fake


def test_the_ticks_count_the_usable_cpus_only(proc_stat: FakeStat) -> None:
    """cpu0 and cpu2 (not the aggregate line, not cpu1); idle and iowait are not busy, steal
    is."""
    proc_stat.set(_stat((10, 50, 5), (1000, 0, 0), (20, 30, 0)))
    busy, total = workers._cpu_ticks({0, 2})  # type: ignore[misc]
    assert busy == (10 + 5 + 1 + 1 + 3) + (20 + 5 + 1 + 1 + 3)
    assert total == busy + 50 + 5 + 30


def test_busy_cpus_is_the_busy_share_of_the_window(proc_stat: FakeStat) -> None:
    """Over the window cpu0 spends 90 ticks busy and 10 idle, cpu2 10 busy and 90 idle (cpu1,
    not usable, is ignored): 2 x 100 / 200 = 1 busy CPU."""
    proc_stat.set(
        _stat((0, 0, 0), (0, 0, 0), (0, 0, 0)), _stat((90, 10, 0), (0, 500, 0), (10, 90, 0))
    )
    assert workers.busy_cpus() == pytest.approx(1.0)


def test_auto_reads_the_measurement_and_keeps_it(
    proc_stat: FakeStat, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The busy CPUs, not the load average (which still counts a command that just ended), and
    one measurement serves the asks of the next ``BUSY_KEPT`` seconds."""
    monkeypatch.setattr(os, "getloadavg", lambda: (1.9, 0.0, 0.0))
    monkeypatch.setattr(workers, "usable_cpus", lambda: 2)
    proc_stat.set(_stat((0, 0, 0), (0, 0, 0), (0, 0, 0)), _stat((1, 99, 0), (0, 0, 0), (0, 100, 0)))
    assert workers.choose_workers() == 2  # 0.01 busy, where the load average says 1.9
    monkeypatch.setattr(workers, "busy_cpus", lambda: pytest.fail("measured again"))
    assert workers.expected_cores(2) == pytest.approx(2 * 2 / 2.01)  # the kept 0.01


@pytest.mark.parametrize("broken", ["missing", "no usable cpu lines", "no ticks passed"])
def test_without_a_measurement_auto_reads_the_load_average(
    proc_stat: FakeStat, monkeypatch: pytest.MonkeyPatch, broken: str
) -> None:
    monkeypatch.setattr(os, "getloadavg", lambda: (1.9, 0.0, 0.0))
    monkeypatch.setattr(workers, "usable_cpus", lambda: 4)
    if broken == "missing":
        monkeypatch.setattr(workers, "PROC_STAT", "/nonexistent/stat")
        assert workers._cpu_ticks({0}) is None
    elif broken == "no usable cpu lines":
        monkeypatch.setattr(workers, "_affinity", lambda: {7})
        proc_stat.set(_stat((1, 1, 1)), _stat((5, 5, 5)))
    else:
        proc_stat.set(_stat((1, 1, 1), (0, 0, 0), (1, 1, 1)))
    assert workers.busy_cpus() is None
    assert workers.choose_workers() == 2  # 4 - round(1.9)


def test_usable_cpus_follows_the_affinity_mask(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(os, "process_cpu_count", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 2, 5}, raising=False)
    assert workers.usable_cpus() == 3


@pytest.mark.parametrize(("text", "expected"), [("auto", "auto"), (" AUTO ", "auto"), ("3", 3)])
def test_parse_workers_accepts(text: str, expected: int | str) -> None:
    assert workers.parse_workers(text) == expected


@pytest.mark.parametrize("text", ["0", "-2", "two", "", "2.5", "100000"])
def test_parse_workers_refuses_naming_the_range(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=r"\[1, 1024\] or 'auto'"):
        workers.parse_workers(text)


def test_resolve_workers_logs_the_choice(
    machine: dict[str, float], caplog: pytest.LogCaptureFixture
) -> None:
    machine["load"] = 1.2
    with caplog.at_level(logging.INFO, logger="minsep.plan"):
        assert workers.resolve_workers("auto") == 3
    assert "workers auto = 3 (4 usable CPUs, 1.20 busy)" in caplog.text
    assert workers.resolve_workers(7) == 7


@pytest.mark.parametrize("value", ["7", "many", 0, 2000, True, 2.0, None])
def test_resolve_workers_refuses(value: object) -> None:
    with pytest.raises(ConfigurationError, match=r"Owner\.workers = .* is invalid") as info:
        workers.resolve_workers(value, "Owner")
    assert info.value.parameter == "workers"


def test_monte_carlo_accountant_takes_auto(machine: dict[str, float]) -> None:
    machine["load"] = 1.0
    accountant = MonteCarloAccountant(run=RunSettings(workers="auto"))
    assert accountant.run.workers == 3 and isinstance(accountant.run.workers, int)
    assert MonteCarloAccountant().run.workers == 1  # the API default stays explicit
    with pytest.raises(ConfigurationError, match=r"MonteCarloAccountant\.workers"):
        MonteCarloAccountant(run=RunSettings(workers="three"))


def _epsilon_args(*extra: str) -> argparse.Namespace:
    argv = ["epsilon", "--scheme", "poisson", "--steps", "10", "--rate", "0.1", "--sigma", "1"]
    return build_parser().parse_args([*argv, *extra])


def test_cli_defaults_to_auto_for_monte_carlo(machine: dict[str, float]) -> None:
    machine["load"] = 0.0
    mc = ("--accountant", "monte_carlo")
    assert common.build_accountant(_epsilon_args(*mc)).run.workers == 4  # type: ignore[attr-defined]
    two = common.build_accountant(_epsilon_args(*mc, "--workers", "2"))
    assert two.run.workers == 2  # type: ignore[attr-defined]
    local = common.build_accountant(_epsilon_args(*mc, "--executor", "local"))
    assert local.run.workers == 1  # type: ignore[attr-defined]
    machine["load"] = 0.4
    auto = common.build_accountant(_epsilon_args(*mc, "--workers", "auto"))
    assert auto.run.workers == 4  # type: ignore[attr-defined]


def test_cli_accountant_auto_keeps_the_workers_default(machine: dict[str, float]) -> None:
    """``--accountant auto`` (the default) landing on Monte Carlo gets ``--workers auto`` too."""
    machine["load"] = 0.0
    argv = ["epsilon", "--scheme", "b_min_sep", "--min-sep", "4", "--bands", "4", "--steps", "64"]
    args = build_parser().parse_args([*argv, "--rate", "0.1", "--sigma", "1"])
    accountant, note = common.choose_accountant(
        args, common.build_scheme(args), common.build_strategy(args)
    )
    assert accountant.registry_name == "monte_carlo", note
    assert accountant.run.workers == 4  # type: ignore[attr-defined]


def test_cli_auto_default_is_not_forced_on_other_accountants() -> None:
    accountant = common.build_accountant(_epsilon_args("--accountant", "pld"))
    assert accountant.registry_name == "pld"
    with pytest.raises(ConfigurationError, match="--workers"):
        common.build_accountant(_epsilon_args("--accountant", "pld", "--workers", "auto"))


def test_default_workers_leaves_explicit_choices_alone() -> None:
    cls = setup.accountants.get("monte_carlo")
    assert common.default_workers({}, cls) == {"workers": "auto"}
    for given in ({"workers": 3}, {"executor": "local"}, {"scheduler": "tcp://h:1"}):
        assert common.default_workers(given, cls) == given
    assert common.default_workers({}, setup.accountants.get("pld")) == {}


def test_compare_defaults_to_auto_and_takes_it() -> None:
    parser = build_parser()
    default = setup_from_args(parser.parse_args(["compare", "--steps", "16"]))
    assert default.accountant_options["workers"] == "auto"
    explicit = setup_from_args(parser.parse_args(["compare", "--steps", "16", "--workers", "2"]))
    assert explicit.accountant_options["workers"] == 2
