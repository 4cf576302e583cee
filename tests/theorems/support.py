"""Helpers shared by the loss-model theorem tests (not oracles: plumbing only)."""

from __future__ import annotations

import numpy as np

from minsep.framework.backend import Backend, RandomSource, numpy_backend

#: Brute force must agree with the recursions to this absolute tolerance on ln P/Q.
TOL = 1e-10


def backend() -> Backend:
    return numpy_backend()


def source(seed: int) -> RandomSource:
    """A fixed-seed RandomSource of the numpy backend."""
    return numpy_backend().rng(np.random.SeedSequence(seed))


def random_outputs(n_rows: int, n: int, seed: int, scale: float = 1.5) -> np.ndarray:
    """Outputs y spread over the interesting range (means of 0, 1 or 2 plus noise)."""
    gen = np.random.default_rng(seed)
    return gen.integers(0, 3, size=(n_rows, n)) * 0.8 + scale * gen.standard_normal((n_rows, n))
