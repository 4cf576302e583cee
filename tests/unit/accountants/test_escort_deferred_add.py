"""Deferred add checks of an escort walk (docs/math.md §7, "deferred add checks").

Where a bound settles the add direction, the walk checks it at every ADD_EVERY-th entry whose
remove direction passed and at the entry it would release; a certificate at an entry covers
every entry above it (the true delta_add is non-increasing in sigma). Checked exhaustively on
scripted remove and add outcomes: the released entry passed the walk's remove checks and some
checked entry at or below it (a smaller sigma) had its add bound pass; where the add outcomes
are monotone (as the true deltas are) the release is the per-entry walk's, entry for entry.
"""

from __future__ import annotations

import itertools
import math

import attrs
import pytest

from minsep.accountants import escort_sweep as escort_sweep_module
from minsep.accountants.escort_engine import EscortProposal
from minsep.accountants.escort_sweep import ADD_EVERY, DeferredAdd, EscortSweep, escort_sweep
from minsep.framework.montecarlo import EngineConfig
from minsep.framework.montecarlo.calibration import _walk
from minsep.framework.montecarlo.proposals import SweepQuestion
from minsep.schemes.b_min_sep.loss import BMinSepLossModel

QUIET = EngineConfig(progress=False)
SWEEP = (1.9, 1.7, 1.6, 1.5, 1.4, 1.3, 1.2)
N = len(SWEEP)


@attrs.define
class Script:
    """Scripted outcomes: the remove direction passes down to ``last_remove``, the add bound
    passes where ``add`` says; the entries each direction checked."""

    last_remove: int = -1
    add: tuple[bool, ...] = (True,) * N
    removed: list[int] = attrs.field(factory=list)
    added: list[int] = attrs.field(factory=list)


@pytest.fixture(scope="module")
def base() -> EscortSweep:
    model = BMinSepLossModel(
        coefficients=(1.0, 0.6, 0.3), n_steps=40, min_sep=4, probability=0.1, warm_start=False
    )
    escorts = EscortProposal().sweep_plan(model, SWEEP, 1.5)
    question = SweepQuestion(SWEEP, 1.5, 1e-2, 2_000, 1, QUIET, 2)
    return attrs.evolve(escort_sweep(model, question, escorts, False), settled=(False,) * N)


def _plan(
    monkeypatch: pytest.MonkeyPatch, base: EscortSweep, last_remove: int, add: tuple[bool, ...]
) -> tuple[EscortSweep, Script]:
    """A block-bound escort sweep playing ``Script(last_remove, add)``."""
    script = Script(last_remove, add)

    def remove(self: EscortSweep, index: int) -> tuple[float, bool]:
        script.removed.append(index)
        return 1e-3 * index, index <= script.last_remove

    def bounded(self: EscortSweep, index: int) -> float:
        script.added.append(index)
        return 1e-3 if script.add[index] else 1.0

    monkeypatch.setattr(EscortSweep, "_remove", remove)
    monkeypatch.setattr(EscortSweep, "_bounded_add_delta", bounded)
    monkeypatch.setattr(EscortSweep, "is_settled", lambda self, index: False)
    return attrs.evolve(base, deferred=DeferredAdd()), script


def _calibrate(plan: EscortSweep, start: int) -> int:
    """calibrate_sweep's two walks on ``plan``: from ``start``, else from the top before it."""
    observed: dict[int, float] = {}
    index = _walk(plan, range(start, N), observed)
    if index < 0 and start > 0:
        index = _walk(plan, range(start), observed)
    return index


def _per_entry(last_remove: int, add: tuple[bool, ...], start: int) -> int:
    """The walk checking both directions at every entry (the release before deferral)."""

    def walk(entries: range) -> int:
        last = -1
        for i in entries:
            if not (i <= last_remove and add[i]):
                break
            last = i
        return last

    index = walk(range(start, N))
    return walk(range(start)) if index < 0 and start > 0 else index


@pytest.mark.parametrize("every", [1, ADD_EVERY, 3])
def test_every_release_is_certified_and_monotone_outcomes_release_as_before(
    monkeypatch: pytest.MonkeyPatch, base: EscortSweep, every: int
) -> None:
    monkeypatch.setattr(escort_sweep_module, "ADD_EVERY", every)
    cases = 0
    for start, last_remove in itertools.product((0, 2, 3), range(-1, N)):
        for add in itertools.product((False, True), repeat=N):
            plan, script = _plan(monkeypatch, base, last_remove, add)
            released = _calibrate(plan, start)
            if released >= 0:
                # the walk that released it checked the remove direction down to it ...
                first = start if released >= start else 0
                assert released <= last_remove
                assert set(range(first, released + 1)) <= set(script.removed)
                # ... and an add bound passed at it or at a smaller sigma (a larger index)
                assert any(add[j] and j >= released for j in script.added)
            monotone = all(add[i] or not add[i + 1] for i in range(N - 1))
            if monotone:
                assert released == _per_entry(last_remove, add, start), (start, last_remove, add)
            cases += 1
    assert cases == 3 * (N + 1) * 2**N


def test_the_first_add_check_falls_at_the_centre_and_settle_confirms_the_release(
    monkeypatch: pytest.MonkeyPatch, base: EscortSweep
) -> None:
    """From a start one entry above the centre (entry 4) with the remove direction passing
    down to it and every add bound passing: one add check, at the centre (the route's)."""
    assert ADD_EVERY == 2
    plan, script = _plan(monkeypatch, base, 4, (True,) * N)
    assert _calibrate(plan, 3) == 4
    assert script.removed == [3, 4, 5] and script.added == [4]
    plan, script = _plan(monkeypatch, base, 5, (True,) * N)  # one more pass: checked at 5
    assert _calibrate(plan, 3) == 5
    assert script.removed == [3, 4, 5, 6] and script.added == [4, 5]


def test_a_failing_add_bound_walks_back_from_the_last_certificate(
    monkeypatch: pytest.MonkeyPatch, base: EscortSweep
) -> None:
    """Checks every third pass: the add direction binds below entry 3: checked at 2 (it
    certifies 0-2) and at 5 (it fails: the walk stops there), then at 4, the entry the walk
    would release (it fails), and from the last certificate down (3 passes): entry 3 is
    released, as the per-entry walk would."""
    monkeypatch.setattr(escort_sweep_module, "ADD_EVERY", 3)
    add = (True, True, True, True, False, False, False)
    plan, script = _plan(monkeypatch, base, N - 1, add)
    assert _calibrate(plan, 0) == 3
    assert script.added == [2, 5, 4, 3]
    assert script.removed == [0, 1, 2, 3, 4, 5]
    assert not math.isnan(plan.x_b)
