"""Issue 13 §4/§5 through the Python API: bad input raises ConfigurationError naming the
parameter (never a TypeError/AttributeError/ZeroDivisionError from deep inside), results refuse
impossible values, and numpy scalars are accepted consistently."""

from __future__ import annotations

import contextlib
import json
import math
from typing import Any

import attrs
import numpy as np
import pytest

from minsep.accountants.monte_carlo import RunSettings
from minsep.framework.errors import ConfigurationError, SchedulerUnreachableError
from minsep.framework.interfaces import Accountant, Question, SamplingScheme, Strategy
from minsep.framework.registries import accountants, schemes, strategies
from minsep.framework.results import CalibrationResult, DeltaResult, EpsilonResult, Result
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


# -- strategy coefficients ------------------------------------------------------------------


@pytest.mark.parametrize("scale", [1e308, 1e-300, 1e-160, 1.0, 3e200])
def test_coefficients_normalise_at_any_normal_scale(scale: float) -> None:
    coefficients = strategies.get("banded_toeplitz")((scale, scale)).coefficients
    np.testing.assert_allclose(coefficients, [math.sqrt(0.5)] * 2, rtol=1e-15)


def test_ordinary_coefficients_normalise_to_the_same_bits_as_before() -> None:
    values = (1.0, 0.7, 0.3)
    norm = math.sqrt(sum(v * v for v in values))
    got = tuple(strategies.get("banded_toeplitz")(values).coefficients)
    assert got == tuple(v / norm for v in values)


@pytest.mark.parametrize(
    "values",
    [(1e-320, 1e-320), (5e-324,), (0.0, 0.0), (float("inf"), 1.0), (1.0, -1e-300), (math.nan,)],
)
def test_bad_coefficients_are_refused_by_name(values: tuple[float, ...]) -> None:
    with pytest.raises(ConfigurationError, match="coefficients"):
        strategies.get("banded_toeplitz")(values)


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


# -- results --------------------------------------------------------------------------------

_EPS = {"accountant": "x", "method": "exact", "epsilon": 1.0, "certified_epsilon": 1.5,
        "delta": 1e-3, "sigma": 1.0}  # fmt: skip


@pytest.mark.parametrize(
    ("change", "parameter"),
    [
        ({"certified_epsilon": math.nan}, "certified_epsilon"),
        ({"certified_epsilon": -1.0}, "certified_epsilon"),
        ({"certified_epsilon": "1.5"}, "certified_epsilon"),
        ({"epsilon": math.nan}, "epsilon"),
        ({"delta": 5}, "delta"),
        ({"delta": 0.0}, "delta"),
        ({"failure_probability": 2}, "failure_probability"),
        ({"sigma": 0.0}, "sigma"),
        ({"monte_carlo": {"samples": 0, "seed": 1}}, "samples"),
        ({"monte_carlo": {"samples": 10, "seed": -3}}, "seed"),
        ({"monte_carlo": {"seed": 1}}, "samples"),
        ({"monte_carlo": {"samples": 10, "seed": 1, "kernels": "gpu"}}, "kernels"),
        ({"monte_carlo": {"samples": 10, "seed": 1, "bound": "dkw"}}, "bound"),
        ({"monte_carlo": 3}, "monte_carlo"),
        ({"seconds": -1.0}, "seconds"),
        ({"accountant": 3}, "accountant"),
        ({"scheme": "b_min_sep"}, "scheme"),
        ({"monte_carlo": {"samples": 10, "seed": 1, "std_error": math.nan}}, "std_error"),
    ],
)
def test_results_refuse_impossible_values(change: dict[str, Any], parameter: str) -> None:
    with pytest.raises(ConfigurationError, match=parameter):
        EpsilonResult(**{**_EPS, **change})
    text = json.dumps({"kind": "epsilon", **_EPS, **change})
    with pytest.raises(ConfigurationError, match=parameter):
        Result.from_json(text)


@pytest.mark.parametrize("version", [3, 0, "2", True])
def test_a_result_of_an_unknown_format_is_refused(version: Any) -> None:
    text = json.dumps({"kind": "epsilon", "format": version, **_EPS})
    with pytest.raises(ConfigurationError, match="format") as caught:
        Result.from_json(text)
    assert caught.value.parameter == "format"


def test_a_result_of_format_1_reads_with_its_monte_carlo_fields_grouped() -> None:
    flat = {**_EPS, "method": "monte_carlo", "samples": 1000, "seed": 2, "kernels": "array",
            "base_delta": None, "evidence": {"rule": "kl"}}  # fmt: skip
    result = Result.from_json(json.dumps({"kind": "epsilon", **flat}))
    assert result.monte_carlo is not None and result.samples == 1000 and result.seed == 2
    assert result.evidence == {"rule": "kl"} and result.kernels == "array"
    assert result.to_dict()["format"] == 2 and result.to_dict()["monte_carlo"]["seed"] == 2


def test_results_keep_inf_representable_and_accept_numpy_scalars() -> None:
    result = EpsilonResult(**{**_EPS, "certified_epsilon": math.inf, "sigma": np.float64(2.0)})
    assert Result.from_json(result.to_json()) == result and type(result.sigma) is float
    delta = DeltaResult(accountant="x", method="monte_carlo", delta=0.0, certified_delta=1.0,
                        epsilon=math.inf, sigma=1.0,
                        monte_carlo={"samples": np.int64(10), "seed": 0})  # fmt: skip
    assert Result.from_json(delta.to_json()) == delta and type(delta.samples) is int
    with pytest.raises(ConfigurationError, match="certified_delta"):
        attrs.evolve(delta, certified_delta=1.5)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("{", "not JSON"),
        ("[1]", "JSON object"),
        ('"epsilon"', "JSON object"),
        ('{"kind": "epsilon", "foo": 1}', "foo"),
        ('{"kind": "epsilon", "accountant": "x"}', "<missing>"),
        ('{"kind": "nope"}', "kind"),
        ('{"accountant": "x"}', "kind"),
    ],
)
def test_malformed_json_raises_configuration_error(text: str, match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        Result.from_json(text)


def test_from_json_of_a_subclass_requires_its_kind() -> None:
    calibration = CalibrationResult(accountant="x", method="exact", sigma=1.0, epsilon=1.0,
                                    delta=1e-3, candidates=(2.0, 1.0))  # fmt: skip
    text = calibration.to_json()
    assert Result.from_json(text) == calibration == CalibrationResult.from_json(text)
    with pytest.raises(ConfigurationError, match="kind = 'calibration'"):
        EpsilonResult.from_json(text)
    with pytest.raises(ConfigurationError, match="candidates"):
        attrs.evolve(calibration, candidates=(1.0, -2.0))


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
