"""The multi-attribution family (Algorithms 3 and 4): samplers (:mod:`.scheme`) and Monte Carlo
loss models (:mod:`.loss`, imported by the accounting hooks when they are called)."""

from minsep.schemes.multi_attribution.scheme import (
    ConjectureWarning,
    MultiAttribution,
    MultiAttributionBase,
    MultiAttributionParticipation,
)

__all__ = [
    "ConjectureWarning",
    "MultiAttribution",
    "MultiAttributionBase",
    "MultiAttributionParticipation",
]
