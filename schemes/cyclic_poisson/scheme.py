"""Cyclic Poisson subsampling (Choquette-Choo et al. 2023, Alg. 2 / Thm. 4; docs/math.md §4).

The dataset is split into b groups once; step i Poisson-samples group ``i mod b`` at rate
``q = b * p0``. Each example can participate only every b steps, so a b-banded strategy
(bands <= b) sees disjoint blocks and the run is the ``ceil(n/b)``-fold composition of the
Poisson(q)-subsampled Gaussian (column norm <= ||c|| = 1), exact by PLD.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, ClassVar

import attrs
import numpy as np

from minsep.framework.errors import InfeasibleError, NotAccountableError
from minsep.framework.interfaces import PrivacyLossModel, Strategy
from minsep.framework.parameters import CompareContext, CompareVariant
from minsep.framework.phase_mixture import PhaseMixture
from minsep.framework.registries import schemes
from minsep.framework.validation import one_of, positive_int
from minsep.framework.validation import rate as rate_validator
from minsep.framework.validation import steps as steps_validator
from minsep.schemes import _accounting as acc
from minsep.schemes._sampling import poisson_subset
from minsep.schemes.base import Keep, SchemeBase, as_batch

if TYPE_CHECKING:
    from dp_accounting.dp_event import DpEvent

#: Group assignments: ``"equal"`` splits a random permutation into b groups whose sizes differ
#: by at most one; ``"random"`` puts every example in an independent uniform group.
PARTITIONS = ("equal", "random")

# Rates within this relative slack of 1/b are treated as 1/b (q = 1).
_RATE_SLACK = 1e-12


@schemes.register("cyclic_poisson")
@attrs.frozen
class CyclicPoisson(SchemeBase):
    """Cyclic Poisson: b fixed groups, group ``i mod b`` Poisson-sampled at q = b·p0 at step i.

    Attributes:
        n_steps: number of steps n.
        rate: marginal participation rate p0; feasible iff p0 <= 1/b.
        min_sep: the number of groups b (= the guaranteed separation between participations).
        partition: ``"equal"`` (random split into near-equal groups) or ``"random"``
            (independent uniform group per example).
    """

    label: ClassVar[str | None] = "cyclic Poisson"
    compare_rank: ClassVar[int] = 10

    n_steps: int = attrs.field(validator=steps_validator())
    rate: float = attrs.field(validator=rate_validator())
    min_sep: int = attrs.field(validator=positive_int())
    partition: str = attrs.field(default="equal", validator=one_of(*PARTITIONS))

    @classmethod
    def compare_variants(cls, context: CompareContext) -> list[CompareVariant]:
        """b = k groups for k bands (one band is Poisson itself: the DP-SGD row), accounted by
        the exact fixed-partition PLD; then the same with a uniformly random phase (independent
        groups, ``partition = "random"``) accounted by Monte Carlo, the fair baseline of
        paper §3 / §4.1 (docs/math.md §4.1). Its rows take the cheaper route per row, plain or
        escort draws (its loss model has an escort law, docs/rdp-escort.md §10.6)."""
        grid = [k for k in context.bands if k > 1]
        fixed = [CompareVariant(bands=k, options={"min_sep": k}) for k in grid]
        random_phase = [
            CompareVariant(
                bands=k,
                options={"min_sep": k, "partition": "random"},
                label="cyclic Poisson, random phase",
                family="cyclic_poisson_random_phase",
                accountant="monte_carlo",
                rank=15,
            )
            for k in grid
        ]
        return fixed + random_phase

    def __attrs_post_init__(self) -> None:
        if self.rate * self.min_sep > 1.0 + _RATE_SLACK:
            raise InfeasibleError(
                f"CyclicPoisson.rate = {self.rate!r} is infeasible with min_sep = "
                f"{self.min_sep}: must be <= 1/min_sep = {1.0 / self.min_sep!r} (the group "
                "rate q = min_sep * rate must be <= 1)"
            )

    @classmethod
    def example(cls) -> CyclicPoisson:
        return cls(n_steps=10, rate=0.1, min_sep=3)

    @classmethod
    def invalid_examples(cls) -> list[tuple[dict[str, Any], str]]:
        return [
            ({"n_steps": 0, "rate": 0.1, "min_sep": 2}, "n_steps"),
            ({"n_steps": 10, "rate": -0.1, "min_sep": 2}, "rate"),
            ({"n_steps": 10, "rate": 0.1, "min_sep": 0}, "min_sep"),
            ({"n_steps": 10, "rate": 0.6, "min_sep": 2}, "rate"),
            ({"n_steps": 10, "rate": 0.1, "min_sep": 2, "partition": "fair"}, "partition"),
        ]

    @property
    def group_rate(self) -> float:
        """The per-step sampling probability q = b·p0 within the active group."""
        return min(1.0, self.min_sep * self.rate)

    @property
    def min_separation(self) -> int:
        return self.min_sep

    def groups(self, size: int, rng: np.random.Generator) -> list[np.ndarray]:
        """Draw the partition of ``range(size)`` into b groups (sorted int64 arrays)."""
        b = self.min_sep
        if self.partition == "equal":
            order = rng.permutation(size).astype(np.int64)
            return [np.sort(order[g::b]) for g in range(b)]
        labels = rng.integers(b, size=size)
        order = np.argsort(labels, kind="stable").astype(np.int64)
        bounds = np.cumsum(np.bincount(labels, minlength=b))[:-1]
        return list(np.split(order, bounds))

    def generate_batches(
        self, prepared: Any, rng: np.random.Generator, keep: Keep | None
    ) -> Iterator[np.ndarray]:
        """Draw the groups, then Poisson(q)-sample group ``i mod b`` at step i."""
        groups = self.groups(prepared, rng)
        for step in range(self.n_steps):
            group = groups[step % self.min_sep]
            sample = as_batch(poisson_subset(rng, group, self.group_rate), prepared)
            yield sample if keep is None else keep(sample)

    # -- accounting -------------------------------------------------------------------------

    def _require_bands(self, strategy: Strategy) -> None:
        why = "each example's blocks must not overlap (Choquette-Choo et al. 2023, Thm. 4)"
        acc.require_bands_within_min_sep(self, strategy, why)

    @property
    def compositions(self) -> int:
        """How many steps one group is sampled at most: ``ceil(n / b)``."""
        return math.ceil(self.n_steps / self.min_sep)

    def dp_event(self, strategy: Strategy, sigma: float) -> DpEvent:
        """``ceil(n/b)``-fold composition of the Poisson(q)-subsampled Gaussian (docs/math.md
        §4): every column of the worst group taken whole, as the paper accounts it. When the
        last column is cut at step n (:meth:`last_column_norm` < 1) this dominates the exact
        event, and :meth:`dp_event_is_exact` says so."""
        from dp_accounting import dp_event as events

        self._require_bands(strategy)
        sigma = acc.require_sigma(sigma, type(self).__name__)
        return events.SelfComposedDpEvent(
            events.PoissonSampledDpEvent(self.group_rate, events.GaussianDpEvent(sigma)),
            self.compositions,
        )

    def last_column_norm(self, strategy: Strategy) -> float:
        """``||c[:r]|| / ||c||`` with ``r = n - (ceil(n/b) - 1) b``: the norm of group 0's
        last column, cut at step n (1 when it is whole)."""
        c = np.asarray(acc.coefficients(strategy), dtype=float)
        rows = self.n_steps - (self.compositions - 1) * self.min_sep
        if rows >= c.size:
            return 1.0
        return min(1.0, math.sqrt(float(np.dot(c[:rows], c[:rows])) / float(np.dot(c, c))))

    def dp_event_is_exact(self, strategy: Strategy) -> bool:
        """False for ``partition = "random"``, whose uniform phase the fixed-partition event
        ignores (docs/math.md §4.1), and when group 0's last column is cut at step n, which
        the whole-column event ignores (§4): :meth:`dp_event` is then an upper bound, and
        results say so. True otherwise (the fixed-partition model, exactly)."""
        return self.partition == "equal" and self.last_column_norm(strategy) >= 1.0

    def loss_model(self, strategy: Strategy) -> PrivacyLossModel:
        """Random-phase Monte Carlo loss (docs/math.md §4.1), for ``partition = "random"`` only.

        There every example's group is uniform and independent of the others, so the sensitive
        example's phase is uniform whatever the other examples reveal. Under ``"equal"`` the
        groups are dependent and only the fixed-partition bound (``dp_event``) is valid.
        """
        self._require_bands(strategy)
        if self.partition != "random":
            raise NotAccountableError(
                f"scheme {self.name!r} with partition = {self.partition!r} has no random-phase "
                "loss model: the groups of an equal split are dependent, so another example's "
                "group can reveal the sensitive example's phase; use partition = 'random', or "
                "the fixed-partition PLD"
            )
        from minsep.schemes.cyclic_poisson.loss import RandomPhaseCyclicLossModel

        return RandomPhaseCyclicLossModel(
            coefficients=acc.coefficients(strategy),
            n_steps=self.n_steps,
            groups=self.min_sep,
            group_rate=self.group_rate,
        )

    def phase_mixture(self) -> PhaseMixture | None:
        """The sensitive example's law for ``partition = "random"``: a uniform phase, then
        Bernoulli(q) at the steps ``i mod b = g`` (docs/math.md §4.1); None for ``"equal"``,
        whose dependent groups leave only the fixed-partition bound."""
        if self.partition != "random":
            return None
        return PhaseMixture(n_steps=self.n_steps, phases=self.min_sep, probability=self.group_rate)

    def truncated_dp_event(
        self, strategy: Strategy, sigma: float, dataset_size: int, max_batch_size: int
    ) -> DpEvent:
        """Truncated subsampled Gaussian over one group (size N/b), ``ceil(n/b)`` times.

        Needs equal groups of exactly N/b examples: the ``"equal"`` partition and b dividing
        N. The truncated event's epsilon is not monotone in the dataset size (e.g. n = 10,
        q = 0.1, B_max = 10, sigma = 1: N = 99, 100, 101 give 9.58, 9.62, 9.66 at delta
        1e-5), so neither floor(N/b) nor ceil(N/b) bounds a mix of group sizes.
        """
        from dp_accounting import dp_event as events

        self._require_bands(strategy)
        sigma = acc.require_sigma(sigma, type(self).__name__)
        if self.partition != "equal":
            raise NotAccountableError(
                f"scheme {self.name!r} with partition = {self.partition!r} cannot be accounted "
                "under truncation: group sizes are random; use partition = 'equal'"
            )
        if dataset_size % self.min_sep:
            raise NotAccountableError(
                f"scheme {self.name!r} cannot be accounted under truncation with dataset_size "
                f"= {dataset_size} and min_sep = {self.min_sep}: the groups must have equal "
                "size (the truncated event is not monotone in the group size); use a dataset "
                f"size divisible by {self.min_sep} (drop {dataset_size % self.min_sep} examples)"
            )
        return events.SelfComposedDpEvent(
            events.TruncatedSubsampledGaussianDpEvent(
                dataset_size=dataset_size // self.min_sep,
                sampling_probability=self.group_rate,
                truncated_batch_size=max_batch_size,
                noise_multiplier=sigma,
            ),
            self.compositions,
        )
