"""The Monte Carlo engine: accumulators, seeding, executors, determinism, estimates."""

from __future__ import annotations

import json
import math
import pickle

import array_api_strict
import numpy as np
import pytest

from minsep.framework.backend import namespace_backend, numpy_backend
from minsep.framework.errors import ConfigurationError, MinsepError
from minsep.framework.interfaces import Direction
from minsep.framework.montecarlo import (
    BOTH,
    PILOT_STREAM,
    VERIFY_STREAM,
    BinSpec,
    ChunkTask,
    EngineConfig,
    LocalExecutor,
    LossHistogram,
    ProcessExecutor,
    SweepTally,
    chunk_seed,
    estimate_delta,
    estimate_epsilon,
    get_executor,
    hockey_stick,
    sample,
    sample_chunks,
)
from minsep.framework.montecarlo.accumulators import _bin_indices
from tests.unit.montecarlo_toys import GaussianToy, NaNToy, SubsampledGaussianToy

SMALL = EngineConfig(chunk_size=1000)


def _histogram_of(losses: np.ndarray, spec: BinSpec | None = None) -> LossHistogram:
    hist = LossHistogram(spec or BinSpec())
    hist.add_counts(np.bincount(_bin_indices(np, losses, hist.spec)))
    return hist


def _exact_delta(losses: np.ndarray, eps: float) -> float:
    return float(np.mean(hockey_stick(np, losses, eps)))


# -- accumulators ----------------------------------------------------------------------------


def test_hockey_stick_matches_definition_and_handles_infinities() -> None:
    loss = np.array([-np.inf, -1.0, 0.5, 1.0, 2.0, np.inf])
    x = hockey_stick(np, loss, 1.0)
    expected = np.maximum(1 - np.exp(1.0 - loss[1:-1]), 0.0)
    np.testing.assert_allclose(x[1:-1], expected, rtol=1e-15)
    assert x[0] == 0.0 and x[-1] == 1.0


def test_histogram_reading_is_conservative_and_within_one_bin(rng: np.random.Generator) -> None:
    losses = rng.normal(1.0, 1.5, 50_000)
    hist = _histogram_of(losses)
    h = hist.spec.width
    for eps in [0.0, 0.3, 1.0, 2.5, 4.0, 6.0]:
        exact = _exact_delta(losses, eps)
        assert hist.delta(eps) >= exact
        assert hist.delta(eps) <= _exact_delta(losses, eps - h) + 1e-15
    for delta in [0.3, 0.05, 1e-3, 1e-4]:
        eps_hist = hist.epsilon(delta)
        assert _exact_delta(losses, eps_hist) <= delta  # never anti-conservative
        assert hist.delta(eps_hist) <= delta
        # within one bin of the exact empirical inverse
        assert _exact_delta(losses, max(eps_hist - h - 1e-9, 0.0)) > delta


def test_histogram_edges_are_exact_upper_bounds() -> None:
    h = BinSpec().width
    losses = np.array([0.0, h, h * (1 + 1e-15), 3 * h, -2.0, 1e-300])
    idx = _bin_indices(np, losses, BinSpec())
    np.testing.assert_array_equal(idx, [0, 1, 2, 3, 0, 1])
    assert np.all(idx * h >= losses)


def test_histogram_overflow_counts_as_x_equal_one() -> None:
    spec = BinSpec(bin_bits=4, max_loss=8.0)
    hist = _histogram_of(np.array([1.0, 9.0, np.inf, 100.0]), spec)
    assert hist.overflow == 3
    assert hist.total == 4
    assert hist.delta(50.0) == pytest.approx(0.75)
    assert hist.epsilon(0.5) == math.inf
    assert hist.epsilon(0.8) < 1.0


def test_histogram_merge_is_order_independent_and_serialises(rng: np.random.Generator) -> None:
    parts = [rng.normal(2.0, 2.0, n) for n in (100, 5000, 777)]
    hists = [_histogram_of(p) for p in parts]
    forward, backward = LossHistogram(), LossHistogram()
    for h in hists:
        forward.merge(h)
    for h in reversed(hists):
        backward.merge(h)
    whole = _histogram_of(np.concatenate(parts))
    np.testing.assert_array_equal(forward.counts, whole.counts)
    np.testing.assert_array_equal(backward.counts, whole.counts)
    again = LossHistogram.from_dict(json.loads(json.dumps(forward.to_dict())))
    np.testing.assert_array_equal(again.counts, whole.counts)
    assert again.overflow == whole.overflow and again.spec == whole.spec
    with pytest.raises(ConfigurationError, match="spec"):
        forward.merge(LossHistogram(BinSpec(bin_bits=3)))


