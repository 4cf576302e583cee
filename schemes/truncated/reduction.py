"""Rare truncation through the untruncated pair (docs/math.md §6.2).

Given the public counts r, the App. D pair of truncated b-min-sep differs from the untruncated
pair only at the truncating steps T = {i : r_i >= B_max}. Averaged over r (whose law is the
same under both datasets):

    delta_remove(eps) <= delta_untruncated,remove(eps) + min(phi^2, 1 + e^eps) S,
    delta_add(eps)    <= delta_untruncated,add(eps) + (1 + e^eps) S  (S at eps >= ln 1/pi(empty)),

S = sum_i pi_i tau_i, with pi_i the sensitive example's marginal participation probability at
step i, tau_i =
Pr[Binomial(|D| - 1, pi_i) >= B_max] (every other example has the same marginal, independently)
and phi^2 = (3 + sqrt 5) / 2. So certifying the untruncated pair at ``delta - o(eps)`` certifies
the truncated run at ``delta``.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np

from minsep.framework.errors import ConfigurationError
from minsep.framework.interfaces import SamplingScheme
from minsep.framework.validation import number, positive_int

__all__ = [
    "GOLDEN_SQUARED",
    "MARGINAL_INFLATION",
    "SUM_INFLATION",
    "TruncationOverheads",
    "TruncationReduction",
    "truncation_overheads",
]

#: phi^2 = (3 + sqrt 5) / 2: the largest min(1, g(pi)) / pi, g(pi) = pi (2 - pi) / (1 - pi).
GOLDEN_SQUARED = (3.0 + math.sqrt(5.0)) / 2.0
#: Relative inflation of the marginals pi_i (rounding of the chain's propagation).
MARGINAL_INFLATION = 1e-9
#: Relative inflation of the sums (rounding of scipy's binomial tail and of the sum).
SUM_INFLATION = 1e-6


@attrs.frozen
class TruncationOverheads:
    """The additive constants of docs/math.md §6.2 for one truncated scheme.

    Attributes:
        participation: ``S = sum_i pi_i tau_i`` (inflated): bounds E_r[pi_E], the chance that
            the example is sampled at a truncating step.
        epsilon_floor: ``ln(1 / pi(empty))`` of the example's chain (inflated upward): at and
            above it the add direction's overhead is ``S`` itself.
        expected_truncations: ``E|T| = sum_i tau_i``, the expected number of truncating steps.
    """

    participation: float = attrs.field(validator=number(low=0.0, high=1.0))
    epsilon_floor: float = attrs.field(validator=number(low=0.0, infinite=True))
    expected_truncations: float = attrs.field(validator=number(low=0.0))

    def remove_at(self, epsilon: float) -> float:
        """``min(phi^2, 1 + e^eps) S``: delta_remove(eps) minus the untruncated pair's."""
        return min(GOLDEN_SQUARED, 1.0 + math.exp(min(epsilon, 700.0))) * self.participation

    def add_at(self, epsilon: float) -> float:
        """``S`` at ``eps >= epsilon_floor``, else ``(1 + e^eps) S``: delta_add(eps) minus the
        untruncated pair's."""
        if epsilon >= self.epsilon_floor:
            return self.participation
        return (1.0 + math.exp(min(epsilon, 700.0))) * self.participation

    def at(self, epsilon: float) -> float:
        """``o(eps)``: the larger overhead of the two directions at ``eps`` (at most 1)."""
        return min(max(self.remove_at(epsilon), self.add_at(epsilon)), 1.0)

    def epsilon_budget(self, delta: float, share: float) -> float:
        """The budget ``B = max(phi^2 S, share delta)`` an epsilon question fixes before its
        draws (the untruncated pair is then certified at ``delta - B``)."""
        return max(GOLDEN_SQUARED * self.participation, share * delta)

    def covers(self, epsilon: float, budget: float) -> bool:
        """Whether ``o(eps) <= budget``."""
        return self.at(epsilon) <= budget

    def why_not(self, overhead: float, delta: float, share: float) -> str | None:
        """None when ``overhead`` is at most ``share`` of ``delta``, else why not."""
        if overhead > share * delta:
            return (
                f"truncation is not rare enough: its overhead {overhead:.4g} (docs/math.md "
                f"§6.2; E|T| = {self.expected_truncations:.4g} truncating steps) exceeds "
                f"{share:g} x delta = {share * delta:.4g}"
            )
        return None

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


def truncation_overheads(
    marginals: np.ndarray, dataset_size: int, max_batch_size: int, log_no_participation: float
) -> TruncationOverheads:
    """The constants of docs/math.md §6.2 from the marginals ``pi_i`` of the example's chain.

    ``tau_i = Pr[Binomial(|D| - 1, pi_i) >= B_max]`` (scipy's survival function at B_max - 1),
    the marginals inflated by :data:`MARGINAL_INFLATION` (tau increases with pi) and the sums
    by :data:`SUM_INFLATION`.
    """
    owner = "truncation_overheads"
    pi = np.asarray(marginals, dtype=np.float64)
    if pi.ndim != 1 or pi.size == 0 or not np.all((pi >= 0) & (pi <= 1)):
        raise ConfigurationError(
            f"{owner}.marginals is invalid: must be a non-empty 1-D array of probabilities"
        )
    if dataset_size < 1 or max_batch_size < 1:
        raise ConfigurationError(
            f"{owner}: dataset_size = {dataset_size}, max_batch_size = {max_batch_size} are "
            "invalid: both must be integers >= 1"
        )
    from scipy import stats  # lazily: scipy.stats is slow to import

    inflated = np.minimum(pi * (1.0 + MARGINAL_INFLATION), 1.0)
    tails = stats.binom.sf(max_batch_size - 1, dataset_size - 1, inflated)
    tails = np.clip(np.nan_to_num(tails, nan=1.0), 0.0, 1.0)
    total = min(math.fsum((inflated * tails).tolist()) * (1.0 + SUM_INFLATION), 1.0)
    floor = max(-log_no_participation * (1.0 + 1e-10), 0.0)  # inf: always participates
    return TruncationOverheads(
        participation=total, epsilon_floor=floor, expected_truncations=math.fsum(tails.tolist())
    )


@attrs.frozen
class TruncationReduction:
    """A truncated scheme seen through its untruncated base (docs/math.md §6.2).

    Attributes:
        base: the untruncated scheme whose pair is certified instead.
        overheads: the constants of §6.2 for this truncation.
    """

    base: SamplingScheme
    overheads: TruncationOverheads
    max_batch_size: int = attrs.field(validator=positive_int())
