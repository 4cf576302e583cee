"""The answer cache (framework/montecarlo/cache.py) and its use by the CLI."""

from __future__ import annotations

import json
from typing import Any

import pytest

from minsep.framework import setup
from minsep.framework.cli.main import main
from minsep.framework.montecarlo import cache

SMALL = ["epsilon", "--scheme", "b_min_sep", "--min-sep", "4", "--bands", "4", "--steps", "16",
         "--rate", "1/8", "--sigma", "1", "--delta", "1e-2", "--samples", "4000"]  # fmt: skip


def _key(**options: Any) -> str | None:
    scheme = setup.build_scheme("b_min_sep", 16, 1 / 8, {"min_sep": 4})
    strategy = setup.build_strategy(16, 4)
    sigma = options.pop("sigma", 1.0)
    accountant = setup.build_accountant("monte_carlo", {"samples": 4000, "seed": 1, **options})
    return cache.question_key(
        "epsilon", scheme, strategy, {"sigma": sigma, "delta": 1e-2}, accountant
    )


def test_the_key_is_the_whole_question_and_nothing_else() -> None:
    base = _key()
    assert base is not None
    assert _key(seed=None) is None  # fresh entropy: never reused
    for change in ({"sigma": 1.5}, {"samples": 5000}, {"seed": 2}, {"chunk_size": 1000},
                   {"proposal": "plain"}, {"backend": "numpy:array"}):  # fmt: skip
        assert _key(**change) != base, change
    for same in ({"progress": False}, {"max_seconds": 100.0}, {"checkpoint_interval": 5.0}):
        assert _key(**same) == base, same


def test_the_key_changes_with_the_code(monkeypatch: pytest.MonkeyPatch) -> None:
    base = _key()
    monkeypatch.setattr(cache, "code_version", lambda: "0.0.0+edited")
    assert _key() != base


def _run(capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[dict[str, Any], str]:
    assert main([*SMALL, "--json", *extra]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


def _answer(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in result.items() if k not in ("notes", "first_answer")}


def test_a_repeated_seeded_question_is_answered_from_the_cache(
    capsys: pytest.CaptureFixture[str],
) -> None:
    first, err = _run(capsys, "--seed", "4")
    assert "cached answer" not in err
    again, err = _run(capsys, "--seed", "4")
    assert "minsep: cached answer from " in err and "--no-cache to recompute" in err
    assert _answer(again) == _answer(first)  # seconds included: the stored result itself
    assert any(note.startswith("cached answer from ") for note in again["notes"])
    fresh, err = _run(capsys, "--seed", "4", "--no-cache")
    assert "cached answer" not in err and fresh["seconds"] != first["seconds"]
    assert _answer(fresh) | {"seconds": 0} == _answer(first) | {"seconds": 0}


def test_unseeded_questions_are_never_stored(capsys: pytest.CaptureFixture[str]) -> None:
    _run(capsys)
    assert not list(cache.cache_folder().glob("*.json"))


def test_a_corrupt_entry_is_ignored_with_a_warning_and_replaced(
    capsys: pytest.CaptureFixture[str],
) -> None:
    first, _ = _run(capsys, "--seed", "6")
    (entry,) = cache.cache_folder().glob("*.json")
    entry.write_text('{"kind": "epsilon", "epsilon": "garbage"', encoding="utf-8")
    again, err = _run(capsys, "--seed", "6")
    assert "cached answer" not in err
    assert f"minsep: answer cache: ignoring {entry} (recomputing): " in err
    assert _answer(again) | {"seconds": 0} == _answer(first) | {"seconds": 0}
    assert json.loads(entry.read_text(encoding="utf-8"))["result"]["kind"] == "epsilon"


def test_an_unwritable_folder_only_costs_the_cache(tmp_path: Any) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    store = cache.AnswerCache(blocker / "answers")
    result = setup.build_accountant("gaussian").epsilon(
        setup.build_scheme("poisson", 16, 1 / 8), setup.build_strategy(16, 1), 1.0, 1e-2
    )
    with pytest.warns(UserWarning) as caught:
        got, when = store.answer("k", type(result), lambda: result)
    assert got == result and when is None
    assert any("answer cache: cannot write" in str(w.message) for w in caught)


def test_the_workers_start_before_the_first_answer_unless_the_cache_answers(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command line starts the Monte Carlo workers before its first answer (their start-up
    overlaps it), and starts nothing when the cache holds the answer."""
    from minsep.accountants.monte_carlo import MonteCarloAccountant
    from minsep.framework.cli import first_answer

    events: list[str] = []
    real = first_answer.first_answer

    def start(self: Any, scheme: Any, strategy: Any, sigma: float = 1.0) -> None:
        events.append(f"start at sigma {sigma:g}")

    def first(*args: Any) -> Any:
        events.append("first answer")
        return real(*args)

    monkeypatch.setattr(MonteCarloAccountant, "start_workers", start)
    monkeypatch.setattr(first_answer, "first_answer", first)
    _run(capsys, "--seed", "6")
    assert events == ["start at sigma 1", "first answer"]
    events.clear()
    _, err = _run(capsys, "--seed", "6")
    assert "cached answer" in err and events == ["first answer"]