def test_histogram_pickles_sparsely_and_exactly(rng: np.random.Generator) -> None:
    """A chunk's tally crosses processes as its occupied bins: the same counts (size, trailing
    zeros and overflow included) at a fraction of the dense bytes."""
    spec = BinSpec(bin_bits=10, max_loss=64.0)
    hist = _histogram_of(np.concatenate([rng.normal(3.0, 9.0, 1024), [np.inf, 80.0]]), spec)
    hist.counts = np.concatenate([hist.counts, np.zeros(5, dtype=np.int64)])  # trailing zeros
    again = pickle.loads(pickle.dumps(hist))
    np.testing.assert_array_equal(again.counts, hist.counts)
    assert again.counts.dtype == np.int64 and again.counts.flags.writeable
    assert (again.overflow, again.spec) == (hist.overflow, hist.spec) == (2, spec)
    assert len(pickle.dumps(hist)) < hist.counts.nbytes / 4
    empty = pickle.loads(pickle.dumps(LossHistogram()))
    assert empty.counts.size == 0 and empty.total == 0


def test_bin_spec_is_validated() -> None:
    with pytest.raises(ConfigurationError, match="bin_bits"):
        BinSpec(bin_bits=30)
    with pytest.raises(ConfigurationError, match="max_loss"):
        BinSpec(max_loss=math.inf)


# -- seeding and determinism -----------------------------------------------------------------


def test_chunk_seeds_are_distinct_per_stream_chunk_and_direction() -> None:
    states = {
        tuple(chunk_seed(7, s, c, d).generate_state(4))
        for s in (0, 1)
        for c in (0, 1, 2)
        for d in BOTH
    }
    assert len(states) == 12


def test_same_seed_same_bits_other_stream_other_samples() -> None:
    model = SubsampledGaussianToy()
    a = sample(model, [1.0], n_samples=3500, seed=5, checks=(0.5,), config=SMALL)
    b = sample(model, [1.0], n_samples=3500, seed=5, checks=(0.5,), config=SMALL)
    c = sample(
        model, [1.0], n_samples=3500, seed=5, stream=VERIFY_STREAM, checks=(0.5,), config=SMALL
    )
    assert a.to_dict() == b.to_dict()
    assert a.to_dict() != c.to_dict()
    assert a.count == 3500


def test_process_executor_is_bit_identical_to_local() -> None:
    model = SubsampledGaussianToy(rate=0.3)
    kwargs = {"n_samples": 7321, "seed": 11, "checks": (0.2, 1.0)}
    local = sample(model, [0.7, 1.3], config=SMALL, **kwargs)
    pooled = sample(
        model,
        [0.7, 1.3],
        config=EngineConfig(chunk_size=1000, executor=ProcessExecutor(max_workers=2, ahead=1)),
        **kwargs,
    )
    assert local.to_dict() == pooled.to_dict()


def test_get_executor() -> None:
    assert isinstance(get_executor(1), LocalExecutor)
    assert isinstance(get_executor(3), ProcessExecutor)
    assert get_executor(3).workers == 3
    with pytest.raises(ConfigurationError, match="workers"):
        get_executor(0)


def test_resume_from_serialised_partial_tally_is_bit_identical() -> None:
    model = SubsampledGaussianToy()
    task = ChunkTask(model, (1.0,), 5500, 3, PILOT_STREAM, (0.5,), BOTH, 1000)
    whole = sample_chunks(task, range(task.n_chunks), SMALL)
    first = sample_chunks(task, range(3), SMALL)
    restored = SweepTally.from_dict(json.loads(json.dumps(first.to_dict())))
    resumed = sample_chunks(task, range(3, task.n_chunks), SMALL, into=restored)
    assert resumed.to_dict() == whole.to_dict()
    assert task.chunk_length(5) == 500
    assert task.describe()["n_samples"] == 5500


def test_runs_with_the_same_chunk_size_are_prefixes() -> None:
    model = GaussianToy()
    short = sample(model, [1.0], n_samples=2000, seed=9, checks=(1.0,), config=SMALL)
    task = ChunkTask(model, (1.0,), 5000, 9, PILOT_STREAM, (1.0,), BOTH, 1000)
    prefix = sample_chunks(task, range(2), SMALL)
    assert short.to_dict() == prefix.to_dict()


def test_common_random_numbers_across_sigma_and_directions() -> None:
    """A sigma's tally does not depend on the other sigmas or directions of the run."""
    model = SubsampledGaussianToy()
    sweep = sample(model, [2.0, 1.0, 0.5], n_samples=2500, seed=4, checks=(0.3,), config=SMALL)
    alone = sample(model, [1.0], n_samples=2500, seed=4, checks=(0.3,), config=SMALL)
    remove_only = sample(
        model,
        [1.0],
        n_samples=2500,
        seed=4,
        checks=(0.3,),
        directions=(Direction.REMOVE,),
        config=SMALL,
    )
    for d in BOTH:
        assert sweep.tally(1, d).to_dict() == alone.tally(0, d).to_dict()
    assert (
        remove_only.tally(0, Direction.REMOVE).to_dict()
        == alone.tally(0, Direction.REMOVE).to_dict()
    )


