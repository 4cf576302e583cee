"""The escort's dots without forming y (:mod:`minsep.schemes.kernels.count_dots`,
docs/rdp-escort.md §7): ``<c_i, y>`` of ``y = C x + sigma z`` from integer counts x and the noise
correlations equal the sliding products of the dense y built from the same counts and the same
normals (an explicit matrix C, rows cut at step n), on both kernel sets, for cold and warm
b-min-sep, n not a multiple of the bands, k = 1, more bands than steps, balls-in-bins and random
phase; ``ln u`` equals ``log_ratio_at`` on that y; and the engine's chunks tally what the dense
path tallies on the same draws."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from minsep.accountants import escort_sampling
from minsep.accountants.escort_setup import escort_setups
from minsep.framework.backend import numpy_backend
from minsep.framework.interfaces import Direction
from minsep.framework.montecarlo.sampling import EngineConfig
from minsep.schemes.b_min_sep.loss import BMinSepLossModel
from minsep.schemes.balls_in_bins.loss import BallsInBinsLossModel
from minsep.schemes.cyclic_poisson.loss import RandomPhaseCyclicLossModel
from minsep.schemes.kernels.blocks import sliding_dot
from minsep.schemes.kernels.count_dots import add_count_signal, count_table
from minsep.schemes.kernels.jit import NUMBA_AVAILABLE
from minsep.schemes.kernels.model import BlockLossModel

SETS = ["array", *(["numba"] if NUMBA_AVAILABLE else [])]
SIGMA = 0.7


def _c(k: int) -> tuple[float, ...]:
    return tuple(float(v) for v in np.linspace(1.0, 0.25, k))


MODELS: dict[str, BlockLossModel] = {
    "cold": BMinSepLossModel(_c(3), n_steps=50, min_sep=4, probability=0.3, warm_start=False),
    "warm, n % k != 0": BMinSepLossModel(
        _c(5), n_steps=37, min_sep=5, probability=0.2, warm_start=True
    ),
    "k = 1": BMinSepLossModel((1.0,), n_steps=20, min_sep=1, probability=0.1, warm_start=False),
    "k > n": BMinSepLossModel(_c(6), n_steps=4, min_sep=6, probability=0.5, warm_start=False),
    "n = 1024, k = 8": BMinSepLossModel(
        _c(8), n_steps=1024, min_sep=8, probability=8 / 256, warm_start=True
    ),
    "balls-in-bins": BallsInBinsLossModel(_c(4), n_steps=30, cycle_length=7),
    "random phase": RandomPhaseCyclicLossModel(_c(3), n_steps=41, groups=4, group_rate=0.6),
}


def strategy(c: tuple[float, ...], n: int) -> np.ndarray:
    """The banded Toeplitz C as a dense matrix: ``C[t, s] = c_{t - s}`` for ``0 <= t - s < k``."""
    out = np.zeros((n, n))
    for t in range(n):
        for s in range(n):
            if 0 <= t - s < len(c):
                out[t, s] = c[t - s]
    return out


def counts_of(rows: int, n: int, seed: int) -> np.ndarray:
    """Counts 0..4, with participations at the first and the last step forced in."""
    rng = np.random.default_rng(seed)
    counts = (rng.random((rows, n)) < 0.15) * rng.integers(1, 5, (rows, n))
    counts[0, 0], counts[1, n - 1], counts[2, :] = 3, 4, 0
    return counts.astype(np.int8)


def dense_outputs(model: BlockLossModel, counts: np.ndarray, seed: int) -> np.ndarray:
    """``y = C counts + sigma z`` with z the host backend's generator's normals at ``seed``."""
    n = counts.shape[1]
    z = numpy_backend("array").rng(np.random.SeedSequence(seed)).standard_normal(counts.shape)
    return np.asarray(counts @ strategy(model.coefficients, n).T + SIGMA * z, dtype=np.float64)


@pytest.mark.parametrize("kernels", SETS)
@pytest.mark.parametrize("name", list(MODELS))
def test_count_dots_are_the_sliding_products_of_the_dense_outputs(name: str, kernels: str) -> None:
    model = MODELS[name]
    counts = counts_of(60, model.n_steps, 1)
    backend = numpy_backend(kernels)
    dots = model.count_dots(counts, SIGMA, backend.rng(np.random.SeedSequence(9)), backend)
    y = dense_outputs(model, counts, 9)
    assert np.max(np.abs(dots - sliding_dot(y, model.coefficients, np))) <= 1e-10
    source = backend.rng(np.random.SeedSequence(9))
    log_u = model.log_ratio_of_counts(counts, SIGMA, source, backend)
    want = model.log_ratio_at(y, SIGMA, np, kernels)
    assert np.allclose(log_u, want, rtol=1e-12, atol=1e-10)
    # power: a count moved by one step changes the dots
    moved = counts.copy()
    moved[0, :2] = (0, 3)
    other = model.count_dots(moved, SIGMA, backend.rng(np.random.SeedSequence(9)), backend)
    assert np.max(np.abs(other - sliding_dot(y, model.coefficients, np))) > 1e-3


@pytest.mark.parametrize(("k", "n"), [(1, 5), (3, 10), (5, 7), (6, 4)])
def test_count_table_is_the_cross_product_of_block_and_column(k: int, n: int) -> None:
    c = _c(k)
    matrix = strategy(c, n)
    table = count_table(c, n)
    kk = table.shape[0]
    assert kk == min(k, n)
    for i in range(n):
        block = matrix[:, i]  # column i of C is the block vector c_i, cut at row n
        for j in range(n):
            want = float(block @ matrix[:, j])
            got = table[min(kk - 1, n - 1 - i), i - j + kk - 1] if abs(i - j) < kk else 0.0
            assert got == pytest.approx(want, abs=1e-14)


@pytest.mark.skipif(not NUMBA_AVAILABLE, reason="needs numba")
def test_compiled_and_array_count_signal_agree() -> None:
    c = _c(7)
    counts = counts_of(40, 90, 3)
    noise = np.random.default_rng(4).standard_normal(counts.shape)
    compiled = add_count_signal(noise.copy(), counts, c, 1.3, compiled=True)
    array = add_count_signal(noise.copy(), counts, c, 1.3, compiled=False)
    assert np.max(np.abs(compiled - array)) <= 1e-12


def test_count_signal_refuses_mismatched_shapes() -> None:
    with pytest.raises(ValueError, match="differ in shape"):
        add_count_signal(np.zeros((2, 5)), np.zeros((2, 4), np.int8), (1.0,), 1.0, False)


def _tally(model: Any, order: int, config: EngineConfig) -> tuple[Any, Any]:
    (setup,) = escort_setups(model, 0.9, (order,))
    out = escort_sampling.escort_sample(
        model, setup, (0.3, 1.0), setup.log_support(0.3), n_samples=300, seed=5, stream=1,
        config=config,
    )  # fmt: skip
    tally = out.tally(0, Direction.REMOVE)
    return tally.sum_x, tally.sum_x2


@pytest.mark.parametrize(
    ("name", "order"), [("cold", 3), ("warm, n % k != 0", 2), ("balls-in-bins", 3),
                        ("random phase", 2)]
)  # fmt: skip
def test_chunks_tally_what_the_dense_outputs_tally(
    name: str, order: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same counts and normals through ``escort_outputs`` and ``log_ratio_at`` (the path of
    models without ``log_ratio_of_counts``) give the same tallies to rounding."""
    model = MODELS[name]
    config = EngineConfig(progress=False, chunk_size=120)
    fast = _tally(model, order, config)
    monkeypatch.setattr(type(model), "log_ratio_of_counts", None)
    dense = _tally(model, order, config)
    assert np.allclose(fast[0], dense[0], rtol=1e-9, atol=0)
    assert np.allclose(fast[1], dense[1], rtol=1e-9, atol=0)
    assert fast[0][0] > 0.0
