"""Strategy matrices: identity (DP-SGD), MSE-optimal banded Toeplitz (BandMF), buffered linear
Toeplitz (BLT), banded inverse and dense (small n, tests).

Importing this package registers ``"identity"``, ``"banded_toeplitz"``, ``"blt"``,
``"banded_inverse"`` and ``"dense"`` in
:data:`minsep.framework.registries.strategies`.
"""

from minsep.framework.registries import strategies as registry
from minsep.strategies.banded_inverse import BandedInverse
from minsep.strategies.banded_toeplitz import BandedToeplitz
from minsep.strategies.base import ToeplitzStrategy
from minsep.strategies.blt import BufferedLinearToeplitz
from minsep.strategies.dense import Dense
from minsep.strategies.identity import Identity
from minsep.strategies.noise import correlated_noise
from minsep.strategies.optimize import (
    ALGORITHM_VERSION,
    OBJECTIVES,
    clear_memory_cache,
    objective_and_gradient,
    optimal_coefficients,
)
from minsep.strategies.sensitivity import sensitivity, sensitivity_is_exact
from minsep.strategies.toeplitz import inverse_coefficients, prefix_mse, toeplitz_matrix

__all__ = [
    "ALGORITHM_VERSION",
    "OBJECTIVES",
    "BandedInverse",
    "BandedToeplitz",
    "BufferedLinearToeplitz",
    "Dense",
    "Identity",
    "ToeplitzStrategy",
    "clear_memory_cache",
    "correlated_noise",
    "inverse_coefficients",
    "objective_and_gradient",
    "optimal_coefficients",
    "prefix_mse",
    "registry",
    "sensitivity",
    "sensitivity_is_exact",
    "toeplitz_matrix",
]
