"""A minimal DP trainer with BandMF noise and any scheme's sampler.

Modules: :mod:`.data` (digits, synthetic clusters), :mod:`.models` (softmax regression, MLP,
vectorised per-example gradients), :mod:`.clipping`, :mod:`.optim` (SGD momentum, linear
decay), :mod:`.private` (:class:`PrivateRun`: scheme, strategy and σ in one place),
:mod:`.trainer` (:func:`train`), :mod:`.report` and :mod:`.cli` (``minsep train``).

Typical use::

    run = PrivateRun.calibrated(scheme, strategy, accountant, epsilon=8.0, delta=1e-5,
                                dataset_size=data.train_size)
    record = train(TrainingConfig(model="mlp"), data, run)
"""

from minsep.framework.setup import select_accountant
from minsep.training.clipping import clip_rows, clipped_sum
from minsep.training.data import Dataset, load_digits, synthetic
from minsep.training.models import MLP, Model, SoftmaxRegression, build_model
from minsep.training.optim import LinearDecay, SGDMomentum
from minsep.training.private import PrivateRun
from minsep.training.trainer import StepInfo, TrainingConfig, TrainingRecord, train

__all__ = [
    "MLP",
    "Dataset",
    "LinearDecay",
    "Model",
    "PrivateRun",
    "SGDMomentum",
    "SoftmaxRegression",
    "StepInfo",
    "TrainingConfig",
    "TrainingRecord",
    "build_model",
    "clip_rows",
    "clipped_sum",
    "load_digits",
    "select_accountant",
    "synthetic",
    "train",
]
