"""Results and JSON outputs record the package versions and the git commit (issue 19, item 5)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import scipy

from minsep.framework.compare import ComparisonSetup, compare, format_json
from minsep.framework.environment import PACKAGES, environment, git_commit
from minsep.framework.registries import schemes
from minsep.framework.results import EpsilonResult, Result
from minsep.framework.setup import build_accountant, build_strategy


def test_environment_names_versions_and_commit() -> None:
    env = environment()
    assert set(env) == {*(p.replace("-", "_") for p in PACKAGES), "python", "git_commit"}
    assert env["numpy"] == np.__version__ and env["scipy"] == scipy.__version__
    env["numpy"] = "changed"
    assert environment()["numpy"] == np.__version__  # a copy each time


def test_git_commit_outside_a_checkout_is_unknown(tmp_path: Path) -> None:
    assert git_commit(tmp_path) == "unknown"
    commit = git_commit()
    assert commit == "unknown" or len(commit.split("+")[0]) == 40


def test_every_answer_records_its_environment() -> None:
    scheme = schemes.get("poisson").from_rate(32, 1 / 8)
    strategy = build_strategy(32, 1)
    for name in ("pld", "gaussian", "rdp"):
        result = build_accountant(name, {}).epsilon(scheme, strategy, 1.0, 1e-3)
        assert result.environment == environment()
        back = Result.from_json(result.to_json())
        assert isinstance(back, EpsilonResult) and back.environment == environment()
    # An older result without the field still loads, honestly without an environment.
    data = result.to_dict()
    del data["environment"]
    assert Result.from_dict(data).environment is None


def test_compare_json_records_its_environment() -> None:
    setup = ComparisonSetup(n_steps=16, rate=1 / 4, sigma=1.0, bands=(1,), families=("poisson",))
    assert json.loads(format_json(setup, compare(setup)))["environment"] == environment()
