"""minsep.framework: the contracts, registries, backends, results and the Monte Carlo engine.

This package imports nothing else of the project; schemes, strategies and accountants plug in
through :mod:`minsep.framework.registries`.
"""

from minsep.framework.backend import Backend, get_backend
from minsep.framework.errors import (
    BackendUnavailableError,
    CalibrationError,
    CheckpointError,
    ConfigurationError,
    InfeasibleError,
    MinsepError,
    NotAccountableError,
    UnknownNameError,
)
from minsep.framework.interfaces import (
    Accountant,
    Direction,
    PrivacyLossModel,
    SamplingScheme,
    Strategy,
    Transcript,
)
from minsep.framework.registries import accountants, schemes, strategies
from minsep.framework.results import CalibrationResult, DeltaResult, EpsilonResult, Result

__all__ = [
    "Accountant",
    "Backend",
    "BackendUnavailableError",
    "CalibrationError",
    "CalibrationResult",
    "CheckpointError",
    "ConfigurationError",
    "DeltaResult",
    "Direction",
    "EpsilonResult",
    "InfeasibleError",
    "MinsepError",
    "NotAccountableError",
    "PrivacyLossModel",
    "Result",
    "SamplingScheme",
    "Strategy",
    "Transcript",
    "UnknownNameError",
    "accountants",
    "get_backend",
    "schemes",
    "strategies",
]
