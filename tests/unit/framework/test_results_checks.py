"""Results refuse impossible values (issue 13 §5), keep inf representable, accept numpy scalars,
and ``Result.from_json`` turns malformed JSON into a ConfigurationError."""

from __future__ import annotations

import json
import math
from typing import Any

import attrs
import numpy as np
import pytest

from minsep.framework.errors import ConfigurationError
from minsep.framework.results import CalibrationResult, DeltaResult, EpsilonResult, Result

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
