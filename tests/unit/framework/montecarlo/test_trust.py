"""What is read back is checked (framework/montecarlo/trust.py): forged or corrupted answers in
the answer cache, results given to ``Result.from_json``, and loose permissions."""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

import attrs
import pytest

from minsep.framework import setup
from minsep.framework.cli.main import main
from minsep.framework.errors import CheckpointError, ConfigurationError
from minsep.framework.montecarlo import cache, trust
from minsep.framework.montecarlo.checkpoint import Checkpoint
from minsep.framework.results import Result

QUESTION = ["epsilon", "--scheme", "b_min_sep", "--min-sep", "4", "--bands", "4", "--steps",
            "16", "--rate", "1/8", "--sigma", "1", "--delta", "1e-2", "--samples", "4000",
            "--seed", "3", "--workers", "1", "--json"]  # fmt: skip


def _ask(capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[dict[str, Any], str]:
    assert main([*QUESTION, *extra]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


def _entry() -> Path:
    (entry,) = cache.cache_folder().glob("*.json")
    return entry


def _forge(entry: Path, **fields: Any) -> None:
    data = json.loads(entry.read_text(encoding="utf-8"))
    data["result"].update(fields)
    entry.write_text(json.dumps(data), encoding="utf-8")


def _evidence(result: Any, **changes: Any) -> Any:
    """``result`` with fields of its Monte Carlo evidence record changed."""
    return attrs.evolve(result, monte_carlo=attrs.evolve(result.monte_carlo, **changes))


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    skip = ("notes", "first_answer", "seconds", "environment")
    return {k: v for k, v in a.items() if k not in skip} == {
        k: v for k, v in b.items() if k not in skip
    }


@pytest.mark.parametrize("bound", ["betting", "fact42"])
def test_a_forged_cached_epsilon_is_refused_and_recomputed(
    capsys: pytest.CaptureFixture[str], bound: str
) -> None:
    """The issue's forgery (a certified epsilon below its own estimate), then one above the
    estimate that the entry's own verification evidence does not release: each is ignored
    with one line on stderr, and the answer is recomputed (and stored again)."""
    first, err = _ask(capsys, "--bound", bound)
    assert "cached answer" not in err and first["certified_epsilon"] > first["epsilon"]
    entry = _entry()
    evidence = first["monte_carlo"]["verification"]
    below_evidence = (first["epsilon"] + first["certified_epsilon"]) / 2
    assert evidence["rule"] == bound
    for forged, why in ((1e-4, "must be >= the estimate"), (below_evidence, "evidence")):
        _forge(entry, certified_epsilon=forged)
        again, err = _ask(capsys, "--bound", bound)
        warned = [line for line in err.splitlines() if "answer cache: ignoring" in line]
        assert len(warned) == 1 and str(entry) in warned[0], err
        assert f"certified_epsilon = {forged!r} is invalid" in warned[0] and why in warned[0]
        assert "cached answer" not in err
        assert _same(again, first)
    served, err = _ask(capsys, "--bound", bound)  # the recomputed answer was stored again
    assert "cached answer" in err and _same(served, first)


@pytest.mark.parametrize(
    ("nulled", "field"),
    [({"verification": None}, "evidence"), ({"base_delta": None}, "base_delta"),
     ({"bound": None}, "bound"), ({"verification": {"rule": "betting", "released": None}},
     "evidence")],
)  # fmt: skip
def test_a_cached_epsilon_without_its_evidence_is_refused(
    capsys: pytest.CaptureFixture[str], nulled: dict[str, Any], field: str
) -> None:
    """A same-user hand edit that nulls the evidence a certificate is re-derived from (so
    that nothing is left to check a lowered certificate against) is refused: one line on
    stderr naming the field, and the answer is recomputed."""
    first, _ = _ask(capsys)
    entry = _entry()
    data = json.loads(entry.read_text(encoding="utf-8"))
    data["result"]["monte_carlo"].update(nulled)
    data["result"]["certified_epsilon"] = first["epsilon"]  # lowered to the estimate
    entry.write_text(json.dumps(data), encoding="utf-8")
    again, err = _ask(capsys)
    warned = [line for line in err.splitlines() if "answer cache: ignoring" in line]
    assert len(warned) == 1 and str(entry) in warned[0], err
    assert f".{field} = " in warned[0] and "cached answer" not in err
    assert _same(again, first)


def test_a_cached_entry_of_an_older_result_format_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An entry in result format 1 (the Monte Carlo fields flat, no ``format`` tag) is
    refused by the cache and recomputed; ``Result.from_dict`` still reads it."""
    first, _ = _ask(capsys)
    entry = _entry()
    data = json.loads(entry.read_text(encoding="utf-8"))
    result = data["result"]
    stored = Result.from_dict(dict(result))
    assert result.pop("format") == 2
    record = result.pop("monte_carlo")
    record["evidence"] = record.pop("verification")
    result.update(record)
    entry.write_text(json.dumps(data), encoding="utf-8")
    assert Result.from_dict(result) == stored  # old files still read
    again, err = _ask(capsys)
    warned = [line for line in err.splitlines() if "answer cache: ignoring" in line]
    assert len(warned) == 1 and "format = 1 is invalid" in warned[0], err
    assert "cached answer" not in err and _same(again, first)
    _, err = _ask(capsys)  # recomputed in the current format and stored again
    assert "cached answer" in err


def test_an_entry_for_another_question_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    first, _ = _ask(capsys)
    entry = _entry()
    data = json.loads(entry.read_text(encoding="utf-8"))
    data["question_key"] = "0" * 64
    entry.write_text(json.dumps(data), encoding="utf-8")
    _, err = _ask(capsys)
    assert "it answers question '000" in err and "cached answer" not in err
    _forge(entry, sigma=2.0)  # the right key, another question's answer
    again, err = _ask(capsys)
    assert "the question asked sigma = 1.0" in err and _same(again, first)


def test_a_group_writable_cache_folder_is_refused_with_the_fix(
    capsys: pytest.CaptureFixture[str],
) -> None:
    first, _ = _ask(capsys)
    folder = cache.cache_folder()
    folder.chmod(0o770)
    try:
        again, err = _ask(capsys)
    finally:
        folder.chmod(0o700)
    lines = [line for line in err.splitlines() if "answer cache" in line]
    assert lines == [
        f"minsep: answer cache: refusing to use it: {folder} is writable by group (mode "
        f"0770), who could plant answers there: run `chmod 700 {folder}`"
    ]
    assert "cached answer" not in err and _same(again, first)


def test_a_cache_folder_owned_by_another_user_is_refused(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _ask(capsys)
    monkeypatch.setattr(os, "getuid", lambda: os.stat(cache.cache_folder()).st_uid + 1)
    _, err = _ask(capsys)
    assert "answer cache: refusing to use it:" in err and "not by you" in err
    assert "cached answer" not in err


def test_the_cache_folders_are_created_private(tmp_path: Path) -> None:
    store = cache.AnswerCache(tmp_path / "root" / "answers")
    result = setup.build_accountant("gaussian").epsilon(
        setup.build_scheme("poisson", 16, 1 / 8), setup.build_strategy(16, 1), 1.0, 1e-2
    )
    store.store("k", result)
    for folder in (tmp_path / "root", tmp_path / "root" / "answers"):
        assert folder.stat().st_mode & 0o077 == 0
    assert store.load("k", Result) is not None


# -- the invariants of each kind, on real results --------------------------------------------

SCHEME = functools.partial(setup.build_scheme, "b_min_sep", 16, 1 / 8, {"min_sep": 4})


@functools.cache
def _results() -> dict[str, Result]:
    scheme, strategy = SCHEME(), setup.build_strategy(16, 4)

    def mc(**options: Any) -> Any:
        return setup.build_accountant(
            "monte_carlo", {"samples": 4000, "seed": 5, "workers": 1, **options}
        )

    return {
        "fact42": mc(bound="fact42").epsilon(scheme, strategy, 1.0, 1e-2),
        "betting": mc().epsilon(scheme, strategy, 1.0, 1e-2),
        "delta": mc().delta(scheme, strategy, 1.0, 1.0),
        "calibration": mc().calibrate(scheme, strategy, 2.0, 1e-2),
        "curve": mc().delta_curve(scheme, strategy, 1.0, [0.5, 1.0, 1.5, 2.0]),
    }


@pytest.mark.parametrize("name", ["fact42", "betting", "delta", "calibration", "curve"])
def test_real_results_pass_their_checks(name: str) -> None:
    result = _results()[name]
    assert list(trust.problems(result)) == []
    assert Result.from_json(result.to_json()) == result


def _refused(result: Result, field: str, text: str) -> None:
    with pytest.raises(ConfigurationError, match=text) as caught:
        Result.from_json(result.to_json())
    assert caught.value.parameter == field


def test_a_fact42_certificate_is_rederived_from_its_candidates() -> None:
    result: Any = _results()["fact42"]
    candidates = result.evidence["candidates"]
    means = result.evidence["verification_means"]
    released = candidates.index(result.certified_epsilon)  # the smallest accepted candidate
    assert released > 0 and means[released - 1] > result.base_delta  # the one below failed
    _refused(
        attrs.evolve(result, certified_epsilon=candidates[released - 1]),
        "certified_epsilon",
        "its own verification evidence releases",
    )
    # a candidate claimed accepted whose verification mean exceeded the base delta
    failed = {**result.evidence, "verification_means": [1.0] * len(means)}
    _refused(_evidence(result, verification=failed), "certified_epsilon", "releases inf")
    # a base delta that Fact 4.2 with these samples cannot fold into delta
    _refused(_evidence(result, base_delta=result.delta * 0.99), "base_delta", "certifies only")
    _refused(
        attrs.evolve(result, failure_probability=result.failure_probability / 2),
        "failure_probability",
        "Fact 4.2 gives",
    )


@pytest.mark.parametrize(
    "evidence",
    [{"rule": "fact42", "declared": 8, "candidates": [1.0]},
     {"rule": "fact42", "declared": 8, "candidates": "x", "verification_means": [0.0]},
     {"rule": "fact42", "declared": "many"}],
)  # fmt: skip
def test_unreadable_evidence_is_refused(evidence: dict[str, Any]) -> None:
    result: Any = _results()["fact42"]
    _refused(_evidence(result, verification=evidence), "evidence", "cannot be read")


def test_a_betting_certificate_keeps_to_its_level_and_point() -> None:
    result: Any = _results()["betting"]
    _refused(
        attrs.evolve(result, failure_probability=result.failure_probability * 1.1),
        "failure_probability",
        "2\\^\\(-k/4\\)",
    )
    _refused(_evidence(result, base_delta=result.delta), "base_delta", "betting level")
    above = {**result.evidence, "verification_mean": result.base_delta}
    _refused(_evidence(result, verification=above), "evidence", "below the level")


def test_a_delta_certificate_is_rederived_from_its_thresholds() -> None:
    result: Any = _results()["delta"]
    assert result.certified_delta > result.delta
    forged = (result.delta + result.certified_delta) / 2
    _refused(attrs.evolve(result, certified_delta=forged), "certified_delta", "releases")
    _refused(attrs.evolve(result, certified_delta=result.delta / 2), "certified_delta", ">= the")


def test_a_calibration_is_rederived_from_its_sweep() -> None:
    calibration: Any = _results()["calibration"]
    deltas = calibration.evidence["deltas"]
    assert calibration.evidence["rule"] == "algorithm5"
    assert len(deltas) == len(calibration.candidates)
    failed = {"rule": "algorithm5", "deltas": [1.0] * len(deltas)}  # no entry verified
    _refused(_evidence(calibration, verification=failed), "sigma", "releases inf")
    short = {"rule": "algorithm5", "deltas": deltas[:1]}
    _refused(_evidence(calibration, verification=short), "evidence", "per sweep entry")


@pytest.mark.parametrize("name", ["fact42", "betting", "delta", "calibration", "curve"])
def test_stored_answers_need_their_evidence(name: str) -> None:
    """Every certified plain Monte Carlo answer keeps what its certificate is re-derived
    from; without it (or with an importance-sampling proposal, whose certificate these rules
    do not re-derive) a stored answer is refused."""
    result: Any = _results()[name]
    data = result.to_dict()
    assert trust.check_stored(data, Result) == result
    for changes, field in (
        ({"verification": None}, "evidence"),
        ({"proposal": {"method": "escort"}}, "proposal"),
    ):
        forged = _evidence(result, **changes)
        assert [f for f, _ in trust.evidence_problems(forged)] == [field]
        with pytest.raises(ConfigurationError):  # by this, or an invariant it breaks first
            trust.check_stored(forged.to_dict(), Result)
    nothing = attrs.evolve(result, monte_carlo=None)
    assert [f for f, _ in trust.evidence_problems(nothing)] == ["monte_carlo"]


def test_a_calibration_and_a_curve_keep_their_order() -> None:
    calibration: Any = _results()["calibration"]
    if calibration.sigma_estimate is not None:
        _refused(
            attrs.evolve(calibration, sigma=calibration.sigma_estimate * 0.9), "sigma", ">= the"
        )
    _refused(_evidence(calibration, base_delta=calibration.delta), "base_delta", "must lie")
    curve: Any = _results()["curve"]
    lowered = (curve.delta[0] + curve.certified_delta[0]) / 2, *curve.certified_delta[1:]
    _refused(attrs.evolve(curve, certified_delta=lowered), "certified_delta", "KL upper")


# -- checkpoints ---------------------------------------------------------------------------


def test_a_checkpoint_others_can_write_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "run.ckpt"
    checkpoint = Checkpoint(path)
    checkpoint.write({})
    assert path.stat().st_mode & 0o077 == 0  # written 0600
    assert checkpoint.read() == {}
    path.chmod(0o664)
    with pytest.raises(CheckpointError, match=f"run `chmod 600 {path}`"):
        checkpoint.read()
