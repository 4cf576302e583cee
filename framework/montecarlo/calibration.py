"""Algorithm 5: calibrate the noise multiplier over a geometric sweep (docs/math.md §7, App. A).

Given a sweep ``sigma_1 > sigma_2 > ...`` (most private first), ``m`` verification samples
per entry and ``delta_b = base_delta(m, delta)``: walk the sweep and stop at the first entry
whose empirical ``delta_hat(eps)`` exceeds ``delta_b`` in either direction; return the entry
before it. If the first entry fails, raise :class:`CalibrationError` (the caller falls back to
a mechanism with an exact guarantee).

Why one set of draws can serve every sigma (common random numbers). For fixed eps, the true
``delta_sigma(eps)`` is non-increasing in sigma: ``N(Cx, s'^2 I)`` is ``N(Cx, s^2 I)`` plus
independent ``N(0, (s'^2 - s^2) I)`` noise for ``s' > s``, a post-processing applied to both
P and Q. So the entries whose true delta exceeds ``tau delta_b`` ("bad" entries) form a suffix
of the sweep. The walk returns a bad entry only if it accepted the *first* bad entry, an event
of probability at most ``exp(-m KL(delta_b || tau delta_b))`` by Fact 4.2 applied to that one
entry and its failing direction, whatever the dependence between entries. Hence a single
Fact 4.2 event covers the whole sweep: no union bound over the sweep, and the correlation
introduced by reusing the draws is irrelevant. The returned sigma is (eps, delta)-DP with the
failure folded in, exactly as for a single verification (``overall_delta(m, delta_b) <=
delta``).

The walk is the same for every proposal (:func:`calibrate_sweep`): the proposal's
:class:`~minsep.framework.montecarlo.proposals.SweepPlan` says, per entry, the observed delta
and whether it passed (drawing as needed), and the walk stops at the first failure. Plain draws
are sigma-free transcripts: each chunk is drawn once and ``privacy_loss`` is evaluated for every
sigma of the sweep on it (:mod:`.plain`); the escort draws each entry on its own.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from minsep.framework.errors import CalibrationError
from minsep.framework.interfaces import PrivacyLossModel
from minsep.framework.montecarlo.certificates import SweepCalibration
from minsep.framework.montecarlo.plain import PLAIN
from minsep.framework.montecarlo.proposals import (
    Proposal,
    SettlingSweepPlan,
    SigmaPilot,
    SweepPlan,
    SweepQuestion,
)
from minsep.framework.montecarlo.sampling import VERIFY_STREAM, EngineConfig
from minsep.framework.montecarlo.sweeps import FALLBACK, check_sweep, geometric_sweep
from minsep.framework.validation import check_range

__all__ = [
    "FALLBACK",
    "SweepCalibration",
    "calibrate_sweep",
    "geometric_sweep",
    "locate_sigma",
]


def calibrate_sweep(
    model: PrivacyLossModel,
    sweep: Sequence[float],
    epsilon: float,
    delta: float,
    *,
    samples: int,
    seed: int,
    config: EngineConfig | None = None,
    stream: int = VERIFY_STREAM,
    proposal: Proposal | None = None,
    start: int = 0,
) -> SweepCalibration:
    """Algorithm 5 on ``sweep`` (decreasing) with ``samples`` draws per direction and entry,
    on any proposal's draws (plain when None: shared by every entry).

    ``start > 0`` (fixed before any verification draw, e.g. by the pilot): the walk begins at
    entry ``start``; should that entry fail, a second walk begins at the top and stops before
    ``start``. Either walk releases an entry only if the first entry with a large true delta at
    or after its start passed, so the two walks cost a union bound over two claims (the plan's
    base delta, ``SweepQuestion.walks``; docs/math.md §7) and spare the escort the entries
    above ``start``, each of which draws afresh.

    Raises CalibrationError when no walk releases an entry, and ConfigurationError (naming
    ``m``) when ``samples`` is too few for ``delta``. Entries no walk checked report what the
    plan knows of them (plain: their delta on the shared draws; NaN when nothing was drawn).
    """
    began = time.perf_counter()
    values = check_sweep(sweep)
    check_range("calibrate_sweep", "epsilon", epsilon, low=0.0)
    check_range("calibrate_sweep", "delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    check_range("calibrate_sweep", "start", start, low=0, high=len(values) - 1, integer=True)
    walks = 2 if start > 0 else 1
    question = SweepQuestion(values, epsilon, delta, samples, seed, config, stream, walks)
    plan = (PLAIN if proposal is None else proposal).plan_sweep(model, question)
    observed: dict[int, float] = {}
    index = _walk(plan, range(start, len(values)), observed)
    if index < 0 and start > 0:
        index = _walk(plan, range(start), observed)
    deltas = [observed[j] if j in observed else plan.unchecked(j) for j in range(len(values))]
    if index < 0:
        raise CalibrationError(plan.refusal(deltas))
    return SweepCalibration(
        sigma=values[index],
        index=index,
        sweep=values,
        deltas=tuple(deltas),
        epsilon=float(epsilon),
        delta=float(delta),
        base_delta=plan.base_delta,
        failure_probability=plan.failure_probability,
        samples=samples,
        seed=seed,
        seconds=time.perf_counter() - began,
        proposal=plan.info,
        start=start,
    )


def _walk(plan: SweepPlan, entries: range, observed: dict[int, float]) -> int:
    """Check ``entries`` in order until one fails; the last that passed (-1: none), or the
    entry a :class:`~.proposals.SettlingSweepPlan` releases among those that passed."""
    passed: list[int] = []
    for i in entries:
        observed[i], ok = plan.check(i)
        if not ok:
            break
        passed.append(i)
    if isinstance(plan, SettlingSweepPlan):
        return plan.settle(passed, observed)
    return passed[-1] if passed else -1


def locate_sigma(
    model: PrivacyLossModel,
    epsilon: float,
    target: float,
    *,
    samples: int,
    seed: int,
    config: EngineConfig | None = None,
    low: float = 2.0**-4,
    high: float = 2.0**8,
    proposal: Proposal | None = None,
    steps: int | None = None,
) -> float:
    """Pilot estimate (stream 0) of the smallest sigma with ``delta_hat(epsilon) <= target`` on
    the proposal's draws (plain when None: :meth:`~.plain.PlainProposal.locate`). No
    guarantee: it only centres the sweep :func:`calibrate_sweep` verifies on fresh draws.
    ``steps`` refines the search (None: the proposal's default). Raises CalibrationError when
    even ``high`` fails."""
    pilot = SigmaPilot(epsilon, target, samples, seed, config, low, high, steps)
    return (PLAIN if proposal is None else proposal).locate(model, pilot)
