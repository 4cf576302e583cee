"""Options grouped into records (framework/option_groups.py): the Monte Carlo accountant holds
its run settings and its calibration sweep as records, and still takes flat option names."""

from __future__ import annotations

import attrs
import pytest

from minsep.accountants.monte_carlo import CalibrationSweep, MonteCarloAccountant, RunSettings
from minsep.framework import setup
from minsep.framework.errors import ConfigurationError
from minsep.framework.option_groups import configure, flat_fields, flat_options, grouped


def test_the_accountant_holds_at_most_twelve_fields_and_takes_every_option_flat() -> None:
    own = [f.name for f in attrs.fields(MonteCarloAccountant)]
    assert len(own) <= 12 and "run" in own and "sweep" in own
    flat = flat_fields(MonteCarloAccountant)
    for name in ("samples", "seed", "workers", "checkpoint", "max_seconds", "sigma_low"):
        assert name in flat
    assert "run" not in flat and "sweep" not in flat
    for option in MonteCarloAccountant.command_line_options or {}:
        assert option in flat


def test_flat_options_build_and_evolve_the_records() -> None:
    built = setup.build_accountant(
        "monte_carlo", {"samples": 2000, "workers": 1, "progress": False, "sweep_size": 10}
    )
    assert isinstance(built, MonteCarloAccountant)
    assert built.run == RunSettings(workers=1, progress=False)
    assert built.sweep == CalibrationSweep(sweep_size=10)
    changed = configure(built, max_seconds=5.0, sigma_high=4.0, seed=3)
    assert changed.run.max_seconds == 5.0 and changed.run.progress is False
    assert changed.sweep.sigma_high == 4.0 and changed.sweep.sweep_size == 10
    assert changed.seed == 3 and built.seed is None
    options = flat_options(changed)
    assert options["max_seconds"] == 5.0 and options["sweep_size"] == 10 and "run" not in options
    rebuilt = MonteCarloAccountant(**grouped(MonteCarloAccountant, options))
    assert rebuilt == changed


def test_a_record_given_whole_takes_flat_options_on_top() -> None:
    options = grouped(MonteCarloAccountant, {"run": RunSettings(workers=1), "progress": False})
    assert options == {"run": RunSettings(workers=1, progress=False)}


def test_bad_options_are_refused_naming_them() -> None:
    with pytest.raises(ConfigurationError, match="does not take") as caught:
        setup.build_accountant("monte_carlo", {"threads": 2})
    assert "--threads" in str(caught.value)
    with pytest.raises(ConfigurationError) as refused:
        setup.build_accountant("monte_carlo", {"chunk_size": 0})
    assert refused.value.parameter == "chunk_size" and "RunSettings.chunk_size = 0" in str(
        refused.value
    )
