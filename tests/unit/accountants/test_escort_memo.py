"""The escort's memos change no number (docs/rdp-escort.md §6, §8).

A calibration asks for the same forward passes many times: ``ln Z`` per sweep entry and order
(route, locating pilot, sweep plan) and the checkpointed pass of every chunk of a sampling call.
The memos must return exactly what a fresh computation gives, and never a pass of another
strategy, sigma or order; the compiled backward walk's memo of predecessor weights must draw
the same tuples as the array code, also where several joint states share a memo slot.
"""

from __future__ import annotations

import numpy as np
import pytest

from minsep.accountants import escort
from minsep.accountants import rdp_moments as moments
from minsep.accountants.escort import forward_log_moment, sample_escort_counts
from minsep.accountants.escort_kernels import _MEMO, NUMBA_AVAILABLE
from minsep.accountants.escort_setup import escort_setups
from minsep.framework.participation import ParticipationChain
from minsep.schemes.b_min_sep.loss import BMinSepLossModel


def strategy(bands: int) -> np.ndarray:
    c = np.linspace(1.0, 0.4, bands)
    return c / np.linalg.norm(c)


@pytest.mark.parametrize(
    ("n", "b", "p", "warm", "order", "bands", "draws"),
    [
        (60, 4, 0.02, False, 3, 3, 1500),  # rare joins: most draws share the all-free state
        (30, 8, 0.05, True, 4, 8, 300),  # 9^4 = 6561 joint states > _MEMO slots: collisions
    ],
)
def test_memoised_backward_walk_draws_the_same_tuples(
    n: int, b: int, p: float, warm: bool, order: int, bands: int, draws: int
) -> None:
    if not NUMBA_AVAILABLE:
        pytest.skip("numba is not available")
    assert (b + 1) ** order > _MEMO or p < 0.05
    chain = ParticipationChain(n_steps=n, min_sep=b, probability=p, warm_start=warm)
    c = strategy(bands)
    runs = [
        sample_escort_counts(chain, c, 0.7, order, draws, np.random.default_rng(5), kernels=k)
        for k in ("array", "numba")
    ]
    assert np.array_equal(runs[0].counts, runs[1].counts)
    assert runs[0].counts.sum() > 0


@pytest.mark.parametrize(("b", "order", "sigma"), [(3, 2, 0.6), (4, 3, 0.9), (5, 4, 1.3)])
def test_forward_log_moment_is_the_rdp_pass(b: int, order: int, sigma: float) -> None:
    chain = ParticipationChain(n_steps=37, min_sep=b, probability=0.1, warm_start=True)
    c = strategy(b)
    exact = moments.log_moment(chain, c, sigma, order)
    escort._FORWARD.clear()
    assert forward_log_moment(chain, c, sigma, order) == exact  # fresh pass
    assert forward_log_moment(chain, c, sigma, order) == exact  # memoised pass


def test_the_forward_memo_serves_only_its_own_pass() -> None:
    chain = ParticipationChain(n_steps=41, min_sep=4, probability=0.15, warm_start=False)
    c, other = strategy(4), strategy(3)

    def draw(coefficients: np.ndarray, sigma: float, order: int) -> escort.EscortDraw:
        rng = np.random.default_rng(9)
        return sample_escort_counts(chain, coefficients, sigma, order, 200, rng)

    escort._FORWARD.clear()
    cold = draw(c, 0.8, 3)
    for coefficients, sigma, order in ((other, 0.8, 3), (c, 0.9, 3), (c, 0.8, 2)):
        moved = draw(coefficients, sigma, order)  # another pass replaces the memo
        assert moved.log_z == moments.log_moment(chain, coefficients, sigma, order)
        assert moved.log_z != cold.log_z
    again = draw(c, 0.8, 3)  # recomputed after the others
    warm = draw(c, 0.8, 3)  # from the memo
    for run in (again, warm):
        assert np.array_equal(run.counts, cold.counts) and run.log_z == cold.log_z


