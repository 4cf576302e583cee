"""The production setting of paper §7.4 and the paper's figures for it.

256-BandMF over n = 7200 steps, expected batch 1793 of |D| = 14,745,600 examples, truncated
batch B_max = 2048, epsilon = 10 at delta = |D|^-1.1 (about 1.3016e-8); the Monte Carlo budget
of one run (samples per direction, chunk size) and dp_accounting's PLD grid.
"""

from __future__ import annotations

import attrs

from minsep.framework.validation import fail, integer, number, positive, positive_int
from minsep.paper.options import tuple_of


@attrs.frozen(kw_only=True)
class ProductionSettings:
    """The production setup and the Monte Carlo budget of one run.

    Attributes:
        n_steps, expected_batch, max_batch, dataset_size, epsilon, delta_exponent: the
            training setup (delta = dataset_size ** -delta_exponent).
        bands: bands of the BandMF strategy, also the cyclic groups and the min-sep b.
        sigmas: noise multipliers of the Monte Carlo estimates (the paper's four).
        samples: Monte Carlo samples per direction, untruncated 256-min-sep.
        truncated_samples: Monte Carlo samples per direction, truncated 256-min-sep.
        chunk_size: samples per chunk (with the seed, fixes the draws).
        pld_interval: dp_accounting's value discretisation interval (pessimistic rounding).
    """

    n_steps: int = attrs.field(default=7200, validator=positive_int())
    expected_batch: int = attrs.field(default=1793, validator=positive_int())
    max_batch: int = attrs.field(default=2048, validator=positive_int())
    dataset_size: int = attrs.field(default=14_745_600, validator=positive_int())
    epsilon: float = attrs.field(default=10.0, validator=positive())
    delta_exponent: float = attrs.field(default=1.1, validator=positive())
    bands: int = attrs.field(default=256, validator=positive_int())
    sigmas: tuple[float, ...] = attrs.field(
        default=(0.56, 0.5, 0.47, 0.44), validator=tuple_of(positive())
    )
    samples: int = attrs.field(default=1 << 20, validator=integer(low=2))
    truncated_samples: int = attrs.field(default=1 << 18, validator=integer(low=2))
    chunk_size: int = attrs.field(default=1024, validator=positive_int())
    pld_interval: float = attrs.field(
        default=1e-3, validator=number(low=0.0, high=0.1, low_open=True)
    )

    def __attrs_post_init__(self) -> None:
        if self.expected_batch > self.dataset_size:
            raise fail(self, "expected_batch", self.expected_batch, "<= dataset_size")

    @property
    def delta(self) -> float:
        """|D|^-1.1."""
        return float(self.dataset_size ** (-self.delta_exponent))

    @property
    def rate(self) -> float:
        """p0 = expected batch / |D|."""
        return self.expected_batch / self.dataset_size


FULL = ProductionSettings()
QUICK = ProductionSettings(samples=4096, truncated_samples=4096)


#: The engine's GPU target used for projections (sample-steps per second on one H200).
GPU_SAMPLE_STEPS_PER_SECOND = 1e10

#: The paper's numbers (§7.4).
PAPER_SIGMA_CYCLIC_TRUNCATED = 0.627
PAPER_SIGMA_POISSON = 0.368
PAPER_SIGMA_B_MIN_SEP = 0.47
PAPER_SAMPLES = 7_500_000_000


__all__ = [
    "FULL",
    "GPU_SAMPLE_STEPS_PER_SECOND",
    "PAPER_SAMPLES",
    "PAPER_SIGMA_B_MIN_SEP",
    "PAPER_SIGMA_CYCLIC_TRUNCATED",
    "PAPER_SIGMA_POISSON",
    "QUICK",
    "ProductionSettings",
]
