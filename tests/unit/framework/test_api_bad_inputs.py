"""Issue 13 §4/§5 through the Python API: bad input raises ConfigurationError naming the
parameter (never a TypeError/AttributeError/ZeroDivisionError from deep inside), and numpy
scalars are accepted consistently."""

from __future__ import annotations

import contextlib
import math
from typing import Any

import numpy as np
import pytest

from minsep.accountants.monte_carlo import RunSettings
from minsep.framework.errors import ConfigurationError, SchedulerUnreachableError
from minsep.framework.interfaces import Accountant, Question, SamplingScheme, Strategy
from minsep.framework.registries import accountants, schemes, strategies
from minsep.framework.results import EpsilonResult
from tests.unit.montecarlo_toys import ToyScheme, ToyStrategy

# -- from_rate: a forgotten or unknown option ----------------------------------------------


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("b_min_sep", {}),
        ("cyclic_poisson", {}),
        ("truncated", {"dataset_size": 1000, "max_batch_size": 30}),
    ],
)
def test_from_rate_without_min_sep_names_the_parameter(name: str, options: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError, match="min_sep = <missing>") as info:
        schemes.get(name).from_rate(256, 1 / 64, **options)
    assert info.value.parameter == "min_sep"
    assert "warm_start" in str(info.value) or "partition" in str(info.value)  # lists options


@pytest.mark.parametrize("name", sorted(schemes.names()))
def test_every_scheme_refuses_missing_and_unknown_options_as_configuration_errors(
    name: str,
) -> None:
    cls = schemes.get(name)
    # without options: built, or a missing required option refused by name (not a TypeError)
    with contextlib.suppress(ConfigurationError):
        cls.from_rate(64, 1 / 16)
    needs = {"dataset_size": 1000, "max_batch_size": 30} if name == "truncated" else {}
    with pytest.raises(ConfigurationError, match="no_such_option") as info:
        cls.from_rate(64, 1 / 16, min_sep=4, no_such_option=1, **needs)
    assert info.value.parameter in ("no_such_option", "min_sep")  # min_sep: not an option here


def test_the_interface_default_from_rate_checks_keywords_too() -> None:
    assert ToyScheme.from_rate(1, 0.3) == ToyScheme(n_steps=1, rate=0.3)
    with pytest.raises(ConfigurationError, match="bogus") as info:
        ToyScheme.from_rate(1, 0.3, bogus=2)
    assert info.value.parameter == "bogus"


# -- accountant questions: swapped, None, string and numpy arguments ------------------------


def _pair() -> tuple[SamplingScheme, Strategy]:
    return schemes.get("b_min_sep").from_rate(64, 1 / 8, min_sep=4), strategies.get(
        "banded_toeplitz"
    )((1.0, 0.5))


@pytest.mark.parametrize("name", sorted(accountants.names()))
@pytest.mark.parametrize("question", ["epsilon", "delta", "calibrate"])
def test_every_accountant_checks_its_arguments(name: str, question: str) -> None:
    accountant = accountants.get(name).example()
    scheme, strategy = _pair()
    ask = getattr(accountant, question)
    number = {"epsilon": ("sigma", "delta"), "delta": ("sigma", "epsilon")}.get(
        question, ("epsilon", "delta")
    )
    good = {number[0]: 1.0, number[1]: 1e-3}
    cases: list[tuple[tuple[Any, Any], dict[str, Any], str]] = [
        ((strategy, scheme), good, "scheme"),
        ((None, strategy), good, "scheme"),
        ((scheme, None), good, "strategy"),
        ((scheme, scheme), good, "strategy"),
        ((scheme, strategy), {**good, number[0]: "1.0"}, number[0]),
        ((scheme, strategy), {**good, number[1]: "1e-3"}, number[1]),
        ((scheme, strategy), {**good, number[1]: True}, number[1]),
        ((scheme, strategy), {**good, number[0]: float("nan")}, number[0]),
    ]
    for (first, second), numbers, parameter in cases:
        with pytest.raises(ConfigurationError) as info:
            ask(first, second, **numbers)
        assert info.value.parameter == parameter, (first, second, numbers)
        assert f".{parameter} = " in str(info.value)


def test_numpy_scalars_are_accepted_and_give_the_same_answer() -> None:
    scheme, strategy = _pair()
    gaussian = accountants.get("gaussian")()
    plain = gaussian.epsilon(scheme, strategy, 1.5, 1e-3)
    numpy = gaussian.epsilon(scheme, strategy, np.float32(1.5), np.float64(1e-3))
    assert numpy.certified_epsilon == plain.certified_epsilon
    assert type(numpy.sigma) is float and type(numpy.delta) is float


