"""A sampled bound on the add direction for overlapping columns (docs/math.md §10.1).

The deterministic bound of §10 treats a banded C through ``sigma / ||C||_op``, which for 8
MSE-optimal bands costs about a factor 2.3 in noise. For b-min-sep with ``b >= k`` bands there
is a sharper route: cut the n steps into blocks of length L and keep only the participation
patterns whose participations lie in each block's *zone* (its first ``L - b + 1`` steps; the
last block keeps all of its steps). On those patterns the chain restarts available at every
block boundary and the columns of different blocks touch disjoint rows, so

    U(y) >= G(y) = prod_B G_B(y_B)      (pointwise; the G_B independent under Q),

    E_Q[U^-kappa] <= prod_B E_Q[G_B^-kappa],

and each block moment is a bounded mean, ``G_B >= G_B(empty)`` (the weight of never
participating in the block), certified from above by sampling the block alone (empirical
Bernstein and Chernoff-KL, each at half the failure budget). With the Chernoff step of §10,

    delta_add(eps) <= c_kappa e^{-kappa eps} prod_B M_B + beta,

the verification's failure probability ``beta`` folded in as the engine folds its own (§7).
A second variant of the block laws (``"entry-min"``, §10.1.1; :mod:`.block_laws`) keeps every
participation whose column stays inside its block, lets the chain enter each later block in
any state and takes the minimum over those states; it drops about ``(k - 1) p`` per block
instead of ``(b - 1) p``, so blocks as short as b serve. The variant, the order kappa and the
block length L are chosen on pilot draws (a planning choice: no extra failure budget), then
verified on fresh ones.
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Sequence

import attrs
import numpy as np

from minsep.accountants.add_bound import log_c
from minsep.accountants.block_laws import (
    ENTRY_MIN,
    ZONE,
    BlockKind,
    block_factors,
    block_kinds,
    variant_kinds,
)
from minsep.framework.errors import ConfigurationError
from minsep.framework.montecarlo.bounds import kl_upper_confidence
from minsep.framework.participation import ParticipationChain
from minsep.framework.validation import check_range, number, positive_int

__all__ = [
    "ENTRY_MIN",
    "ZONE",
    "BlockAddBound",
    "BlockKind",
    "block_factors",
    "block_kinds",
    "certify_block_bound",
    "empirical_bernstein_upper",
]

#: Spawn-key head of the block draws: disjoint from the engine's streams (0, 1, ...).
BLOCK_STREAM = 1 << 30
#: Share of the target delta spent on the verification's failure probability beta.
FAILURE_SHARE = 1e-3
#: Orders kappa the pilot compares (any kappa > 0 is valid; one is verified).
KAPPAS: tuple[float, ...] = tuple(0.25 * 2.0 ** (i / 2.0) for i in range(17))
#: Block-law variants the pilot compares (docs/math.md §10.1 and §10.1.1; one is verified).
VARIANTS: tuple[str, ...] = (ZONE, ENTRY_MIN)
#: Block lengths the pilot compares, in multiples of b (capped at n).
LENGTH_FACTORS: tuple[int, ...] = (4, 8, 16, 32)
#: Block lengths of the entry-min variant: it drops only k - 1 steps per block, so blocks as
#: short as b pay little and keep the bounded mean's range (1 - p)^-kappa L small.
ENTRY_LENGTH_FACTORS: tuple[int, ...] = (1, 2, 4, 8, 16, 32)
#: Sample-steps of the pilot per block length, and of the verification.
PILOT_WORK = 2**21
VERIFY_WORK = 2**26
#: Verification rows: the fewest (down to 1/64 of ``VERIFY_WORK / L``, at least MIN_ROWS)
#: whose predicted add epsilon is within this relative tolerance of the most rows' prediction.
ROWS_TOLERANCE = 0.01
MIN_ROWS = 4096
#: Relative margin below a caller's sufficient epsilon that the fewer rows must predict.
ENOUGH_MARGIN = 0.05
#: Rows per chunk of the forward pass (bounds memory: rows x (L + b) floats).
CHUNK_ROWS = 2**15
#: Relative inflation of the smallest block factor's inverse power (rounding of the pass).
_RANGE_SLACK = 1e-9


def empirical_bernstein_upper(
    mean: float, variance: float, m: int, log_inverse_failure: float
) -> float:
    """Maurer-Pontil: for m i.i.d. [0, 1] samples with mean and unbiased variance,
    ``E[X] <= mean + sqrt(2 V ln(2/beta) / m) + 7 ln(2/beta) / (3 (m - 1))`` w.p. 1 - beta."""
    check_range("empirical_bernstein_upper", "m", m, low=2, integer=True)
    log2b = math.log(2.0) + log_inverse_failure
    return min(
        mean + math.sqrt(2.0 * max(variance, 0.0) * log2b / m) + 7.0 * log2b / (3.0 * (m - 1)),
        1.0,
    )


def _draw_log_factors(
    kind: BlockKind,
    coefficients: np.ndarray,
    sigma: float,
    probability: float,
    rows: int,
    seed: int,
    key: tuple[int, ...],
) -> np.ndarray:
    """``ln G_B`` of ``rows`` fresh blocks; chunk i from ``SeedSequence(seed, key + (i,))``
    through SFC64, whose normals the compiled kernels draw (:func:`~minsep.schemes.kernels.
    sfc64.fill`: numpy's numbers, about twice as fast as PCG64's on an AVX2 core)."""
    from minsep.schemes.kernels import sfc64

    out = np.empty(rows)
    z = np.empty((min(CHUNK_ROWS, rows), kind.length))
    for i, start in enumerate(range(0, rows, CHUNK_ROWS)):
        size = min(CHUNK_ROWS, rows - start)
        source = np.random.SeedSequence(seed, spawn_key=(*key, i))
        block = z[:size]
        sfc64.fill(np.random.Generator(np.random.SFC64(source)), "standard_normal", block)
        out[start : start + size] = block_factors(kind, coefficients, sigma, probability, block)
    return out


def _upper_log_moment(
    log_g: np.ndarray, kappa: float, log_empty: float, log_inverse_failure: float
) -> float:
    """An upper confidence bound on ``ln E[G^-kappa]`` from draws ``log_g``: X = (G /
    G(empty))^-kappa in [0, 1]; the smaller of the Bernstein and KL bounds, each at failure
    ``beta / 2`` (``log_inverse_failure`` is ``ln(2 / beta)``)."""
    log_range = -kappa * log_empty * (1.0 + _RANGE_SLACK) if log_empty < 0 else 0.0
    x = np.exp(-kappa * log_g - log_range)
    if not np.all(x <= 1.0):
        raise ConfigurationError(
            "block_add_bound: a block factor fell below its empty-pattern weight (rounding "
            f"beyond {_RANGE_SLACK:g}); use the deterministic bound"
        )
    m = x.size
    mean = float(np.mean(x))
    variance = float(np.var(x, ddof=1))
    upper = min(
        empirical_bernstein_upper(mean, variance, m, log_inverse_failure),
        kl_upper_confidence(mean, m, log_inverse_failure),
    )
    return math.log(max(upper, sys.float_info.min)) + log_range


@attrs.frozen
class BlockAddBound:
    """``delta_add(eps) <= c_kappa e^{-kappa eps} e^{log_moment} + failure`` (docs/math.md
    §10.1), at most ``(1 - e^eps pi(empty))_+`` (then without the failure term: exact).

    Attributes:
        kappa: the verified order.
        log_moment: the certified upper bound on ``ln E_Q[U^-kappa]``.
        failure: beta, the verification's failure probability (folded into delta).
        log_no_participation: ``ln pi(empty)`` (inflated downward as §10 does).
        block_length: L.
        samples: verification draws per block law.
        variant: the block laws verified: ``"zone"`` (§10.1, restart available) or
            ``"entry-min"`` (§10.1.1, the minimum over entry states).
    """

    kappa: float = attrs.field(validator=number(low=0.0, low_open=True))
    log_moment: float = attrs.field(validator=number())
    failure: float = attrs.field(validator=number(low=0.0, high=1.0))
    log_no_participation: float = attrs.field(validator=number(high=0.0))
    block_length: int = attrs.field(validator=positive_int())
    samples: int = attrs.field(validator=positive_int())
    variant: str = attrs.field(default=ZONE, validator=attrs.validators.in_((ZONE, ENTRY_MIN)))

    def note(self) -> str:
        """One line: the variant, L, kappa and the verification rows."""
        section = "§10.1.1" if self.variant == ENTRY_MIN else "§10.1"
        return (
            f"block bound ({self.variant}, docs/math.md {section}): L = {self.block_length}, "
            f"kappa = {self.kappa:.4g}, {self.samples:,} rows per block law"
        )

    def delta(self, epsilon: float) -> float:
        """An upper bound on ``delta_add(epsilon)`` (the failure folded in)."""
        floor = max(0.0, -math.expm1(epsilon + self.log_no_participation))
        if floor == 0.0:
            return 0.0
        log_chernoff = log_c(self.kappa) - self.kappa * epsilon + self.log_moment
        return min(math.exp(min(log_chernoff, 0.0)) + self.failure, floor)

    def epsilon(self, delta: float) -> float:
        """An upper bound on the add direction's epsilon at ``delta``: the Chernoff epsilon at
        ``delta - beta`` (none when ``delta <= beta``), capped by ``ln((1 - delta)/pi(empty))``."""
        cap = max(0.0, math.log1p(-delta) - self.log_no_participation)
        if delta <= self.failure:
            return cap
        chernoff = (
            log_c(self.kappa) + self.log_moment - math.log(delta - self.failure)
        ) / self.kappa
        return max(min(chernoff, cap), 0.0)


def _lengths(chain: ParticipationChain, factors: tuple[int, ...]) -> list[int]:
    n, b = chain.n_steps, chain.min_sep
    return sorted({min(f * b, n) for f in factors})  # each >= min(b, n)


@attrs.frozen
class _Pilot:
    """Pilot draws of every block law at one block length and variant, and the score they
    predict."""

    length: int
    variant: str
    draws: tuple[tuple[BlockKind, np.ndarray], ...]
    probability: float
    log_inverse_failure: float

    def score(self, kappa: float, rows: int, delta: float, at_epsilon: float | None) -> float:
        """The add epsilon at ``delta`` (or the ln add delta at ``at_epsilon``) that a
        verification on ``rows`` draws per law would reach if it saw the pilot's moments."""
        log_moment = 0.0
        for kind, log_g in self.draws:
            log_empty = kind.log_empty(self.probability)
            log_range = -kappa * log_empty if log_empty < 0 else 0.0
            x = np.exp(-kappa * log_g - log_range)
            upper = empirical_bernstein_upper(
                float(np.mean(x)), float(np.var(x, ddof=1)), rows, self.log_inverse_failure
            )
            log_moment += kind.count * (math.log(max(upper, sys.float_info.min)) + log_range)
        if at_epsilon is None:
            return (log_c(kappa) + log_moment - math.log(delta)) / kappa
        return log_c(kappa) - kappa * at_epsilon + log_moment


