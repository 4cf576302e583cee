"""Fact 4.2 and the guarantees of Monte Carlo verification (docs/math.md §7, paper App. A).

Samples ``X = (1 - e^{eps - L})_+`` lie in [0, 1]. For a mean of ``m`` i.i.d. [0, 1]-valued
samples with expectation ``mu``, Chernoff–Hoeffding in KL form gives, for ``a < mu``,

    Pr[mean <= a] <= exp(-m KL(a || mu)),                     (Fact 4.2, Chua et al. 2024)

with ``KL`` the Bernoulli divergence (Bernoulli variables are the extremal case). Hence "verify
at base delta ``delta_b`` with ``m`` samples" (accept iff the sample mean is <= ``delta_b``)
certifies, with the verifier's failure folded into delta (EVR, Wang et al. 2023)::

    delta_overall(m, delta_b) = min_{tau in [1, 1/delta_b]} tau delta_b
                                + R exp(-m KL(delta_b || tau delta_b)) (1 - tau delta_b).

``R`` (``candidates``) is 1 for one claim (docs/math.md §7); the first accepted of R claims fixed
before the verification samples are drawn costs a union bound, i.e. the factor ``R``.

Any ``tau`` gives a valid bound, so an imprecise minimisation can only over-report delta. Every
function here errs on the conservative side: :func:`base_delta` returns a value whose
``overall_delta`` is re-checked to be ``<= delta``.
"""

from __future__ import annotations

import functools
import math
import sys

import numpy as np

from minsep.framework.errors import ConfigurationError
from minsep.framework.validation import check_range

__all__ = [
    "base_delta",
    "check_feasible_delta",
    "fact42_bound",
    "kl_bernoulli",
    "kl_upper_confidence",
    "min_samples",
    "overall_delta",
    "verification_failure",
]

_GRID = 257  # log-spaced tau grid before the local refinement
#: The most verification samples :func:`min_samples` considers (2^62).
MAX_SAMPLES = 2**62
#: The smallest base delta the bounds evaluate (the smallest normal double; tau = 1/delta_b
#: must stay finite).
MIN_BASE_DELTA = sys.float_info.min


