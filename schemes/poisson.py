"""Poisson subsampling (DP-SGD): every example joins every batch independently at rate p0.

docs/math.md §4. Accounting: with the identity strategy (one band) the run is the n-fold composition
of the Poisson-subsampled Gaussian, exact by PLD; the Monte Carlo route is b-min-sep with b = 1.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, ClassVar

import attrs
import numpy as np

from minsep.framework.interfaces import PrivacyLossModel, Strategy
from minsep.framework.parameters import CompareContext, CompareVariant
from minsep.framework.participation import ParticipationChain
from minsep.framework.registries import schemes
from minsep.framework.validation import rate as rate_validator
from minsep.framework.validation import steps as steps_validator
from minsep.schemes import _accounting as acc
from minsep.schemes._sampling import poisson_subset
from minsep.schemes.base import Keep, SchemeBase, as_batch

if TYPE_CHECKING:
    from dp_accounting.dp_event import DpEvent

_WHY = "Poisson sampling has no min-sep structure; use cyclic_poisson or b_min_sep for BandMF"


@schemes.register("poisson")
@attrs.frozen
class Poisson(SchemeBase):
    """Poisson subsampling: each example joins each batch independently with probability p0.

    Attributes:
        n_steps: number of steps n.
        rate: the sampling probability p0 in (0, 1] (= the marginal participation rate).
    """

    label: ClassVar[str | None] = "DP-SGD (Poisson)"
    compare_rank: ClassVar[int] = 0

    n_steps: int = attrs.field(validator=steps_validator())
    rate: float = attrs.field(validator=rate_validator())

    @classmethod
    def compare_variants(cls, context: CompareContext) -> list[CompareVariant]:
        """DP-SGD (the identity, one band) whatever the bands grid: every table's baseline."""
        return [CompareVariant(bands=1)]

    @classmethod
    def example(cls) -> Poisson:
        return cls(n_steps=10, rate=0.1)

    @classmethod
    def invalid_examples(cls) -> list[tuple[dict[str, Any], str]]:
        return [
            ({"n_steps": 0, "rate": 0.1}, "n_steps"),
            ({"n_steps": 10, "rate": 0.0}, "rate"),
            ({"n_steps": 10, "rate": 1.5}, "rate"),
        ]

    def prefix_scheme(self, n_steps: int) -> Poisson:
        """The first ``n_steps`` steps: the same per-step law (it does not depend on n)."""
        return attrs.evolve(self, n_steps=n_steps)

    def generate_batches(
        self, prepared: Any, rng: np.random.Generator, keep: Keep | None
    ) -> Iterator[np.ndarray]:
        """Each step: ``K ~ Binomial(N, p0)``, then a uniform K-subset of the N examples."""
        everyone = np.arange(prepared, dtype=np.int64)
        for _ in range(self.n_steps):
            sample = as_batch(poisson_subset(rng, everyone, self.rate), prepared)
            yield sample if keep is None else keep(sample)

    # -- accounting -------------------------------------------------------------------------

    def loss_model(self, strategy: Strategy) -> PrivacyLossModel:
        """b-min-sep with b = 1 at probability p0 (cold and warm start coincide); one band."""
        acc.require_bands_at_most(self, strategy, 1, "1", _WHY)
        return acc.chain_loss_model(strategy, self.participation_chain())

    def dp_event(self, strategy: Strategy, sigma: float) -> DpEvent:
        """n-fold composition of the Poisson(p0)-subsampled Gaussian(sigma); one band."""
        from dp_accounting import dp_event as events

        acc.require_bands_at_most(self, strategy, 1, "1", _WHY)
        sigma = acc.require_sigma(sigma, type(self).__name__)
        return events.SelfComposedDpEvent(
            events.PoissonSampledDpEvent(self.rate, events.GaussianDpEvent(sigma)),
            self.n_steps,
        )

    def truncated_loss_model(
        self, strategy: Strategy, dataset_size: int, max_batch_size: int
    ) -> PrivacyLossModel:
        """Truncated b-min-sep with b = 1 (docs/math.md §6); one band."""
        acc.require_bands_at_most(self, strategy, 1, "1", _WHY)
        chain = self.participation_chain()
        return acc.chain_loss_model(
            strategy, chain, dataset_size=dataset_size, max_batch_size=max_batch_size
        )

    def truncated_dp_event(
        self, strategy: Strategy, sigma: float, dataset_size: int, max_batch_size: int
    ) -> DpEvent:
        """n-fold composition of dp_accounting's truncated subsampled Gaussian (Ganesh 2025)."""
        from dp_accounting import dp_event as events

        acc.require_bands_at_most(self, strategy, 1, "1", _WHY)
        sigma = acc.require_sigma(sigma, type(self).__name__)
        return events.SelfComposedDpEvent(
            events.TruncatedSubsampledGaussianDpEvent(
                dataset_size=dataset_size,
                sampling_probability=self.rate,
                truncated_batch_size=max_batch_size,
                noise_multiplier=sigma,
            ),
            self.n_steps,
        )

    def participation_chain(self) -> ParticipationChain:
        """b-min-sep with b = 1 at probability p0, for exact RDP accounting."""
        return ParticipationChain(n_steps=self.n_steps, min_sep=1, probability=self.rate)