def test_escort_setups_memo_is_per_model() -> None:
    def model(coefficients: tuple[float, ...]) -> BMinSepLossModel:
        return BMinSepLossModel(
            coefficients=coefficients, n_steps=30, min_sep=3, probability=0.1, warm_start=False
        )

    first, second = model((1.0, 0.5)), model((1.0, 0.2))
    a = escort_setups(first, 0.9, (2, 3))
    assert escort_setups(first, 0.9, (2, 3)) == a
    b = escort_setups(second, 0.9, (2, 3))
    for x, y in zip(a, b, strict=True):
        assert x.order == y.order and x.log_z > y.log_z  # larger band product: larger Z
    law = second.escort_law()
    assert b[1].log_z >= law.log_moment(0.9, 3, moments.DEFAULT_MAX_STATES)  # inflated


@pytest.mark.parametrize("compiled", [False, True])
def test_a_batch_of_walks_draws_what_each_call_draws(compiled: bool) -> None:
    if compiled and not NUMBA_AVAILABLE:
        pytest.skip("numba is not available")
    chain = ParticipationChain(n_steps=45, min_sep=4, probability=0.2, warm_start=True)
    c = strategy(4)
    sizes = [70, 1, 33]
    kernels = "numba" if compiled else "array"
    alone = []
    for k, size in enumerate(sizes):
        rng = np.random.default_rng([3, k])
        draw = sample_escort_counts(chain, c, 0.8, 3, size, rng, kernels=kernels)
        alone.append((draw.counts, rng.random()))  # the generator is left where it was
    rngs = [np.random.default_rng([3, k]) for k in range(len(sizes))]
    products = moments.prepare("t", chain, c, 0.8, 3, 1 << 20)[1]
    forward = escort._forward_pass(chain, c, products, 0.8, 3, 7)  # block 7: the default
    batch = escort._backward_walks(chain, products, forward, 0.8, sizes, rngs, compiled)
    for (counts, after), got, rng in zip(alone, batch, rngs, strict=True):
        assert np.array_equal(counts, got) and rng.random() == after
    assert sum(int(x.sum()) for x in batch) > 0


def test_batched_chunks_tally_what_single_chunks_tally(monkeypatch: pytest.MonkeyPatch) -> None:
    from minsep.accountants import escort_sampling
    from minsep.framework.montecarlo.sampling import EngineConfig

    model = BMinSepLossModel(
        coefficients=(1.0, 0.6, 0.3), n_steps=40, min_sep=4, probability=0.2, warm_start=False
    )
    (setup,) = escort_setups(model, 0.9, (3,))
    config = EngineConfig(progress=False, chunk_size=50)

    def tally() -> tuple[list[float], list[float]]:
        out = escort_sampling.escort_sample(
            model, setup, (0.5, 1.0), setup.log_support(0.5), n_samples=333, seed=4,
            stream=1, config=config,
        )  # fmt: skip
        remove = out.tally(0, escort_sampling.Direction.REMOVE)
        return list(remove.sum_x), list(remove.sum_x2)

    monkeypatch.setattr(escort_sampling, "BATCH_BYTES", 1)  # one chunk per walk
    single = tally()
    monkeypatch.setattr(escort_sampling, "BATCH_BYTES", 3 * 50 * 40)  # three chunks per walk
    assert tally() == single
    assert single[0][0] > 0.0


def test_escort_outputs_are_the_banded_mean_plus_scaled_normals() -> None:
    rng = np.random.default_rng(2)
    counts = (rng.random((40, 30)) < 0.2).astype(np.int8) * rng.integers(1, 4, (40, 30))
    c = strategy(5)
    mean = np.zeros(counts.shape)
    for j in range(c.size):  # the engine's order of the additions, band by band
        for row, step in zip(*np.nonzero(counts), strict=True):
            if step + j < counts.shape[1]:
                mean[row, step + j] += counts[row, step] * c[j]
    expected = mean + 0.7 * np.random.default_rng(8).standard_normal(counts.shape)
    got = escort.escort_outputs(counts.astype(np.int8), c, 0.7, np.random.default_rng(8))
    assert np.array_equal(got, expected)
