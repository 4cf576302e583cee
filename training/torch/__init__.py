"""PyTorch with minsep: BandMF (any strategy) under any scheme's sampler, in one call.

Typical use (the README's loop)::

    from minsep.torch import make_private

    private = make_private(model, torch.optim.SGD(model.parameters(), lr=0.5), dataset,
                           scheme="b_min_sep", scheme_options={"min_sep": 4}, steps=300,
                           rate=1 / 16, strategy="banded_toeplitz",
                           strategy_options={"bands": 4}, epsilon=8.0, delta=1e-5)
    for x, y in private.loader:
        private.optimizer.step(x, y)
    print(private.accountant.spent())

Modules: :mod:`.engine` (:func:`make_private`), :mod:`.calibration` (the certified route,
first answer on stderr), :mod:`.loader` (the scheme's DataLoader), :mod:`.clipping`
(per-example clipping with torch.func), :mod:`.noise` (the strategy's streaming noise on the
parameters' device, checkpointable), :mod:`.optimizer` and :mod:`.accountant`.
"""

from minsep.torch.accountant import PrivacyAccountant, PrivacySpent
from minsep.torch.calibration import calibrate
from minsep.torch.clipping import clipped_gradient_sum, per_example_gradients
from minsep.torch.engine import PrivateTraining, make_private
from minsep.torch.noise import NoiseStream, torch_backend
from minsep.torch.optimizer import PrivacyBudgetError, PrivateOptimizer

__all__ = [
    "NoiseStream",
    "PrivacyAccountant",
    "PrivacyBudgetError",
    "PrivacySpent",
    "PrivateOptimizer",
    "PrivateTraining",
    "calibrate",
    "clipped_gradient_sum",
    "make_private",
    "per_example_gradients",
    "torch_backend",
]
