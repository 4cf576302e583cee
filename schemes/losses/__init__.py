"""Monte Carlo privacy-loss models (PrivacyLossModel implementations) of the sampling schemes.

Each model is a frozen attrs class, built lazily by a scheme's ``loss_model`` hook; it draws
sigma-free transcripts and maps them to ``ln P/Q`` (docs/math.md §2-§6):

- :class:`BMinSepLossModel`: b-min-sep, cold or warm start; Poisson is b = 1 (§3, §4).
- :class:`BallsInBinsLossModel`: balls-in-bins with cycle length T (§4).
- :class:`MultiAttributionLossModel`: Algorithm 3 (§5), cold start.
- :class:`ConjecturedMultiAttributionLossModel`: Algorithm 4, accounted by a conjecture.
- :class:`TruncatedBMinSepLossModel`: truncated b-min-sep with public counts (§6).
- :class:`RandomPhaseCyclicLossModel`: cyclic Poisson with a uniform random phase (§4.1).

Evaluation paths (same random stream, same values up to rounding; see :mod:`.jit`): fused
numba kernels on host numpy (:mod:`.cpu_kernels`, driven by :mod:`.fused`), a fused CUDA
kernel for b-min-sep on cupy (:mod:`.gpu_kernels`), and portable array-API code everywhere
else. ``python -m minsep.bench`` measures them.
"""

from minsep.schemes.losses.b_min_sep import BMinSepLossModel
from minsep.schemes.losses.balls_in_bins import BallsInBinsLossModel
from minsep.schemes.losses.multi_attribution import (
    ConjecturedMultiAttributionLossModel,
    MultiAttributionLossModel,
)
from minsep.schemes.losses.random_phase import RandomPhaseCyclicLossModel
from minsep.schemes.losses.transcript import BinsTranscript, BlockTranscript, TruncatedTranscript
from minsep.schemes.losses.truncated import TruncatedBMinSepLossModel

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
