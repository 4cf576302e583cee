"""Samples and candidate ladder of an escort epsilon question sized by a precision.

docs/rdp-escort.md §8 ("precision"). A question asked at relative precision ``r`` may lose a
factor ``delta^r`` of delta between the pilot's estimate and the released candidate
(docs/math.md §7.3). Two things spend it:

- the verification margin: accepting at base ``x_b`` (in units of the support bound ``s``)
  certifies ``delta / s`` only when ``x_b`` sits below it by a margin that shrinks with the
  samples (Fact 4.2 with a union bound over the ``R`` candidates);
- the ladder rung: the candidate ``eps_hat(kappa x_b)`` passes once the empirical mean of its
  ``W / s`` is at most ``x_b``, so ``kappa`` must sit below 1 by the mean's noise.

A fixed ladder (1, 0.8, 0.65, ...) spends a fifth of delta on its second rung whatever the
samples, which at delta = 1e-3 is already four times the budget of r = 0.01. Here half of the
budget goes to the margin (``x_b = delta^(1 + r/2) / s``, which fixes the samples) and the other
half to ``FINE`` rungs evenly spaced in ``ln kappa`` between 1 and ``delta^(r/2)``, followed by
coarse rungs for a pilot that was far off. Both are planning choices fixed by the pilot before
any verification draw: the certificate (Fact 4.2 over the ``R`` declared candidates) holds for
any ladder and any sample count, so this changes only cost and tightness.
"""

from __future__ import annotations

import math

from minsep.framework.montecarlo.bounds import min_samples

__all__ = ["COARSE_TAIL", "MARGIN_SHARE", "precision_ladder", "precision_samples"]

#: Share of the precision's delta budget spent on the verification margin (the rest on rungs).
MARGIN_SHARE = 0.5
#: Rungs below the fine ones, as fractions of the last fine rung (a far-off pilot).
COARSE_TAIL: tuple[float, ...] = (0.5, 0.125, 1.0 / 32)


def precision_ladder(delta: float, precision: float, count: int) -> tuple[float, ...]:
    """``count`` fractions ``kappa`` in (0, 1], decreasing: ``count - len(COARSE_TAIL)`` rungs
    ``delta^(r (1 - MARGIN_SHARE) j / F)``, ``j = 0..F``, then :data:`COARSE_TAIL` times the
    last (all fine rungs when ``count`` leaves no room for the tail)."""
    tail = COARSE_TAIL if count > len(COARSE_TAIL) + 1 else ()
    fine = count - len(tail)
    span = precision * (1.0 - MARGIN_SHARE) * math.log(delta)  # ln of the last fine rung
    steps = max(fine - 1, 1)
    rungs = [math.exp(span * j / steps) for j in range(fine)]
    return tuple(rungs + [rungs[-1] * k for k in tail])


def precision_samples(delta: float, log_support: float, precision: float, count: int) -> int:
    """Verification draws putting the base at ``delta^(1 + r MARGIN_SHARE) / s`` against
    ``delta / s`` with ``count`` candidates (``min_samples``; 0 when ``s <= delta``: the
    order-lam RDP bound alone certifies). ``delta / s`` is capped at 1/2 as the weights'
    normalisation is."""
    log_ratio = math.log(delta) - log_support
    if log_ratio >= 0.0:
        return 0
    normalised = math.exp(min(log_ratio, math.log(0.5)))
    target = normalised * delta ** (precision * MARGIN_SHARE)
    return min_samples(target, normalised, candidates=count)
