"""The contracts every scheme, strategy, loss model and accountant implements (re-exported).

Each contract lives in its own module: :mod:`.loss_model` (the dominating pair and its
transcripts), :mod:`.strategy` (the matrix C), :mod:`.scheme` (the sampler and its accounting
hooks) and :mod:`.accountant` (the questions and their template methods). This module keeps
the names importable from one place.
"""

from minsep.framework.accountant import (
    DEFAULT_CURVE_FAILURE,
    Accountant,
    AccountantKind,
    Question,
)
from minsep.framework.loss_model import (
    DEFAULT_WORKING_ARRAYS,
    Direction,
    PrivacyLossModel,
    Transcript,
)
from minsep.framework.scheme import SamplingScheme
from minsep.framework.strategy import Strategy

__all__ = [
    "DEFAULT_CURVE_FAILURE",
    "DEFAULT_WORKING_ARRAYS",
    "Accountant",
    "AccountantKind",
    "Direction",
    "PrivacyLossModel",
    "Question",
    "SamplingScheme",
    "Strategy",
    "Transcript",
]
