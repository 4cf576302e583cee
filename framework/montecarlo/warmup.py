"""Start a question's workers early and warm, so that their start-up overlaps the parent's.

A process pool's worker pays, before its first chunk, for whatever the forkserver image does
not hold: the loss model's own modules and its compiled kernels (numba loads them from its
on-disk cache). :func:`start_workers` asks the executor to start now and to run one
:class:`WarmUp` per worker (a few samples per direction, on a seed no run uses), while the
parent goes on building the plan and probing rates; by the time the first chunk is
submitted the workers are ready. Executors without a pool ignore it (see
:func:`~minsep.framework.montecarlo.executors.prepare_executor`).
"""

from __future__ import annotations

import attrs
import numpy as np

from minsep.framework.backend import Backend, get_backend
from minsep.framework.interfaces import Direction, PrivacyLossModel
from minsep.framework.montecarlo.executors import Executor, prepare_executor

__all__ = ["WARM_UP_SAMPLES", "WarmUp", "start_workers"]

#: Samples per direction of a warm-up (enough to take every kernel path a chunk takes).
WARM_UP_SAMPLES = 16
#: First spawn-key entry of the warm-up's seed: outside every stream a run uses (0, 1, ...)
#: and the rate probe's (2**31).
_WARM_UP_KEY = 1 << 32


@attrs.frozen
class WarmUp:
    """Picklable: draw ``WARM_UP_SAMPLES`` transcripts per direction of ``model`` on
    ``backend`` and evaluate their loss at ``sigma``; the result is dropped. Run in a fresh
    worker, it imports the model's modules and loads its compiled kernels."""

    model: PrivacyLossModel
    sigma: float
    backend: str

    def __call__(self) -> None:
        resolved = get_backend(self.backend)
        for code, direction in enumerate((Direction.REMOVE, Direction.ADD)):
            seed = np.random.SeedSequence(0, spawn_key=(_WARM_UP_KEY, code))
            transcript = self.model.draw(WARM_UP_SAMPLES, direction, resolved.rng(seed), resolved)
            self.model.privacy_loss(transcript, self.sigma)


def start_workers(
    model: PrivacyLossModel, executor: Executor, backend: str | Backend, sigma: float = 1.0
) -> None:
    """Start ``executor``'s workers now, each warming up on ``model`` (returns at once).

    ``backend`` as the run will use it; a Backend object of a stand-in namespace (which does
    not pickle, so no process executor can run it) warms nothing.
    """
    if isinstance(backend, Backend):
        if backend.name not in ("numpy", "cupy"):
            return
        backend = backend.spec
    prepare_executor(executor, WarmUp(model, float(sigma), get_backend(backend).spec))
