"""Helpers shared by the loss-model theorem tests (not oracles: plumbing only)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from scipy import stats

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


def law_fit_pvalue(rows: np.ndarray, law: Mapping[tuple[int, ...], float]) -> float:
    """The chi-square p-value of the drawn ``rows`` (one integer vector each) against the
    exact ``law`` over such vectors; cells expected fewer than 5 times are pooled into one.
    Asserts first that no row falls outside the law's support."""
    keys, seen = np.unique(rows, axis=0, return_counts=True)
    observed = {tuple(int(v) for v in k): int(m) for k, m in zip(keys, seen, strict=True)}
    support = sorted(k for k, mass in law.items() if mass > 0)
    assert set(observed) <= set(support), "a vector outside the law's support was drawn"
    expected = np.array([law[k] * rows.shape[0] for k in support])
    counts = np.array([observed.get(k, 0) for k in support])
    big = expected >= 5
    f_obs = np.append(counts[big], counts[~big].sum())
    f_exp = np.append(expected[big], expected[~big].sum())
    keep = f_exp > 0
    return float(stats.chisquare(f_obs[keep], f_exp[keep]).pvalue)
