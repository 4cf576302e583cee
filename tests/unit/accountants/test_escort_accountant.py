"""The Monte Carlo accountant and the CLI with the escort proposal (docs/rdp-escort.md §8)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from dp_accounting.pld import privacy_loss_distribution

from minsep.accountants.monte_carlo import MonteCarloAccountant, RunSettings
from minsep.framework.cli.main import main
from minsep.framework.errors import ConfigurationError
from minsep.framework.montecarlo.checkpoint import Checkpoint
from minsep.framework.results import EpsilonResult
from minsep.schemes.poisson import Poisson
from minsep.strategies import Identity

N, RATE, SIGMA, DELTA = 50, 0.05, 0.7, 1e-8


def exact_epsilon() -> float:
    pld = privacy_loss_distribution.from_gaussian_mechanism(
        SIGMA, sampling_prob=RATE, value_discretization_interval=1e-4
    ).self_compose(N)
    return float(pld.get_epsilon_for_delta(DELTA))


def test_auto_takes_the_escort_when_plain_cannot_certify() -> None:
    accountant = MonteCarloAccountant(
        samples=2_000, pilot_samples=500, seed=1, run=RunSettings(progress=False)
    )
    result = accountant.epsilon(Poisson(n_steps=N, rate=RATE), Identity(), SIGMA, DELTA)
    assert result.proposal is not None
    assert result.proposal["method"] == "escort" and result.proposal["order"] == 3
    assert result.proposal["add"] == "exact zero"
    assert exact_epsilon() <= result.certified_epsilon < exact_epsilon() + 1.0
    assert any("escort (auto)" in note for note in result.notes)
    assert any("support bound" in note for note in result.notes)
    again = EpsilonResult.from_json(result.to_json())
    assert again.proposal == result.proposal


def test_plain_is_refused_where_it_cannot_certify() -> None:
    accountant = MonteCarloAccountant(
        samples=2_000, seed=1, proposal="plain", run=RunSettings(progress=False)
    )
    with pytest.raises(ConfigurationError, match="samples"):
        accountant.epsilon(Poisson(n_steps=N, rate=RATE), Identity(), SIGMA, DELTA)


def test_escort_delta_question() -> None:
    accountant = MonteCarloAccountant(
        samples=5_000,
        pilot_samples=1_000,
        seed=2,
        proposal="escort",
        run=RunSettings(progress=False),
    )
    epsilon = exact_epsilon()
    result = accountant.delta(Poisson(n_steps=N, rate=RATE), Identity(), SIGMA, epsilon)
    assert result.proposal is not None and result.proposal["method"] == "escort"
    assert DELTA * 0.99 <= result.certified_delta <= 5 * DELTA
    assert math.isfinite(result.delta)


def test_proposal_is_validated() -> None:
    with pytest.raises(ConfigurationError, match="proposal"):
        MonteCarloAccountant(proposal="mcmc")


def test_cli_proposal_flag(capsys: pytest.CaptureFixture[str]) -> None:
    args = [
        "epsilon", "--scheme", "poisson", "--steps", str(N), "--rate", str(RATE),
        "--sigma", str(SIGMA), "--delta", str(DELTA), "--samples", "2000",
        "--pilot-samples", "500", "--seed", "3", "--proposal", "escort", "--json",
        "--accountant", "monte_carlo",
    ]  # fmt: skip
    assert main(args) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["monte_carlo"]["proposal"]["method"] == "escort"
    assert data["certified_epsilon"] >= exact_epsilon()


def test_escort_stages_are_checkpointed_and_resume(tmp_path: Path) -> None:
    path = tmp_path / "run.ckpt"
    accountant = MonteCarloAccountant(
        samples=2_000,
        pilot_samples=500,
        seed=1,
        proposal="escort",
        run=RunSettings(progress=False, checkpoint=str(path), chunk_size=500),
    )
    first = accountant.epsilon(Poisson(n_steps=N, rate=RATE), Identity(), SIGMA, DELTA)
    stages = Checkpoint(path).read()
    assert {"escort pilot", "escort verify"} <= set(stages)
    assert stages["escort verify"]["chunks_done"] == stages["escort verify"]["n_chunks"] == 4
    again = accountant.epsilon(Poisson(n_steps=N, rate=RATE), Identity(), SIGMA, DELTA)
    assert again.certified_epsilon == first.certified_epsilon


def test_auto_says_when_the_escort_it_chose_cannot_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 30, friction 1: when ``auto`` took the escort for a calibration and the escort
    cannot run, the refusal names what would help (samples, another accountant) instead of
    advising proposal 'plain', which cannot certify this delta either."""
    from minsep.accountants.escort_engine import EscortProposal

    def cannot(*args: object, **kwargs: object) -> float:
        raise ConfigurationError("escort_setups.orders = (2,) is invalid: no order fits")

    monkeypatch.setattr(EscortProposal, "locate", cannot)
    accountant = MonteCarloAccountant(
        samples=2_000, pilot_samples=500, seed=1, run=RunSettings(progress=False)
    )
    with pytest.raises(ConfigurationError, match=r"'auto' chose the escort .* cannot run here"):
        accountant.calibrate(Poisson(n_steps=N, rate=RATE), Identity(), 9.5, DELTA)
    named = MonteCarloAccountant(
        samples=2_000, seed=1, proposal="escort", run=RunSettings(progress=False)
    )
    with pytest.raises(ConfigurationError, match="no order fits"):
        named.calibrate(Poisson(n_steps=N, rate=RATE), Identity(), 9.5, DELTA)


def test_too_few_escort_samples_name_the_normalised_delta() -> None:
    """The escort verifies the mean of W/s at delta/s, not at the question's delta: a refusal
    for too few samples says so instead of naming a delta the user never asked for."""
    accountant = MonteCarloAccountant(  # too few for delta/s even on the shorter escort sweep
        samples=100, seed=2, proposal="escort", run=RunSettings(progress=False)
    )  # (epsilon 1.5: at epsilon 2 or 3 the sweep ending just below the centre needs fewer)
    with pytest.raises(ConfigurationError, match=r"delta/s = .* question's delta = 1e-06") as info:
        accountant.calibrate(Poisson(n_steps=200, rate=0.02), Identity(), 1.5, 1e-6)
    assert info.value.parameter == "samples" and "need --samples >=" in str(info.value)
