"""The runs of paper §7.3's analogue (:mod:`minsep.paper.multi_attribution`): the paper's scale
and the committed quick run."""

from __future__ import annotations

import attrs

from minsep.framework.validation import (
    fail,
    integer,
    number,
    optional,
    positive,
    positive_int,
    probability,
)
from minsep.paper.coauthorship import GraphSettings
from minsep.paper.options import paper_samples, tuple_of


@attrs.frozen(kw_only=True)
class MASettings:
    """One run.

    Attributes:
        graph: the synthetic graph.
        n_steps: training steps n (burn-in steps come on top for b-min-sep).
        expected_batch: expected batch size B (p0 = B / |D|); or None to use ``epoch_length``.
        epoch_length: |D| / B when ``expected_batch`` is None.
        delta: target delta.
        epsilons: target epsilons.
        bands: bands k of BandMF (b-min-sep uses b = k; unamplified uses every k).
        samples: Monte Carlo verification samples per direction (None: ``paper_samples``).
        pld_interval: dp_accounting's value discretisation interval for DP-SGD (pessimistic:
            a coarser grid only over-reports epsilon; the mixture PLD is slow at 1e-3).
    """

    graph: GraphSettings = attrs.field(validator=attrs.validators.instance_of(GraphSettings))
    n_steps: int = attrs.field(validator=positive_int())
    expected_batch: float | None = attrs.field(default=None, validator=optional(positive()))
    epoch_length: float | None = attrs.field(default=None, validator=optional(number(low=1.0)))
    delta: float = attrs.field(validator=probability(open_high=True))
    epsilons: tuple[float, ...] = attrs.field(
        default=(1.0, 2.0, 4.0, 8.0, 16.0), validator=tuple_of(positive())
    )
    bands: tuple[int, ...] = attrs.field(
        default=(2, 4, 8, 16, 32), validator=tuple_of(positive_int())
    )
    samples: int | None = attrs.field(default=None, validator=optional(integer(low=100)))
    pld_interval: float = attrs.field(
        default=1e-3, validator=number(low=0.0, high=0.1, low_open=True)
    )

    def __attrs_post_init__(self) -> None:
        if (self.expected_batch is None) == (self.epoch_length is None):
            raise fail(
                self,
                "expected_batch",
                self.expected_batch,
                f"given exactly when epoch_length (= {self.epoch_length!r}) is not",
            )

    def rate(self, examples: int) -> float:
        """p0 for a bounded graph of ``examples`` examples."""
        if self.expected_batch is not None:
            return min(self.expected_batch / examples, 1.0)
        assert self.epoch_length is not None
        return 1.0 / self.epoch_length

    def resolved_samples(self) -> int:
        """``samples``, or :func:`paper_samples` of ``delta``."""
        return self.samples if self.samples is not None else paper_samples(self.delta)


#: The paper's scale: ~300k examples after bounding, n = 1000, B = 1024, delta = 1/500,000.
FULL = MASettings(
    graph=GraphSettings(papers=1_700_000, users=1_200_000),
    n_steps=1000,
    expected_batch=1024,
    delta=1.0 / 500_000,
)

#: The committed quick run: a small graph, fewer steps, delta = 1e-3.
QUICK = MASettings(
    graph=GraphSettings(papers=30_000, users=20_000),
    n_steps=256,
    epoch_length=128,
    delta=1e-3,
    bands=(4, 16),
)


__all__ = ["FULL", "QUICK", "MASettings"]