def check_feasible_delta(owner: str, delta: float) -> None:
    """Refuse a delta no feasible Monte Carlo run can certify, before any work.

    Any verification certifying ``delta`` needs ``m >= ln(1/delta) / delta`` samples (with
    ``q = tau delta_b <= delta``: ``KL(delta_b || q) <= -ln(1 - q)``, so the failure term is at
    least ``(1 - q)^(m+1)``); below about delta = 8e-18 that exceeds 2^62.
    """
    check_range(owner, "delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    need = math.log(1.0 / delta) / delta
    if need > MAX_SAMPLES:
        raise ConfigurationError(
            f"{owner}.delta = {delta!r} is invalid: a Monte Carlo certificate of it needs at "
            f"least ln(1/delta)/delta = {need:.3g} verification samples, more than 2^62 = "
            f"{MAX_SAMPLES:.3g} (no feasible run); use a larger delta or an exact accountant"
        )


def kl_bernoulli(a: float, b: float) -> float:
    """``KL(Bernoulli(a) || Bernoulli(b))`` in nats, accurate for tiny ``a`` and ``b``.

    ``a ln(a/b) + (1-a) ln((1-a)/(1-b))`` with ``0 ln 0 = 0``; ``+inf`` when ``b`` is 0 or 1
    and ``a`` differs.
    """
    from scipy import special  # lazy: scipy.special costs ~0.15 s to import

    if not (0.0 <= a <= 1.0 and 0.0 <= b <= 1.0):
        raise ConfigurationError(f"kl_bernoulli(a={a!r}, b={b!r}) is invalid: need a, b in [0, 1]")
    if a == b:
        return 0.0
    if (b == 0.0 and a > 0.0) or (b == 1.0 and a < 1.0):
        return math.inf
    first = float(special.xlogy(a, a) - special.xlogy(a, b))
    second = 0.0 if a == 1.0 else (1.0 - a) * (math.log1p(-a) - math.log1p(-b))
    return max(first + second, 0.0)


def fact42_bound(m: int, tau: float, delta_b: float) -> float:
    """``exp(-m KL(delta_b || tau delta_b))``: bound on Pr[mean of m samples <= delta_b] when
    ``E[X] >= tau delta_b`` (Fact 4.2). Oracles in docs/math.md §7."""
    check_range("fact42_bound", "m", m, low=1, integer=True)
    check_range("fact42_bound", "delta_b", delta_b, low=MIN_BASE_DELTA, high=1.0)
    check_range("fact42_bound", "tau", tau, low=1.0, high=1.0 / delta_b)
    return math.exp(-m * kl_bernoulli(delta_b, min(tau * delta_b, 1.0)))


def _objective(u: float, m: int, delta_b: float, candidates: int) -> float:
    """``tau delta_b + R e^{-m KL}(1 - tau delta_b)`` at ``tau = e^u``."""
    q = min(math.exp(u + math.log(delta_b)), 1.0)  # e^u alone overflows for delta_b < 5e-309
    kl = kl_bernoulli(delta_b, q)
    return q + min(candidates * math.exp(-m * kl), 1.0) * (1.0 - q)


def _best_tau(m: int, delta_b: float, candidates: int) -> tuple[float, float]:
    """``(tau, objective)`` minimising the overall-delta objective over ``[1, 1/delta_b]``."""
    top = -math.log(delta_b)
    if top <= 0.0:
        return 1.0, 1.0
    grid = np.linspace(0.0, top, _GRID)
    values = [_objective(float(u), m, delta_b, candidates) for u in grid]
    i = int(np.argmin(values))
    lo, hi = float(grid[max(i - 1, 0)]), float(grid[min(i + 1, _GRID - 1)])
    best_u, best = float(grid[i]), values[i]
    if hi > lo:
        from scipy import optimize  # lazy: scipy.optimize costs ~0.3 s to import

        res = optimize.minimize_scalar(
            _objective,
            bounds=(lo, hi),
            args=(m, delta_b, candidates),
            method="bounded",
            options={"xatol": 1e-12 * max(1.0, top)},
        )
        if res.success and float(res.fun) < best:
            best_u, best = float(res.x), float(res.fun)
    return math.exp(best_u), best


def overall_delta(m: int, delta_b: float, *, candidates: int = 1) -> float:
    """The delta certified by accepting at base ``delta_b`` with ``m`` samples (docs/math.md §7).

    ``min_tau tau delta_b + R e^{-m KL(delta_b || tau delta_b)} (1 - tau delta_b)`` with ``R =
    candidates``. The minimisation (grid plus bounded Brent) can only err upward: each
    evaluated ``tau`` yields a valid bound. Oracles: ``overall_delta(10**6, 1e-5) ~ 3.77978e-5``,
    ``overall_delta(10**7, 1e-6) ~ 4.09237e-6``.
    """
    check_range("overall_delta", "m", m, low=1, integer=True)
    check_range("overall_delta", "delta_b", delta_b, low=MIN_BASE_DELTA, high=1.0)
    check_range("overall_delta", "candidates", candidates, low=1, integer=True)
    return _best_tau(m, delta_b, candidates)[1]


def verification_failure(m: int, delta_b: float, *, candidates: int = 1) -> float:
    """``R exp(-m KL(delta_b || tau* delta_b))`` at the ``tau*`` of :func:`overall_delta`.

    The probability that a verification accepts a candidate whose true delta exceeds
    ``tau* delta_b`` (reported as ``failure_probability``; it is already inside
    ``overall_delta``).
    """
    check_range("verification_failure", "m", m, low=1, integer=True)
    check_range("verification_failure", "delta_b", delta_b, low=MIN_BASE_DELTA, high=1.0)
    tau, _ = _best_tau(m, delta_b, candidates)
    q = min(tau * delta_b, 1.0)
    return min(candidates * math.exp(-m * kl_bernoulli(delta_b, q)), 1.0)


def min_samples(delta_b: float, delta: float, *, candidates: int = 1) -> int:
    """The smallest ``m`` with ``overall_delta(m, delta_b) <= delta`` (raises if none exists).

    ``overall_delta`` is non-increasing in ``m`` (a larger ``m`` shrinks every term), so the
    answer is found by doubling then bisection on integers. ``delta_b < delta`` is necessary.
    Memoised per process (a question's route, plan and run ask for the same counts; each
    search evaluates ``overall_delta`` about sixty times).
    """
    return _min_samples(delta_b, delta, candidates)


@functools.lru_cache(maxsize=256)
def _min_samples(delta_b: float, delta: float, candidates: int) -> int:
    """:func:`min_samples` without the memo (exceptions are not memoised)."""
    check_feasible_delta("min_samples", delta)
    check_range("min_samples", "delta_b", delta_b, low=MIN_BASE_DELTA, high=delta)
    if delta_b >= delta:
        raise ConfigurationError(
            f"min_samples.delta_b = {delta_b!r} is invalid: must be < delta = {delta!r}"
        )
    hi = 1
    while overall_delta(hi, delta_b, candidates=candidates) > delta:
        hi *= 2
        if hi > MAX_SAMPLES:
            raise ConfigurationError(
                f"min_samples.delta = {delta!r} is invalid: certifying it (at base delta "
                f"{delta_b!r}) needs more than 2^62 = {MAX_SAMPLES:.3g} verification samples "
                "(at least ln(1/delta)/delta), beyond any feasible Monte Carlo run: use a larger "
                "delta, a base delta nearer delta, or an exact accountant"
            )
    lo = hi // 2  # overall_delta(lo) > delta (or lo == 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if overall_delta(mid, delta_b, candidates=candidates) <= delta:
            hi = mid
        else:
            lo = mid
    return hi


def base_delta(m: int, delta: float, *, candidates: int = 1) -> float:
    """The largest base ``delta_b`` with ``overall_delta(m, delta_b) <= delta`` (inverse).

    Found by bisection on ``log delta_b`` (``overall_delta`` increases with ``delta_b``); the
    returned value is the lower end of the final bracket and is re-checked, so
    ``overall_delta(m, base_delta(m, delta)) <= delta`` always holds. Raises ConfigurationError
    naming ``m`` when even ``delta_b -> 0`` cannot reach ``delta`` (too few samples).
    """
    check_range("base_delta", "m", m, low=1, integer=True)
    check_feasible_delta("base_delta", delta)
    check_range("base_delta", "candidates", candidates, low=1, integer=True)
    lo = delta * 1e-9
    if overall_delta(m, lo, candidates=candidates) > delta:
        try:
            need = min_samples(delta / 4.0, delta, candidates=candidates)
        except ConfigurationError:
            raise ConfigurationError(
                f"base_delta.m = {m!r} is invalid: too few verification samples (the Monte "
                f"Carlo accountant's samples, --samples) to certify delta = {delta!r}, and even "
                f"2^62 = {MAX_SAMPLES:.3g} samples would not (at delta_b = delta/4): use a "
                "larger delta or an exact accountant",
                parameter="samples",
            ) from None
        raise ConfigurationError(
            f"base_delta.m = {m!r} is invalid: too few verification samples (the Monte Carlo "
            f"accountant's samples, --samples) to certify delta = {delta!r}; need --samples >= "
            f"{need} (verification at delta_b = delta/4), and more for a tight bound",
            parameter="samples",
        )
    hi = delta
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        if overall_delta(m, mid, candidates=candidates) <= delta:
            lo = mid
        else:
            hi = mid
        if hi / lo - 1.0 < 1e-10:
            break
    return lo


def kl_upper_confidence(mean: float, m: int, log_inverse_failure: float) -> float:
    """The largest ``q >= mean`` with ``m KL(mean || q) <= log(1/beta)``.

    For the mean of ``m`` i.i.d. [0, 1]-valued samples, ``Pr[E[X] > q] <= beta`` (Chernoff–
    Hoeffding in KL form, as in Fact 4.2). Pass ``log_inverse_failure = ln(1/beta)``. Monotone
    non-decreasing in ``mean``, so an over-estimated mean gives a still-valid, looser bound.
    """
    check_range("kl_upper_confidence", "mean", mean, low=0.0, high=1.0)
    check_range("kl_upper_confidence", "m", m, low=1, integer=True)
    check_range("kl_upper_confidence", "log_inverse_failure", log_inverse_failure, low=0.0)
    if mean >= 1.0:
        return 1.0
    budget = log_inverse_failure / m
    if kl_bernoulli(mean, 1.0) <= budget:  # pragma: no cover - KL(mean||1) is inf for mean < 1
        return 1.0

    def gap(q: float) -> float:
        return kl_bernoulli(mean, q) - budget

    hi = 1.0 - 1e-300
    if gap(hi) <= 0.0:
        return 1.0
    from scipy import optimize  # lazy: scipy.optimize costs ~0.3 s to import

    root = optimize.brentq(gap, mean, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps)
    # brentq's root lies within its tolerance of the true one: step up to stay conservative.
    return min(float(root) * (1.0 + 1e-12) + 1e-300, 1.0)
