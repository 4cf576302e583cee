"""b-min-sep subsampling: Algorithm 1 (cold start) and Algorithm 2 (warm start), docs/math.md §3.

At each step every example that did not participate in the previous b - 1 steps joins the
batch independently with probability ``p = p0 / (1 - p0 (b - 1))``. One example follows the
availability chain on {0..b-1} (steps still barred) with stationary law
``pi(0) = 1/(1 + (b-1)p)``, ``pi(s) = p/(1 + (b-1)p)``; its participation rate in stationarity is
p0, feasible iff p0 <= 1/b. Warm start draws each example's initial state from pi, so every step
has expected batch size N·p0; cold start starts everyone available. b = 1 is Poisson sampling;
warm start with p0 = 1/b (p = 1) is balls-in-bins with T = b.

The sampler keeps the available examples in a pool and the barred ones in b - 1 release
lists, so a step costs O(batch size), not O(N).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, ClassVar

import attrs
import numpy as np

from minsep.framework.errors import InfeasibleError
from minsep.framework.interfaces import PrivacyLossModel, Strategy
from minsep.framework.parameters import CompareContext, CompareVariant
from minsep.framework.participation import ParticipationChain
from minsep.framework.registries import schemes
from minsep.framework.validation import positive_int
from minsep.framework.validation import rate as rate_validator
from minsep.framework.validation import steps as steps_validator
from minsep.schemes import _accounting as acc
from minsep.schemes._sampling import AvailabilityPool
from minsep.schemes.base import Keep, SchemeBase, as_batch, boolean, dataset_size

if TYPE_CHECKING:
    from minsep.schemes.truncated.reduction import TruncationReduction

# Rates within this relative slack of 1/b are treated as 1/b (p = 1).
_RATE_SLACK = 1e-12


def probability_for_rate(rate: float, min_sep: int) -> float:
    """``p = p0 / (1 - p0 (b - 1))``, the per-step probability giving participation rate p0."""
    denominator = 1.0 - rate * (min_sep - 1)
    if denominator <= 0.0:
        return 1.0
    return min(1.0, rate / denominator)


def stationary_law(probability: float, min_sep: int) -> np.ndarray:
    """The availability chain's stationary law pi over states 0..b-1 (docs/math.md §3)."""
    p, b = probability, min_sep
    law = np.full(b, p / (1.0 + (b - 1) * p))
    law[0] = 1.0 / (1.0 + (b - 1) * p)
    return law