def _plan(
    chain: ParticipationChain,
    coefficients: np.ndarray,
    sigma: float,
    delta: float,
    seed: int,
    log_inverse_failure: float,
    at_epsilon: float | None,
    enough: float | None,
) -> tuple[int, float, int, str]:
    """``(L, kappa, rows, variant)``: the (variant, L, kappa) with the smallest add epsilon at
    ``delta`` (or, given ``at_epsilon``, the smallest add delta there) predicted from pilot
    draws for the most verification rows (``VERIFY_WORK / L``), then the fewest rows (down to
    1/64 of those) whose predicted epsilon is within :data:`ROWS_TOLERANCE` of it (ln delta
    within its log). A planning rule: any (variant, L, kappa, rows) fixed before the
    verification draws is valid, so the choice costs no failure budget. Ties go to the
    ``"zone"`` variant, whose pilot draws (stream 0) are those it had alone, so where it is
    chosen its plan and bound are what they were without the ``"entry-min"`` candidates
    (pilot stream 3)."""
    p = chain.probability
    best: tuple[float, _Pilot | None, float] = (math.inf, None, KAPPAS[0])
    zones = [block_kinds(chain, length) for length in _lengths(chain, LENGTH_FACTORS)]
    k, b = coefficients.size, chain.min_sep
    for variant in VARIANTS:  # the zone variant first: ties go to it
        factors = LENGTH_FACTORS if variant == ZONE else ENTRY_LENGTH_FACTORS
        for index, length in enumerate(_lengths(chain, factors)):
            rows = max(PILOT_WORK // length, 256)
            kinds = variant_kinds(chain, length, variant, coefficients.size)
            if variant == ENTRY_MIN and ZONE in VARIANTS and (kinds in zones or k == b):
                continue  # one block, or k = b: the zone variant's laws
            stream = 0 if variant == ZONE else 3
            pilot = _Pilot(
                length,
                variant,
                tuple(
                    (
                        kind,
                        _draw_log_factors(
                            kind,
                            coefficients,
                            sigma,
                            p,
                            rows,
                            seed,
                            (BLOCK_STREAM, stream, index, j),
                        ),
                    )
                    for j, kind in enumerate(kinds)
                ),
                p,
                log_inverse_failure,
            )
            for kappa in KAPPAS:
                score = pilot.score(kappa, _most_rows(length), delta, at_epsilon)
                if score < best[0]:
                    best = (score, pilot, kappa)
    score, chosen, kappa = best
    assert chosen is not None
    most = _most_rows(chosen.length)
    slack = abs(score) * ROWS_TOLERANCE if at_epsilon is None else math.log1p(ROWS_TOLERANCE)
    target = score + slack
    if enough is not None:  # a bound at or below ``enough`` (with a margin) serves the caller
        margin = abs(enough) * ENOUGH_MARGIN if at_epsilon is None else math.log(2.0)
        target = max(target, enough - margin)
    for fraction in (64, 16, 4):
        rows = max(most // fraction, MIN_ROWS)
        if chosen.score(kappa, rows, delta, at_epsilon) <= target:
            return chosen.length, kappa, rows, chosen.variant
    return chosen.length, kappa, most, chosen.variant


def _most_rows(length: int) -> int:
    return max(VERIFY_WORK // length, MIN_ROWS)


def certify_block_bound(
    chain: ParticipationChain,
    coefficients: Sequence[float] | np.ndarray,
    sigma: float,
    delta: float,
    seed: int = 0,
    at_epsilon: float | None = None,
    enough: float | None = None,
) -> BlockAddBound:
    """The sampled add-direction bound of docs/math.md §10.1 for a b-min-sep ``chain`` (Poisson
    as b = 1) under banded Toeplitz ``coefficients`` with ``k <= b`` bands, at noise ``sigma``,
    aimed at ``delta`` (its failure budget is ``FAILURE_SHARE * delta``): (L, kappa) minimise
    the add epsilon at ``delta``, or with ``at_epsilon`` the add delta there (a delta question,
    ``delta`` then being the size of the delta it expects). ``enough``: the add epsilon (or,
    with ``at_epsilon``, the ln add delta) that already serves the caller; the verification
    then uses the fewest rows predicted to reach it (a cheaper, looser bound).

    Deterministic given its arguments: the pilot (L, kappa) and the verification draws come
    from ``seed``'s block stream, never shared with the engine's.
    """
    return _certify(
        chain,
        tuple(float(c) for c in np.asarray(coefficients, dtype=np.float64)),
        float(sigma),
        float(delta),
        int(seed),
        None if at_epsilon is None else float(at_epsilon),
        None if enough is None else float(enough),
    )


@functools.lru_cache(maxsize=64)
def _certify(
    chain: ParticipationChain,
    coefficients: tuple[float, ...],
    sigma: float,
    delta: float,
    seed: int,
    at_epsilon: float | None,
    enough: float | None,
) -> BlockAddBound:
    owner = "certify_block_bound"
    check_range(owner, "sigma", sigma, low=0.0, low_open=True)
    check_range(owner, "delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    c = np.asarray(coefficients, dtype=np.float64)
    if c.size > chain.min_sep:
        raise ConfigurationError(
            f"{owner}.coefficients has {c.size} bands, which is invalid: the block bound needs "
            f"bands <= min_sep = {chain.min_sep} (disjoint columns of one pattern)"
        )
    p = chain.probability
    if p >= 1.0:
        raise ConfigurationError(
            f"{owner}.chain.probability = {p!r} is invalid: the block bound needs p < 1 "
            "(with p = 1 the empty pattern has weight 0 and the block moments are unbounded)"
        )
    failure = FAILURE_SHARE * delta
    # at most three block laws, each with two bounds, in at most two verifications (the fewer
    # rows, then all of them where the first misses ``enough``): a union bound over twelve
    log_inverse_failure = math.log(12.0 / failure)
    length, kappa, rows, variant = _plan(
        chain, c, sigma, delta, seed, log_inverse_failure, at_epsilon, enough
    )

    def verified(rows: int, stage: int) -> BlockAddBound:
        log_moment = 0.0
        for j, kind in enumerate(variant_kinds(chain, length, variant, c.size)):
            log_g = _draw_log_factors(kind, c, sigma, p, rows, seed, (BLOCK_STREAM, stage, j))
            log_moment += kind.count * _upper_log_moment(
                log_g, kappa, kind.log_empty(p), log_inverse_failure
            )
        return BlockAddBound(
            kappa=kappa,
            log_moment=log_moment,
            failure=failure,
            log_no_participation=max(
                min(chain.log_no_participation(), 0.0) * (1.0 + 1e-10), -sys.float_info.max
            ),
            block_length=length,
            samples=rows,
            variant=variant,
        )

    first = verified(rows, 1)
    most = _most_rows(length)
    if enough is None or rows >= most:
        return first
    reached = first.epsilon(delta) if at_epsilon is None else math.log(first.delta(at_epsilon))
    if reached <= enough:
        return first
    second = verified(most, 2)  # fresh draws on every row; the better of the two is kept
    if at_epsilon is None:
        return min(first, second, key=lambda bound: bound.epsilon(delta))
    return min(first, second, key=lambda bound: bound.delta(at_epsilon))