def test_array_api_namespace_gives_the_numpy_result() -> None:
    model = GaussianToy()
    kwargs = {"n_samples": 3000, "seed": 2, "checks": (0.5,)}
    ref = sample(model, [1.0], config=EngineConfig(chunk_size=1000), **kwargs)
    strict = sample(
        model,
        [1.0],
        config=EngineConfig(chunk_size=1000, backend=namespace_backend(array_api_strict)),
        **kwargs,
    )
    assert ref.to_dict() == strict.to_dict()
    named = sample(
        model, [1.0], config=EngineConfig(chunk_size=1000, backend=numpy_backend()), **kwargs
    )
    assert ref.to_dict() == named.to_dict()


def test_nan_losses_are_refused() -> None:
    with pytest.raises(MinsepError, match="NaN"):
        sample(NaNToy(), [1.0], n_samples=10, seed=0)


def test_task_is_validated() -> None:
    with pytest.raises(ConfigurationError, match="sigmas"):
        ChunkTask(GaussianToy(), (0.0,), 10, 0)
    with pytest.raises(ConfigurationError, match="seed"):
        ChunkTask(GaussianToy(), (1.0,), 10, -1)
    with pytest.raises(ConfigurationError, match="n_samples"):
        ChunkTask(GaussianToy(), (1.0,), 0, 1)
    with pytest.raises(ConfigurationError, match="checks"):
        ChunkTask(GaussianToy(), (1.0,), 10, 1, checks=(math.inf,))
    with pytest.raises(ConfigurationError, match="directions"):
        ChunkTask(GaussianToy(), (1.0,), 10, 1, directions=(Direction.ADD, Direction.ADD))
    with pytest.raises(ConfigurationError, match="chunk_size"):
        EngineConfig(chunk_size=0)
    with pytest.raises(ConfigurationError, match="index"):
        ChunkTask(GaussianToy(), (1.0,), 10, 1).chunk_length(1)


def test_merging_mismatched_tallies_is_refused() -> None:
    a = SweepTally.empty([1.0], BOTH, (0.5,))
    with pytest.raises(ConfigurationError, match="sigmas"):
        a.merge(SweepTally.empty([2.0], BOTH, (0.5,)))
    with pytest.raises(ConfigurationError, match="checks"):
        a.merge(SweepTally.empty([1.0], BOTH, (0.7,)))


# -- estimates against closed forms ----------------------------------------------------------


def test_delta_estimates_match_the_gaussian_closed_form() -> None:
    model, sigma = GaussianToy(), 0.8
    checks = (0.0, 1.0, 2.0, 3.0)
    tally = sample(
        model,
        [sigma],
        n_samples=200_000,
        seed=1,
        checks=checks,
        config=EngineConfig(chunk_size=50_000),
    )
    for eps in checks:
        est = estimate_delta(tally, eps)
        exact = model.exact_delta(eps, sigma)
        assert abs(est.value - exact) <= 4.5 * est.std_error, (eps, est, exact)
        hist = estimate_delta(tally, eps + 1e-9)  # not a check: histogram path
        assert hist.value >= est.value - 1e-6


def test_directions_are_estimated_separately_and_maxed() -> None:
    model, sigma = SubsampledGaussianToy(rate=0.3), 0.6
    tally = sample(
        model,
        [sigma],
        n_samples=200_000,
        seed=3,
        checks=(0.5, 1.5),
        config=EngineConfig(chunk_size=50_000),
    )
    for i, eps in enumerate((0.5, 1.5)):
        for d in BOTH:
            t = tally.tally(0, d)
            exact = model.exact_delta_direction(eps, sigma, d)
            assert abs(t.delta(i) - exact) <= 4.5 * t.std_error(i) + 1e-12, (eps, d)
        assert estimate_delta(tally, eps).value == pytest.approx(tally.delta(0, i))
    # the two directions genuinely differ here
    r, a = (model.exact_delta_direction(0.5, sigma, d) for d in BOTH)
    assert abs(r - a) > 0.01


def test_epsilon_estimate_matches_closed_form_within_its_error() -> None:
    model, sigma, delta = SubsampledGaussianToy(rate=0.3), 0.6, 1e-2
    tally = sample(
        model, [sigma], n_samples=200_000, seed=8, config=EngineConfig(chunk_size=50_000)
    )
    est = estimate_epsilon(tally, delta)
    exact = model.exact_epsilon(delta, sigma)
    assert est.std_error > 0
    assert abs(est.value - exact) <= 4.5 * est.std_error + BinSpec().width


def test_progress_bar_only_when_asked(capsys: pytest.CaptureFixture[str]) -> None:
    model = GaussianToy()
    sample(model, [1.0], n_samples=2000, seed=0, config=EngineConfig(chunk_size=500))
    assert capsys.readouterr().err == ""  # not a terminal: quiet
    sample(model, [1.0], n_samples=2000, seed=0,
           config=EngineConfig(chunk_size=500, progress=True), description="toy")  # fmt: skip
    err = capsys.readouterr().err
    assert "minsep: toy:" in err and "4,000/4,000 samples" in err  # lines, not a tqdm bar
    assert "\r" not in err