@schemes.register("b_min_sep")
@attrs.frozen
class BMinSep(SchemeBase):
    """b-min-sep subsampling (Dong & Ganesh, Algorithms 1 and 2).

    Attributes:
        n_steps: number of steps n.
        rate: marginal participation rate p0 in (0, 1/b].
        min_sep: b >= 1; an example participates at most once in any b consecutive steps.
        warm_start: start each example from the stationary law (Algorithm 2, default) or with
            everyone available (Algorithm 1).
    """

    label: ClassVar[str | None] = "b-min-sep"
    compare_rank: ClassVar[int] = 30

    n_steps: int = attrs.field(validator=steps_validator())
    rate: float = attrs.field(validator=rate_validator())
    min_sep: int = attrs.field(validator=positive_int())
    warm_start: bool = attrs.field(default=True, validator=boolean)

    def __attrs_post_init__(self) -> None:
        if self.rate * self.min_sep > 1.0 + _RATE_SLACK:
            raise InfeasibleError(
                f"BMinSep.rate = {self.rate!r} is infeasible with min_sep = {self.min_sep}: "
                f"must be <= 1/min_sep = {1.0 / self.min_sep!r} (an example participates at "
                "most once every min_sep steps)"
            )

    @classmethod
    def compare_variants(cls, context: CompareContext) -> list[CompareVariant]:
        """Every feasible min-sep b for each bands value and each extra strategy (those that
        are not banded by the bounds of docs/math.md §2.1), then, as context, unamplified
        BandMF: one participation per epoch (b = floor(1/p0)) accounted without amplification."""
        amplified = super().compare_variants(context)
        amplified += [
            CompareVariant(bands=0, strategy=spec, options={"min_sep": b})
            for spec, seps in context.strategies.items()
            for b in seps
        ]
        unamplified = [
            CompareVariant(
                bands=k,
                options={"min_sep": context.epoch_length},
                label="unamplified BandMF",
                family="unamplified",
                accountant="gaussian",
                rank=90,
            )
            for k in context.bands
        ]
        unamplified += [
            CompareVariant(
                bands=0,
                strategy=spec,
                options={"min_sep": context.epoch_length},
                label="unamplified BandMF",
                family="unamplified",
                accountant="gaussian",
                rank=90,
            )
            for spec in context.strategies
        ]
        return amplified + unamplified

    @classmethod
    def example(cls) -> BMinSep:
        return cls(n_steps=12, rate=0.1, min_sep=3)

    @classmethod
    def invalid_examples(cls) -> list[tuple[dict[str, Any], str]]:
        return [
            ({"n_steps": 0, "rate": 0.1, "min_sep": 2}, "n_steps"),
            ({"n_steps": 10, "rate": 0.0, "min_sep": 2}, "rate"),
            ({"n_steps": 10, "rate": 0.1, "min_sep": 0}, "min_sep"),
            ({"n_steps": 10, "rate": 0.3, "min_sep": 4}, "rate"),
            ({"n_steps": 10, "rate": 0.1, "min_sep": 2, "warm_start": "yes"}, "warm_start"),
        ]

    def prefix_scheme(self, n_steps: int) -> BMinSep:
        """The first ``n_steps`` steps: the same per-step law (it does not depend on n)."""
        return attrs.evolve(self, n_steps=n_steps)

    @property
    def probability(self) -> float:
        """The per-step sampling probability ``p = p0 / (1 - p0 (b - 1))`` (<= 1)."""
        return probability_for_rate(self.rate, self.min_sep)

    @property
    def min_separation(self) -> int:
        return self.min_sep

    def stationary_law(self) -> np.ndarray:
        """pi over the availability states 0..b-1."""
        return stationary_law(self.probability, self.min_sep)

    def participation_probabilities(self) -> np.ndarray:
        """P(a given example participates at step i), i = 1..n, by propagating the chain.

        Warm start: p0 at every step. Cold start: starts at p and settles towards p0.
        """
        b, p = self.min_sep, self.probability
        state = self.stationary_law() if self.warm_start else np.eye(b)[0]
        out = np.empty(self.n_steps)
        for i in range(self.n_steps):
            joins = state[0] * p
            out[i] = joins
            nxt = np.empty(b)
            nxt[:-1] = state[1:]
            nxt[-1] = 0.0
            nxt[0] += state[0] - joins
            nxt[-1] += joins
            state = nxt
        return out

    def expected_batch_sizes(self, population: Any) -> np.ndarray:
        """E|B_i| = N · P(participate at step i) for each step."""
        size = dataset_size(population, type(self).__name__)
        return np.asarray(size * self.participation_probabilities(), dtype=np.float64)

    def generate_batches(
        self, prepared: Any, rng: np.random.Generator, keep: Keep | None
    ) -> Iterator[np.ndarray]:
        """Algorithm 1 / 2; examples sampled before truncation are barred for b - 1 steps."""
        size = int(prepared)
        b, p = self.min_sep, self.probability
        # release[s % b] holds the examples that become available at step s.
        release: list[np.ndarray] = [np.empty(0, dtype=np.int64) for _ in range(b)]
        if self.warm_start and b > 1:
            states = rng.choice(b, size=size, p=self.stationary_law())
            order = np.argsort(states, kind="stable").astype(np.int64)
            parts = np.split(order, np.cumsum(np.bincount(states, minlength=b))[:-1])
            available = parts[0]
            release[1:] = parts[1:]
        else:
            available = np.arange(size, dtype=np.int64)
        pool = AvailabilityPool(available, size)
        for step in range(self.n_steps):
            slot = step % b
            if release[slot].size:
                pool.release(release[slot])
            sample = pool.take(rng, p)
            release[slot] = sample  # available again at step + b
            sample = as_batch(sample, size)
            yield sample if keep is None else keep(sample)

    # -- accounting -------------------------------------------------------------------------

    def _require_bands(self, strategy: Strategy) -> None:
        why = "the recursion of Theorem 5.1 needs disjoint blocks"
        acc.require_bands_within_min_sep(self, strategy, why)

    def loss_model(self, strategy: Strategy) -> PrivacyLossModel:
        """Theorem 5.1's recursion (cold, or the exact warm-start average); bands <= b.

        A strategy that is not banded gets the r-min-sep bounds of App. B.1 instead
        (:class:`~minsep.schemes.b_min_sep.column_bound.ColumnBoundLossModel`, docs/math.md §2.1).
        """
        if not strategy.is_banded:
            return self._column_bound_model(strategy)
        self._require_bands(strategy)
        return acc.chain_loss_model(strategy, self.participation_chain())

    def _column_bound_model(self, strategy: Strategy) -> PrivacyLossModel:
        from minsep.schemes.b_min_sep.column_bound import ColumnBoundLossModel
        from minsep.schemes.b_min_sep.columns import strategy_columns

        model: PrivacyLossModel = ColumnBoundLossModel(
            columns=strategy_columns(strategy, self.n_steps),
            min_sep=self.min_sep,
            probability=self.probability,
            warm_start=self.warm_start,
        )
        return model

    def truncated_loss_model(
        self, strategy: Strategy, dataset_size: int, max_batch_size: int
    ) -> PrivacyLossModel:
        """Appendix D's P/R and Q/R recursions (docs/math.md §6); bands <= b."""
        self._require_bands(strategy)
        chain = self.participation_chain()
        return acc.chain_loss_model(
            strategy, chain, dataset_size=dataset_size, max_batch_size=max_batch_size
        )

    def truncation_reduction(
        self, strategy: Strategy, dataset_size: int, max_batch_size: int
    ) -> TruncationReduction:
        """This scheme's pair standing in for its truncation to B_max (docs/math.md §6.2):
        the overheads from the marginals and the binomial tails of the other examples' counts."""
        from minsep.schemes.truncated.reduction import TruncationReduction, truncation_overheads

        # the App. D pair must exist for this strategy (banded, bands <= b): §6.2 compares it
        # with the untruncated pair of the same C
        self.truncated_loss_model(strategy, dataset_size, max_batch_size)
        overheads = truncation_overheads(
            self.participation_probabilities(),
            dataset_size,
            max_batch_size,
            self.participation_chain().log_no_participation(),
        )
        return TruncationReduction(self, overheads, max_batch_size)

    def participation_chain(self) -> ParticipationChain:
        """The availability chain (b = min_sep, p, cold or warm) for exact RDP accounting."""
        return ParticipationChain(
            n_steps=self.n_steps,
            min_sep=self.min_sep,
            probability=self.probability,
            warm_start=self.warm_start,
        )
