"""What a Monte Carlo answer says about how it was obtained: the notes of its result.

The accountant's questions (:mod:`minsep.accountants.monte_carlo`) add these lines to their
results: which proposal ran and why, an ``auto`` run's fall back to plain sampling, and what
Algorithm 5's sweep released (docs/math.md §7, docs/rdp-escort.md §8).
"""

from __future__ import annotations

import math

from minsep.framework.errors import ConfigurationError
from minsep.framework.montecarlo import base_delta
from minsep.framework.montecarlo.calibration import SweepCalibration
from minsep.framework.montecarlo.proposals import ProposalInfo

__all__ = [
    "calibration_notes",
    "curve_note",
    "estimate_index",
    "fallback_note",
    "finite_or_none",
    "plain_after_escort",
    "proposal_notes",
]


def proposal_notes(info: ProposalInfo | None) -> tuple[str, ...]:
    """What the escort did (order, Z, support bound, add direction); nothing for plain."""
    if info is None or info.method == "plain":
        return ()
    add = {
        "exact zero": "the add direction's delta is exactly 0 (epsilon >= ln(1/pi(empty)))",
        "deterministic": (
            "the add direction is certified deterministically by the Chernoff bound of "
            "docs/math.md §10 (§10.2 for balls-in-bins; no add samples drawn"
            + ("" if info.add_delta is None else f"; delta_add <= {info.add_delta:.3g}")
            + ")"
        ),
        "block bound": (
            "the add direction is certified by the sampled block bound of docs/math.md §10.1 "
            "(its zone or entry-min blocks, §10.1.1, whichever its pilot predicts tighter; "
            "block draws only, no add samples of the pair; its failure probability folded in"
            + ("" if info.add_delta is None else f"; delta_add <= {info.add_delta:.3g}")
            + ")"
        ),
    }.get(info.add, "the add direction was verified by plain Monte Carlo")
    return (
        f"escort importance sampling: order lam = {info.order}, ln Z_lam = {info.log_z:.6g}, "
        f"weights W / s verified with support bound s = {info.support:.4g} (Fact 4.2 on W/s; "
        f"the released delta is s times the folded bound); {add}.",
    )


def fallback_note(error: Exception) -> str:
    """The note of an ``auto`` run that chose the escort and fell back to plain sampling."""
    return (
        f"proposal: plain (auto fell back): the escort cannot run at this question ({error}); "
        "plain sampling answered it."
    )


def plain_after_escort(samples: int, delta: float, candidates: int, error: Exception) -> None:
    """Refuse, naming both routes, when the plain fallback cannot certify ``delta`` with
    ``samples`` either (nothing is returned when it can)."""
    try:
        base_delta(samples, delta, candidates=candidates)
    except ConfigurationError as exc:
        raise ConfigurationError(
            f"MonteCarloAccountant.proposal = 'auto' chose the escort (plain sampling cannot "
            f"certify delta = {delta:.3g} with samples = {samples}: {exc}) but the escort "
            f"cannot run here ({error}); raise samples for plain sampling or use another "
            "accountant (rdp, gaussian; --accountant auto tries them in turn)",
            parameter="samples",
        ) from exc


def estimate_index(deltas: tuple[float, ...], delta: float, start: int = 0) -> int:
    """The last sweep index from ``start`` down to which every empirical delta is <= ``delta``
    (``start - 1``: none): Algorithm 5's walk with the target delta in place of the base delta,
    i.e. the sigma the point estimate alone would select (no verification margin, no
    guarantee)."""
    index = start - 1
    for i in range(start, len(deltas)):
        if not deltas[i] <= delta:  # NaN: an entry the walk never verified (escort)
            break
        index = i
    return index


def finite_or_none(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def curve_note(samples: int, failure_probability: float) -> str:
    """What a certified delta curve holds (docs/math.md §7.1)."""
    return (
        f"simultaneous KL upper confidence bounds on {samples} fresh samples per direction; "
        f"failure probability {failure_probability:.3g} over the whole grid, not folded into "
        "delta"
    )


def calibration_notes(
    result: SweepCalibration, sweep: tuple[float, ...], guards: int, estimate: int
) -> list[str]:
    """What Algorithm 5 released: the certificate, a guard entry released instead of the fine
    sweep, a sweep passed everywhere, an estimate at the sweep's smallest entry. ``guards``
    entries lead ``sweep``; ``estimate`` is :func:`estimate_index` of the verified deltas."""
    first = 0 if result.start == 0 or result.index < result.start else result.start
    walked = (
        "every sweep entry"
        if first == 0
        else f"every sweep entry from sigma {sweep[first]:.6g} (where the walk began, fixed by "
        "the pilot)"
    )
    events = "one Fact 4.2 event" if result.start == 0 else "two walks, a Fact 4.2 event each"
    notes = [
        f"certified ({result.epsilon:.6g}, {result.delta:.6g})-DP at sigma "
        f"{result.sigma:.6g} by Algorithm 5: {walked} down to it had delta_hat <= "
        f"base delta {result.base_delta:.6g} in both directions on {result.samples} shared "
        f"fresh samples; the failure probability {result.failure_probability:.3g} ({events}, "
        "privacy being monotone in sigma) is folded into delta."
    ]
    if result.index < guards:
        fine_top = sweep[guards]
        notes.append(
            f"the fine sweep's most private entry {fine_top:.6g} failed verification, so "
            f"the guard entry {result.sigma:.6g} (x{result.sigma / fine_top:.3g}) was "
            "released: certified but conservative; more pilot samples give a tighter sigma."
        )
    if result.at_bottom:
        notes.append(
            "every sweep entry passed: a smaller sigma may also be certifiable (lower "
            "sigma_low or widen the sweep)."
        )
    if estimate == len(sweep) - 1:
        notes.append(
            "the point estimate passes delta at every sweep entry: sigma_estimate is the "
            "sweep's smallest entry, an upper end of what the estimate alone would select."
        )
    return notes