def test_plugin_accountants_get_the_checks_too() -> None:
    calls: list[tuple[Any, ...]] = []

    class Plugin(Accountant):
        def why_not(self, scheme: SamplingScheme, strategy: Strategy) -> str | None:
            return None

        def _epsilon(self, question: Question) -> Any:
            calls.append((question.sigma, question.delta))
            return EpsilonResult(
                **question.provenance("exact"),
                epsilon=1.0,
                certified_epsilon=1.0,
                delta=question.delta,
                sigma=question.sigma,
            )

        def _delta(self, question: Question) -> Any:
            raise AssertionError("not asked")

        def _calibrate(self, question: Question) -> Any:
            raise AssertionError("not asked")

    scheme, strategy = _pair()
    with pytest.raises(ConfigurationError, match=r"Plugin\.epsilon\.scheme"):
        Plugin().epsilon(strategy, scheme, 1.0, 1e-3)
    Plugin().epsilon(scheme, strategy, sigma=np.float64(2.0), delta=np.float32(0.5))
    assert calls == [(2.0, 0.5)] and all(type(x) is float for x in calls[0])
    assert calls and not calls[1:]


# -- numpy seeds and other numeric options -------------------------------------------------


def test_a_numpy_seed_is_normalised_and_runs() -> None:
    mc = accountants.get("monte_carlo")
    accountant = mc(
        samples=8000,
        pilot_samples=2000,
        seed=np.int64(4),
        run=RunSettings(chunk_size=np.int32(1000)),
    )
    assert type(accountant.seed) is int and type(accountant.run.chunk_size) is int
    result = accountant.epsilon(ToyScheme(rate=0.3), ToyStrategy(), 1.0, 1e-2)
    assert result.seed == 4 and math.isfinite(result.certified_epsilon)
    same = mc(samples=8000, pilot_samples=2000, seed=4, run=RunSettings(chunk_size=1000))
    assert same.epsilon(ToyScheme(rate=0.3), ToyStrategy(), 1.0, 1e-2).epsilon == result.epsilon


@pytest.mark.parametrize("seed", [True, np.bool_(True), 3.0, "3", -1])
def test_bad_seeds_are_refused_at_construction(seed: Any) -> None:
    with pytest.raises(ConfigurationError, match="seed"):
        accountants.get("monte_carlo")(seed=seed)


# -- Dask scheduler ---------------------------------------------------------------------------


def test_a_missing_scheduler_file_fails_at_construction(tmp_path: Any) -> None:
    pytest.importorskip("distributed")
    missing = str(tmp_path / "sched.json")
    with pytest.raises(ConfigurationError, match="existing scheduler file") as info:
        accountants.get("monte_carlo")(run=RunSettings(scheduler=missing))
    assert info.value.parameter == "scheduler"
    with pytest.raises(ConfigurationError, match="with a port"):
        accountants.get("monte_carlo")(run=RunSettings(scheduler="tcp://head-node"))


def test_an_unreachable_scheduler_fails_within_the_connect_timeout() -> None:
    pytest.importorskip("distributed")
    from minsep.framework.montecarlo import DaskExecutor

    executor = DaskExecutor(scheduler="tcp://127.0.0.1:1", connect_timeout=1.0)
    with pytest.raises(SchedulerUnreachableError, match=r"--scheduler\) within 1 s"):
        list(executor.map(abs, [1]))  # the bounded timeout reaches distributed.Client


# -- odds and ends found by probing every public entry --------------------------------------


def test_a_string_population_is_refused_not_read_as_its_length() -> None:
    scheme = schemes.get("b_min_sep").from_rate(8, 0.1, min_sep=2)
    with pytest.raises(ConfigurationError, match="population"):
        list(scheme.batches("100", np.random.default_rng(0)))


def test_the_curve_question_is_checked_too() -> None:
    mc = accountants.get("monte_carlo").example()
    scheme, strategy = _pair()
    with pytest.raises(ConfigurationError, match=r"curve\.scheme"):
        mc.curve(strategy, scheme, 1.0, [1.0])
    with pytest.raises(ConfigurationError, match=r"curve\.sigma"):
        mc.curve(scheme, strategy, "1.0", [1.0])


@pytest.mark.parametrize(
    ("options", "parameter"),
    [({"progress": "yes"}, "progress"), ({"progress": 1}, "progress"),
     ({"checkpoint": 3}, "checkpoint"), ({"checkpoint": ""}, "checkpoint"),
     ({"scheduler": 3}, "scheduler")],
)  # fmt: skip
def test_monte_carlo_options_have_types(options: dict[str, Any], parameter: str) -> None:
    with pytest.raises(ConfigurationError, match=parameter):
        accountants.get("monte_carlo")(run=options)


def test_multi_attribution_names_its_missing_option() -> None:
    with pytest.raises(ConfigurationError, match="max_user_examples") as info:
        schemes.get("multi_attribution").from_rate(64, 0.01, min_sep=4, probability=0.05)
    assert info.value.parameter == "max_user_examples"
