"""Compatibility facade: the Monte Carlo privacy-loss models of the built-in schemes.

Each model now lives with its family (``minsep.schemes.<family>.loss``) and the shared machinery
in :mod:`minsep.schemes.kernels`; this module re-exports the models and transcripts under their
old names for plugins and scripts. Importing it imports every built-in loss model (and numba).

- :class:`BMinSepLossModel`: b-min-sep, cold or warm start; Poisson is b = 1 (docs/math.md §3, §4).
- :class:`BallsInBinsLossModel`: balls-in-bins with cycle length T (§4).
- :class:`MultiAttributionLossModel`: Algorithm 3 (§5), cold start.
- :class:`ConjecturedMultiAttributionLossModel`: Algorithm 4, accounted by a conjecture.
- :class:`TruncatedBMinSepLossModel`: truncated b-min-sep with public counts (§6).
- :class:`RandomPhaseCyclicLossModel`: cyclic Poisson with a uniform random phase (§4.1).
"""

from minsep.schemes.b_min_sep.loss import BMinSepLossModel
from minsep.schemes.balls_in_bins.loss import BallsInBinsLossModel
from minsep.schemes.cyclic_poisson.loss import RandomPhaseCyclicLossModel
from minsep.schemes.kernels.transcript import BinsTranscript, BlockTranscript, TruncatedTranscript
from minsep.schemes.multi_attribution.loss import (
    ConjecturedMultiAttributionLossModel,
    MultiAttributionLossModel,
)
from minsep.schemes.truncated.loss import TruncatedBMinSepLossModel

__all__ = [
    "BMinSepLossModel",
    "BallsInBinsLossModel",
    "BinsTranscript",
    "BlockTranscript",
    "ConjecturedMultiAttributionLossModel",
    "MultiAttributionLossModel",
    "RandomPhaseCyclicLossModel",
    "TruncatedBMinSepLossModel",
    "TruncatedTranscript",
]
