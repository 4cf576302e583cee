"""Registry, backend, validators, results and CLI of the framework core."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import attrs
import numpy as np
import pytest

from minsep.framework import validation as v
from minsep.framework.backend import get_backend, namespace_backend
from minsep.framework.cli.main import main
from minsep.framework.errors import (
    BackendUnavailableError,
    ConfigurationError,
    MinsepError,
    UnknownNameError,
)
from minsep.framework.interfaces import SamplingScheme
from minsep.framework.registries import schemes
from minsep.framework.registry import Registry
from minsep.framework.results import CalibrationResult, EpsilonResult, Result
from tests.contracts.base import SchemeContract


@attrs.frozen
class EveryOtherStep(SamplingScheme):
    """Toy scheme: the whole dataset on even steps (a test plugin)."""

    steps: int = attrs.field(validator=v.positive_int())

    @classmethod
    def example(cls) -> EveryOtherStep:
        return cls(steps=6)

    @classmethod
    def invalid_examples(cls) -> list[tuple[dict[str, Any], str]]:
        return [({"steps": 0}, "steps"), ({"steps": 1.5}, "steps")]

    @property
    def n_steps(self) -> int:
        return self.steps

    @property
    def rate(self) -> float:
        return math.ceil(self.steps / 2) / self.steps

    @property
    def min_separation(self) -> int:
        return 2

    def batches(self, population: Any, rng: np.random.Generator) -> Iterator[np.ndarray]:
        for step in range(self.steps):
            size = population if step % 2 == 0 else 0
            yield np.arange(size, dtype=np.int64)


@pytest.fixture
def registered_toy() -> Iterator[str]:
    schemes.register("every_other_step_test")(EveryOtherStep)
    yield "every_other_step_test"
    schemes.unregister("every_other_step_test")


class TestToySchemeContract(SchemeContract):
    @pytest.fixture
    def scheme(self) -> SamplingScheme:
        return EveryOtherStep.example()


def test_scheme_registered_from_a_test_module_is_usable_by_name(registered_toy: str) -> None:
    cls = schemes.get(registered_toy)
    assert cls is EveryOtherStep
    assert registered_toy in schemes.names()
    assert schemes.names()[registered_toy].startswith("Toy scheme")
    batches = list(cls(steps=4).batches(5, np.random.default_rng(0)))
    assert [b.size for b in batches] == [5, 0, 5, 0]


def test_duplicate_registration_is_refused_unless_replaced(registered_toy: str) -> None:
    @attrs.frozen
    class Other(EveryOtherStep):
        """Another toy."""

    with pytest.raises(ConfigurationError, match="already registered"):
        schemes.register(registered_toy)(Other)
    schemes.register(registered_toy, replace=True)(Other)
    assert schemes.get(registered_toy) is Other


def test_unknown_name_suggests_close_names(registered_toy: str) -> None:
    with pytest.raises(UnknownNameError, match="did you mean 'every_other_step_test'"):
        schemes.get("every_other_stp_test")
    with pytest.raises(KeyError):
        schemes.get("nothing-like-it")


def test_registry_refuses_non_subclasses_and_bad_names() -> None:
    reg: Registry[SamplingScheme] = Registry("scheme", SamplingScheme, "minsep.none")
    with pytest.raises(ConfigurationError, match="must subclass SamplingScheme"):
        reg.register("x")(int)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="name"):
        reg.register("bad name!")


def test_entry_point_plugins_are_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.metadata as md

    ep = md.EntryPoint(
        name="toy_plugin",
        value="tests.unit.framework.test_framework_core:EveryOtherStep",
        group="minsep.test_plugins",
    )
    monkeypatch.setattr(md, "entry_points", lambda group: [ep] if group == ep.group else [])
    reg: Registry[SamplingScheme] = Registry("scheme", SamplingScheme, "minsep.test_plugins")
    assert reg.get("toy_plugin") is EveryOtherStep


def test_validators_name_parameter_value_and_range() -> None:
    @attrs.frozen
    class Holder:
        rate: float = attrs.field(validator=v.probability())
        count: int = attrs.field(validator=v.positive_int())

    with pytest.raises(ConfigurationError, match=r"Holder.rate = 1.5 .*\(0.0, 1.0\]"):
        Holder(1.5, 1)
    with pytest.raises(ConfigurationError, match=r"Holder.rate = nan"):
        Holder(float("nan"), 1)
    with pytest.raises(ConfigurationError, match=r"Holder.count = 0 .*integer in \[1, inf\]"):
        Holder(0.5, 0)
    with pytest.raises(ConfigurationError, match=r"Holder.count = True"):
        Holder(0.5, True)
    with pytest.raises(ValueError):  # ConfigurationError is a ValueError
        Holder(0.5, "3")
    assert Holder(np.float64(0.5), np.int64(3)).count == 3
    assert issubclass(ConfigurationError, MinsepError)


def test_numpy_backend_rng_is_reproducible_from_seed_sequence() -> None:
    backend = get_backend("numpy")
    a = backend.rng(np.random.SeedSequence(1)).standard_normal((3, 4))
    b = backend.rng(np.random.SeedSequence(1)).standard_normal((3, 4))
    np.testing.assert_array_equal(a, b)
    assert isinstance(backend.to_numpy(a), np.ndarray)
    assert get_backend(backend) is backend


def test_unknown_and_unavailable_backends_raise_clearly() -> None:
    with pytest.raises(ConfigurationError, match="backend = 'tpu'"):
        get_backend("tpu")
    try:
        import cupy  # noqa: F401
    except ImportError:
        with pytest.raises(BackendUnavailableError, match="pip install 'minsep\\[gpu\\]'"):
            get_backend("cupy")
    assert get_backend("auto").name in {"numpy", "cupy"}


def test_namespace_backend_runs_array_api_strict() -> None:
    xp = pytest.importorskip("array_api_strict")
    backend = namespace_backend(xp)
    draws = backend.rng(np.random.SeedSequence(0)).random((5,))
    total = xp.sum(draws)
    assert 0 < float(total) < 5
    assert backend.to_numpy(draws).shape == (5,)


def test_results_round_trip_through_json() -> None:
    result = EpsilonResult(
        accountant="monte_carlo",
        method="monte_carlo",
        scheme={"scheme": "b_min_sep", "min_sep": 8},
        epsilon=1.25,
        certified_epsilon=1.31,
        delta=1e-3,
        sigma=0.9,
        failure_probability=1e-6,
        monte_carlo={"samples": 1000, "seed": 3, "std_error": 0.01},
        notes=("x",),
    )
    again = Result.from_json(result.to_json())
    assert again == result
    cal = CalibrationResult(
        accountant="pld",
        method="exact",
        sigma=1.0,
        epsilon=2.0,
        delta=1e-5,
        candidates=(2.0, 1.0),
        monte_carlo={"samples": 10, "seed": 0, "base_delta": float("inf")},
    )
    text = cal.to_json()
    json.loads(text)  # strict JSON, non-finite floats tagged
    assert Result.from_json(text) == cal
    with pytest.raises(ConfigurationError, match="kind"):
        Result.from_dict({"kind": "nope"})


def test_cli_version_and_list(capsys: pytest.CaptureFixture[str], registered_toy: str) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert "minsep" in capsys.readouterr().out
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "schemes:" in out and registered_toy in out and "accountants:" in out
    assert main(["list", "schemes", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert registered_toy in listing["schemes"]
