"""Sampling schemes: one module or package per family, with its sampler and accounting hooks.

Importing this package imports every scheme module, which registers it in
:data:`minsep.framework.registries.schemes` under the names

- ``poisson`` (:class:`Poisson`), ``cyclic_poisson`` (:class:`CyclicPoisson`),
  ``balls_in_bins`` (:class:`BallsInBins`), ``b_min_sep`` (:class:`BMinSep`);
- ``multi_attribution`` (:class:`MultiAttribution`, Algorithm 3) and
  ``multi_attribution_participation`` (:class:`MultiAttributionParticipation`, Algorithm 4,
  accounted only by a conjecture), both over an :class:`AttributionGraph`;
- ``truncated`` (:class:`Truncated`), fixed-size batches padded with :data:`PADDING`.

Each family keeps its sampler and Monte Carlo loss model together (``minsep.schemes.<family>``
with ``scheme`` and ``loss`` modules; Poisson and cyclic Poisson are single modules, Poisson's loss
model being b-min-sep's with b = 1); the loss model is imported only when a scheme's accounting
hook is called. :mod:`minsep.schemes.kernels` holds the machinery several loss models share, and
:mod:`minsep.schemes.losses` re-exports the loss models under their old names. The PyTorch
adapter is :mod:`minsep.schemes.torch_adapter`.
"""

from minsep.framework.registries import schemes as registry
from minsep.schemes.attribution import AttributionGraph
from minsep.schemes.b_min_sep import BMinSep
from minsep.schemes.balls_in_bins import BallsInBins
from minsep.schemes.base import SchemeBase
from minsep.schemes.cyclic_poisson import CyclicPoisson
from minsep.schemes.multi_attribution import (
    ConjectureWarning,
    MultiAttribution,
    MultiAttributionParticipation,
)
from minsep.schemes.poisson import Poisson
from minsep.schemes.torch_adapter import SchemeBatchSampler
from minsep.schemes.truncated import PADDING, Truncated

__all__ = [
    "PADDING",
    "AttributionGraph",
    "BMinSep",
    "BallsInBins",
    "ConjectureWarning",
    "CyclicPoisson",
    "MultiAttribution",
    "MultiAttributionParticipation",
    "Poisson",
    "SchemeBase",
    "SchemeBatchSampler",
    "Truncated",
    "registry",
]
