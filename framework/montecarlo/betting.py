"""The betting certificate of epsilon: one test per grid point, one failure (docs/math.md §7.2).

Fact 4.2 bounds the mean of ``X = (1 - e^{eps - L})_+`` as if every ``X`` were 0 or 1 (the
Bernoulli worst case). The test here uses the samples themselves. For a level ``delta_u``
and a bet ``lam`` in ``[0, 1/(1 - delta_u))`` independent of the ``m`` verification samples, the
wealth

    W = prod_i (1 + lam (delta_u - X_i))

is a product of non-negative factors; when ``E[X] >= delta_u`` each has expectation ``<= 1``,
so ``Pr[W >= 1/beta] <= beta`` (Markov). Rejecting ``E[X] >= delta_u`` when ``W >= 1/beta`` is
the Chernoff bound of the samples' own distribution (the "testing by betting" of Shafer 2021;
Waudby-Smith & Ramdas 2023): its power follows the actual variance of ``X``, not the
Bernoulli one. The histogram of the verification sample rounds every loss up, which raises
every ``X`` and lowers every factor: the wealth read from it is never above the exact one, so
the test stays valid.

One failure event for a whole grid. ``delta(eps)`` is non-increasing in ``eps``, so the grid
points whose true delta exceeds ``delta_u`` (in some direction) form a prefix of the grid.
:func:`walk` tests the grid from the top down and stops at the first point that is not
accepted in both directions; it releases the last accepted point. A released point that is
bad means the walk accepted the largest bad grid point, in the direction where it is bad: one
test, probability ``<= beta``, whatever the grid's size and the dependence between points
(the argument of Algorithm 5, docs/math.md §7). So the grid can be as fine as the histogram,
with no union bound, and nothing but the bets and the top of the grid needs the pilot.

The bets. For a test that must just pass at the release point, the bet maximising the
z-score ``(m E[ln f] - ln(1/beta)) / sqrt(m Var[ln f])``, ``f = 1 + lam (delta_u - X)``, is
near ``sqrt(2 ln(1/beta) / (m E[X^2]))``. :func:`choose_bets` maximises that z-score over
multiples of it from 1/8 to 8 (and the largest bet) under the pilot's empirical law (one
pseudo-sample at ``X = 1`` keeps it away from bets a single large loss would ruin). Any bet
that depends on the pilot only is valid; the choice only affects how tight the result is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs
import numpy as np

from minsep.framework.errors import ConfigurationError
from minsep.framework.montecarlo.accumulators import LossHistogram
from minsep.framework.validation import check_range

__all__ = [
    "BettingPlan",
    "choose_bets",
    "choose_failure",
    "log_wealth",
    "plan_grid",
    "walk",
]

#: Largest number of grid points; a wider range coarsens the step (by powers of two).
MAX_GRID = 4096
#: Multiples of ``sqrt(2 ln(1/beta) / (m E[X^2]))`` tried as bets by :func:`choose_bets`.
SPREAD = 2.0 ** (np.arange(-12, 13) / 4.0)
#: The largest bet as a fraction of ``1 / (1 - delta_u)`` (every factor stays >= 0.05).
MAX_BET_FRACTION = 0.95
#: Grid points between two bets chosen by :func:`choose_bets` (the bet is piecewise constant).
BET_STRIDE = 8
#: At most this many grid points get a bet of their own (the stride grows beyond).
MAX_ANCHORS = 128
#: Points per block when :func:`walk` evaluates the wealth.
_BLOCK = 256


@attrs.frozen(eq=False)
class BettingPlan:
    """Everything the walk needs besides the verification sample (read from the pilot only).

    Attributes:
        delta_u: the level each grid point's test refutes (``E[X] >= delta_u``).
        failure: ``beta``; the certified delta is ``delta_u + beta (1 - delta_u) <= delta``.
        grid: the epsilons tested, increasing (:func:`plan_grid`).
        bets: per direction, the bet of every grid point.
    """

    delta_u: float
    failure: float
    grid: np.ndarray
    bets: tuple[np.ndarray, ...]

    @property
    def size(self) -> int:
        """Number of grid points."""
        return int(self.grid.size)

    @property
    def certified_delta(self) -> float:
        """``delta_u + beta (1 - delta_u)``: the delta of a released point, failure folded in."""
        return self.delta_u + self.failure * (1.0 - self.delta_u)


def choose_failure(delta: float, samples: int, variance: float) -> tuple[float, float]:
    """``(beta, delta_u)`` with ``delta_u + beta (1 - delta_u) <= delta``, chosen to maximise
    the predicted release level ``delta_u - sqrt(2 ln(1/beta) variance / samples)``.

    ``variance`` is a pilot estimate of ``E[X^2]`` at the answer. Any ``beta`` in ``(0,
    delta)`` is valid; this one only aims at the tightest answer. ``delta_u`` is rounded down.
    """
    check_range("choose_failure", "delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    check_range("choose_failure", "samples", samples, low=1, integer=True)
    check_range("choose_failure", "variance", variance, low=0.0, high=1.0)
    betas = delta * 2.0 ** (-np.arange(4, 161) / 4.0)  # delta/2 down to delta * 2**-40
    levels = (delta - betas) / (1.0 - betas)
    score = levels - np.sqrt(2.0 * np.log(1.0 / betas) * max(variance, 1e-300) / samples)
    beta = float(betas[int(np.argmax(score))])
    delta_u = (delta - beta) / (1.0 - beta) * (1.0 - 1e-12)
    if not delta_u + beta * (1.0 - delta_u) <= delta:  # pragma: no cover - rounding guard
        raise AssertionError("choose_failure: the folded delta exceeds the target")
    return beta, delta_u


def plan_grid(fine: float, top: float, width: float) -> np.ndarray:
    """The grid: ``0, step, ..., >= fine`` with ``step = width * 2**k`` (the smallest ``k``
    giving at most ``MAX_GRID`` points), then steps doubling from ``step`` until ``top``."""
    check_range("plan_grid", "fine", fine, low=0.0)
    check_range("plan_grid", "top", top, low=0.0)
    check_range("plan_grid", "width", width, low=0.0, low_open=True)
    step = width
    while math.ceil(fine / step) + 1 > MAX_GRID:
        step *= 2.0
    points = list(np.arange(math.ceil(fine / step) + 1, dtype=np.float64) * step)
    gap = step
    while points[-1] < top:
        points.append(points[-1] + gap)
        gap *= 2.0
    return np.asarray(points)


def _law(hist: LossHistogram) -> tuple[np.ndarray, np.ndarray, int]:
    """Occupied upper edges, their counts and the overflow of ``hist``."""
    occupied = np.flatnonzero(hist.counts)
    return occupied.astype(np.float64) * hist.spec.width, hist.counts[occupied], hist.overflow


def _hockey(epsilons: np.ndarray, losses: np.ndarray) -> np.ndarray:
    """``X[k, j] = (1 - e^{eps_k - L_j})_+``."""
    return np.asarray(-np.expm1(np.minimum(epsilons[:, None] - losses[None, :], 0.0)))


def choose_bets(
    pilot: LossHistogram, grid: np.ndarray, delta_u: float, failure: float, samples: int
) -> np.ndarray:
    """The bet of every grid point for ``samples`` verification samples (module docstring).

    Chosen every ``BET_STRIDE`` points (at most ``MAX_ANCHORS`` times) under the pilot's
    empirical law plus one pseudo-sample at ``X = 1``, and held constant up to the next chosen
    point.
    """
    check_range("choose_bets", "delta_u", delta_u, low=0.0, high=1.0, low_open=True, high_open=True)
    check_range("choose_bets", "failure", failure, low=0.0, high=1.0, low_open=True, high_open=True)
    check_range("choose_bets", "samples", samples, low=1, integer=True)
    top_bet = MAX_BET_FRACTION / (1.0 - delta_u)
    near = np.sqrt(2.0 * math.log(1.0 / failure) / samples)  # / sqrt(E[X^2]) per point
    losses, counts, overflow = _law(pilot)
    total = float(counts.sum() + overflow + 1)
    target = math.log(1.0 / failure)
    stride = max(BET_STRIDE, math.ceil(grid.size / MAX_ANCHORS))
    anchors = grid[::stride]
    chosen = np.empty(anchors.size)
    for k, eps in enumerate(anchors):
        above = losses > eps  # the rest have X = 0
        x = np.concatenate([_hockey(np.array([eps]), losses[above])[0], [1.0, 0.0]])
        weights = np.concatenate([counts[above], [overflow + 1, counts[~above].sum()]]) / total
        second = float(x * x @ weights)
        ladder = np.minimum(near / math.sqrt(max(second, 1e-300)) * SPREAD, top_bet)
        ladder = np.unique(np.append(ladder, top_bet))
        logs = np.log1p(ladder[:, None] * (delta_u - x[None, :]))  # bets x outcomes
        mean = logs @ weights
        var = np.maximum((logs * logs) @ weights - mean * mean, 1e-300)
        score = (samples * mean - target) / np.sqrt(samples * var)
        chosen[k] = ladder[int(np.argmax(score))]
    return np.repeat(chosen, stride)[: grid.size]


def log_wealth(
    hist: LossHistogram, epsilons: np.ndarray, bets: np.ndarray, delta_u: float
) -> np.ndarray:
    """``ln W`` at each epsilon: ``sum_i ln(1 + lam (delta_u - X_i))`` over the histogram's
    samples read at their bins' upper edges (overflow at ``X = 1``), never above the exact
    wealth of the unrounded samples."""
    if np.any(bets < 0.0) or np.any(bets * (1.0 - delta_u) >= 1.0):
        raise ConfigurationError(
            f"log_wealth.bets = [{bets.min()!r}, {bets.max()!r}] is invalid: must lie in "
            f"[0, 1/(1 - delta_u)) = [0, {1.0 / (1.0 - delta_u)!r})"
        )
    losses, counts, overflow = _law(hist)
    above = losses > epsilons.min(initial=math.inf)  # the rest have X = 0 at every epsilon
    below = float(counts[~above].sum())
    terms = np.log1p(bets[:, None] * (delta_u - _hockey(epsilons, losses[above])))
    wealth = (
        terms @ counts[above].astype(np.float64)
        + below * np.log1p(bets * delta_u)
        + overflow * np.log1p(bets * (delta_u - 1.0))
    )
    return np.asarray(wealth, dtype=np.float64)


def walk(
    hists: Sequence[LossHistogram], plan: BettingPlan
) -> tuple[int | None, tuple[np.ndarray, ...]]:
    """The index of the released grid point (None: even the top failed) and, per direction,
    ``ln W`` at the points tested, top first (module docstring)."""
    target = math.log(1.0 / plan.failure)
    grid = plan.grid
    tested: list[list[np.ndarray]] = [[] for _ in hists]
    stop = plan.size
    while stop > 0:
        start = max(stop - _BLOCK, 0)
        block = [
            log_wealth(h, grid[start:stop], plan.bets[d][start:stop], plan.delta_u)[::-1]
            for d, h in enumerate(hists)
        ]  # top first: block[d][i] belongs to grid index stop - 1 - i
        passed = np.all(np.vstack(block) >= target, axis=0)
        failed = np.flatnonzero(~passed)
        if failed.size:
            first = int(failed[0])
            for d, values in enumerate(block):
                tested[d].append(values[: first + 1])
            index = stop - first  # the point above the first failure
            return (index if index < plan.size else None), _joined(tested)
        for d, values in enumerate(block):
            tested[d].append(values)
        stop = start
    return 0, _joined(tested)


def _joined(parts: list[list[np.ndarray]]) -> tuple[np.ndarray, ...]:
    return tuple(np.concatenate(p) if p else np.zeros(0) for p in parts)
