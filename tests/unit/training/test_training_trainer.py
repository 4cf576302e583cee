"""The trainer loop, its config and record, and the PrivateRun wiring."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import attrs
import numpy as np
import pytest

from minsep.framework import validation as v
from minsep.framework.backend import numpy_backend
from minsep.framework.errors import ConfigurationError
from minsep.framework.interfaces import Accountant, Question, SamplingScheme, Strategy
from minsep.framework.results import CalibrationResult
from minsep.training.data import synthetic
from minsep.training.private import PrivateRun
from minsep.training.trainer import StepInfo, TrainingConfig, TrainingRecord, train


@attrs.frozen
class _Poisson(SamplingScheme):
    """Stand-in Poisson sampler."""

    steps: int = attrs.field(validator=v.positive_int())
    p: float = attrs.field(validator=v.probability())

    @property
    def n_steps(self) -> int:
        return self.steps

    @property
    def rate(self) -> float:
        return self.p

    def batches(self, population: Any, rng: np.random.Generator) -> Iterator[np.ndarray]:
        for _ in range(self.steps):
            yield np.flatnonzero(rng.random(population) < self.p).astype(np.int64)


@attrs.frozen
class _Padded(SamplingScheme):
    """Stand-in: fixed batches with padding slots (-1) and a declared dataset size."""

    fixed: tuple[tuple[int, ...], ...]
    dataset_size: int

    @property
    def n_steps(self) -> int:
        return len(self.fixed)

    @property
    def rate(self) -> float:
        return sum(sum(i >= 0 for i in b) for b in self.fixed) / self.n_steps / self.dataset_size

    def batches(self, population: Any, rng: np.random.Generator) -> Iterator[np.ndarray]:
        for b in self.fixed:
            yield np.asarray(b, dtype=np.int64)


@attrs.frozen
class _Banded(Strategy):
    """Stand-in banded Toeplitz strategy with a direct (dense) noise stream."""

    coeffs: tuple[float, ...] = (1.0,)

    @property
    def coefficients(self) -> np.ndarray:
        c = np.asarray(self.coeffs, dtype=float)
        return c / np.linalg.norm(c)

    def matrix(self, n_steps: int) -> np.ndarray:
        C = np.zeros((n_steps, n_steps))
        for j, cj in enumerate(self.coefficients):
            C += cj * np.eye(n_steps, k=-j)
        return C

    def prefix_mse(self, n_steps: int) -> float:
        raise NotImplementedError

    def sensitivity(self, n_steps: int, min_sep: int, max_participations: int) -> float:
        return math.sqrt(max_participations)

    def noise(self, shape, n_steps, rng, backend) -> Iterator[Any]:
        z = np.stack([rng.standard_normal(shape) for _ in range(n_steps)])
        w = np.linalg.solve(self.matrix(n_steps), z.reshape(n_steps, -1))
        for i in range(n_steps):
            yield w[i].reshape(shape)


@attrs.define
class _Recording(Accountant):
    """Stand-in accountant: returns a fixed sigma and records what it analysed."""

    sigma: float = 1.5
    seen: list[tuple[SamplingScheme, Strategy]] = attrs.field(factory=list)

    def why_not(self, scheme: SamplingScheme, strategy: Strategy) -> str | None:
        return None

    def _epsilon(self, question: Question) -> Any:
        raise NotImplementedError

    def _delta(self, question: Question) -> Any:
        raise NotImplementedError

    def _calibrate(self, question: Question) -> CalibrationResult:
        scheme, strategy = question.scheme, question.strategy
        self.seen.append((scheme, strategy))
        return CalibrationResult(
            accountant="recording",
            method="exact",
            scheme=scheme.public_parameters(),
            strategy={"strategy": type(strategy).__name__, "bands": strategy.bands},
            sigma=self.sigma,
            epsilon=question.epsilon,
            delta=question.delta,
        )


DATA = synthetic(n_examples=400, n_features=6, n_classes=3, separation=4.0, seed=0)


def _run(sigma: float = 0.0, steps: int = 60, rate: float = 0.1) -> PrivateRun:
    scheme = _Poisson(steps, rate)
    if sigma == 0:
        return PrivateRun.non_private(scheme, _Banded(), dataset_size=DATA.train_size)
    return PrivateRun(scheme, _Banded((1.0, 0.5)), sigma, DATA.train_size, 1.0)


@pytest.mark.parametrize("model", ["softmax", "mlp"])
def test_non_private_training_decreases_the_loss(model: str) -> None:
    record = train(TrainingConfig(model=model, learning_rate=0.5, hidden=8), DATA, _run())
    losses = [loss for _, loss in record.loss_curve]
    assert losses[-1] < 0.6 * math.log(3)
    assert losses[-1] < losses[0]
    assert record.test_accuracy > 0.9
    assert record.n_steps == 60


def test_private_training_learns_at_moderate_noise() -> None:
    record = train(TrainingConfig(learning_rate=1.0), DATA, _run(sigma=1.0, steps=100, rate=0.2))
    assert record.test_accuracy > 0.8
    assert record.run["sigma"] == 1.0 and record.run["private"]


def test_same_seed_same_record_different_seed_differs() -> None:
    run = _run(sigma=2.0)
    a = train(TrainingConfig(seed=3), DATA, run)
    b = train(TrainingConfig(seed=3), DATA, run)
    c = train(TrainingConfig(seed=4), DATA, run)
    assert a.loss_curve == b.loss_curve
    assert a.loss_curve != c.loss_curve


def test_update_is_clipped_sum_plus_noise_over_expected_batch_size() -> None:
    """Replay the loop by hand with plain SGD: the update divides by p0|D|, not |B_i|."""
    run = _run(sigma=0.7, steps=5, rate=0.2)
    config = TrainingConfig(
        momentum=0.0, learning_rate=0.3, final_lr_factor=1.0, seed=2, eval_points=0
    )
    steps: list[StepInfo] = []
    record = train(config, DATA, run, observer=steps.append)
    from minsep.training.clipping import clip_rows
    from minsep.training.models import SoftmaxRegression

    model = SoftmaxRegression(DATA.n_features, DATA.n_classes)
    params = np.zeros(model.n_parameters)
    divisor = run.scheme.rate * DATA.train_size
    for info in steps:
        grads, _ = model.per_example_gradients(
            params, DATA.x_train[info.batch], DATA.y_train[info.batch]
        )
        noisy = clip_rows(grads, 1.0).sum(axis=0) + info.noise
        params = params - 0.3 * noisy / divisor
    acc = float(np.mean(model.predict(params, DATA.x_test) == DATA.y_test))
    assert acc == record.test_accuracy
    assert record.mean_batch_size == np.mean([s.batch.size for s in steps])


def test_padding_slots_contribute_nothing() -> None:
    """Batches with -1 padding train exactly like the same batches without it."""
    size = DATA.train_size
    padded = _Padded(((0, 1, -1, -1), (2, -1, -1, -1), (3, 4, 5, -1)), size)
    plain = _Padded(((0, 1), (2,), (3, 4, 5)), size)
    assert padded.rate == plain.rate
    config = TrainingConfig(seed=1)
    a = train(config, DATA, PrivateRun(padded, _Banded(), 0.5, size, 1.0))
    b = train(config, DATA, PrivateRun(plain, _Banded(), 0.5, size, 1.0))
    assert a.train_loss == b.train_loss
    assert a.mean_batch_size == 2.0


def test_scheme_yielding_wrong_number_of_batches_is_refused() -> None:
    @attrs.frozen
    class Short(_Poisson):
        def batches(self, population: Any, rng: np.random.Generator) -> Iterator[np.ndarray]:
            yield from list(super().batches(population, rng))[:-1]

    @attrs.frozen
    class Long(_Poisson):
        def batches(self, population: Any, rng: np.random.Generator) -> Iterator[np.ndarray]:
            yield from super().batches(population, rng)
            yield np.arange(3)

    for cls in (Short, Long):
        run = PrivateRun(cls(10, 0.1), _Banded(), 1.0, DATA.train_size)
        with pytest.raises(ConfigurationError, match="n_steps = 10"):
            train(TrainingConfig(), DATA, run)


def test_privacy_parameters_flow_from_one_run_object() -> None:
    """Batches, noise, steps and sigma are exactly those the accountant analysed."""
    accountant = _Recording(sigma=1.3)
    scheme = _Poisson(40, 0.1)
    strategy = _Banded((1.0, 0.6, 0.3))
    run = PrivateRun.calibrated(
        scheme,
        strategy,
        accountant,
        epsilon=8.0,
        delta=1e-5,
        dataset_size=DATA.train_size,
        clip_norm=0.5,
    )
    assert accountant.seen == [(scheme, strategy)]
    assert run.scheme is scheme and run.strategy is strategy
    assert run.sigma == 1.3 and run.calibration is not None

    seen: list[StepInfo] = []
    config = TrainingConfig(seed=11)
    record = train(config, DATA, run, observer=seen.append)
    assert len(seen) == scheme.n_steps == record.n_steps
    # the batches are the scheme's, from the trainer's batch stream
    _, batch_seed, noise_seed = np.random.SeedSequence(11).spawn(3)
    expected = list(scheme.batches(DATA.train_size, np.random.default_rng(batch_seed)))
    for info, batch in zip(seen, expected, strict=True):
        np.testing.assert_array_equal(info.batch, batch)
    # the noise is sigma * clip * (C^-1 Z) with the accounted strategy (3 bands)
    backend = numpy_backend()
    rng = backend.rng(noise_seed)
    n_params = seen[0].noise.shape[0]
    zs = np.stack([rng.standard_normal((n_params,)) for _ in range(scheme.n_steps)])
    expected_noise = 1.3 * 0.5 * np.linalg.solve(strategy.matrix(scheme.n_steps), zs)
    np.testing.assert_allclose(np.stack([s.noise for s in seen]), expected_noise, rtol=1e-10)
    assert record.run["accounted"] == {
        "n_steps": 40,
        "rate": 0.1,
        "min_separation": 1,
        "bands": 3,
        "sigma": 1.3,
    }
    assert record.run["calibration"]["sigma"] == 1.3


def test_run_refuses_a_calibration_for_other_parameters() -> None:
    accountant = _Recording(sigma=1.0)
    cal = accountant.calibrate(_Poisson(40, 0.1), _Banded((1.0, 0.5)), 4.0, 1e-5)
    with pytest.raises(ConfigurationError, match="sigma"):
        PrivateRun(_Poisson(40, 0.1), _Banded((1.0, 0.5)), 2.0, 100, 1.0, cal)
    with pytest.raises(ConfigurationError, match="scheme"):
        PrivateRun(_Poisson(41, 0.1), _Banded((1.0, 0.5)), 1.0, 100, 1.0, cal)
    with pytest.raises(ConfigurationError, match="bands"):
        PrivateRun(_Poisson(40, 0.1), _Banded((1.0,)), 1.0, 100, 1.0, cal)
    uncertified = attrs.evolve(cal, certified=False)
    with pytest.raises(ConfigurationError, match="calibration"):
        PrivateRun(_Poisson(40, 0.1), _Banded((1.0, 0.5)), 1.0, 100, 1.0, uncertified)


def test_run_validation_names_the_parameter() -> None:
    scheme, strategy = _Poisson(5, 0.1), _Banded()
    with pytest.raises(ConfigurationError, match="sigma"):
        PrivateRun(scheme, strategy, -1.0, 100)
    with pytest.raises(ConfigurationError, match="clip_norm"):
        PrivateRun(scheme, strategy, 1.0, 100, None)
    with pytest.raises(ConfigurationError, match="dataset_size"):
        PrivateRun(scheme, strategy, 1.0, 0)
    with pytest.raises(ConfigurationError, match="dataset_size"):
        PrivateRun(_Padded(((0,),), 50), strategy, 1.0, 49)
    with pytest.raises(ConfigurationError, match="sigma"):
        next(
            PrivateRun.non_private(scheme, strategy, dataset_size=10).noise(
                (3,), numpy_backend().rng(np.random.SeedSequence(0)), numpy_backend()
            )
        )
    with pytest.raises(ConfigurationError, match="dataset_size"):
        train(TrainingConfig(), DATA, PrivateRun(scheme, strategy, 1.0, DATA.train_size + 1))


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"model": "cnn"}, "model"),
        ({"hidden": 0}, "hidden"),
        ({"learning_rate": 0.0}, "learning_rate"),
        ({"momentum": 1.0}, "momentum"),
        ({"final_lr_factor": 0.0}, "final_lr_factor"),
        ({"decay_start": 0.9, "decay_end": 0.5}, "decay_end"),
        ({"seed": -1}, "seed"),
        ({"backend": "jax"}, "backend"),
        ({"eval_points": -1}, "eval_points"),
    ],
)
def test_invalid_config_names_the_parameter(kwargs: dict[str, Any], parameter: str) -> None:
    with pytest.raises(ConfigurationError, match=parameter):
        TrainingConfig(**kwargs)


def test_record_json_round_trip() -> None:
    record = train(TrainingConfig(eval_points=4), DATA, _run(sigma=1.0, steps=12))
    text = record.to_json()
    again = TrainingRecord.from_json(text)
    assert again == record
    assert json.loads(text)["run"]["scheme"]["scheme"] == "_Poisson"
    assert len(record.loss_curve) == 3


def test_real_components_train_with_exactly_the_accounted_parameters() -> None:
    """Issue acceptance: batches, noise, steps and sigma are what the accountant analysed.

    b-min-sep (p0 = 0.1, b = 4, n = 200) with 4-band BandMF, calibrated by a registered
    accountant; the trainer's batches have empirical rate ~ p0 and gaps >= b, its noise is
    sigma * C * strategy.noise (4 bands), it runs n steps, and sigma is the calibrated one.
    """
    from minsep.framework.registries import accountants, schemes, strategies

    n, p0, b, k, clip = 200, 0.1, 4, 4, 0.8
    scheme = schemes.get("b_min_sep").from_rate(n, p0, min_sep=b)
    strategy = strategies.get("banded_toeplitz").for_steps(n, bands=k)
    run = PrivateRun.calibrated(
        scheme,
        strategy,
        accountants.get("gaussian")(),
        epsilon=8.0,
        delta=1e-5,
        dataset_size=DATA.train_size,
        clip_norm=clip,
    )
    cal = run.calibration
    assert cal is not None and cal.sigma == run.sigma > 0
    analysed = cal.scheme
    assert (analysed["n_steps"], analysed["rate"], analysed["min_sep"]) == (n, p0, b)
    assert cal.strategy["bands"] == k == run.strategy.bands

    seen: list[StepInfo] = []
    record = train(TrainingConfig(seed=5), DATA, run, observer=seen.append)
    assert len(seen) == n == record.n_steps
    sizes = np.array([info.batch.size for info in seen])
    assert sizes.sum() / (n * DATA.train_size) == pytest.approx(p0, abs=0.01)
    last: dict[int, int] = {}
    for info in seen:
        for j in info.batch.tolist():
            assert info.step - last.get(j, -b) >= b
            last[j] = info.step

    backend = numpy_backend()
    noise_seed = np.random.SeedSequence(5).spawn(3)[2]
    n_params = seen[0].noise.shape[0]
    reference = np.stack(list(strategy.noise((n_params,), n, backend.rng(noise_seed), backend)))
    np.testing.assert_allclose(
        np.stack([info.noise for info in seen]), cal.sigma * clip * reference, rtol=1e-12
    )
    assert record.run["accounted"]["sigma"] == cal.sigma
    assert record.run["accounted"]["bands"] == k


def test_truncated_padded_batches_train_on_real_examples_only() -> None:
    from minsep.framework.registries import schemes

    cap = 48  # expected batch 45: some batches are padded, some truncated
    scheme = schemes.get("truncated").from_rate(
        30, 0.1, min_sep=2, max_batch_size=cap, dataset_size=DATA.train_size
    )
    run = PrivateRun(scheme, _Banded((1.0, 0.5)), 1.0, DATA.train_size)
    seen: list[StepInfo] = []
    record = train(TrainingConfig(), DATA, run, observer=seen.append)
    assert all(info.batch.size == cap for info in seen)
    assert any((info.batch < 0).any() for info in seen)  # padding occurred
    real = [int((info.batch >= 0).sum()) for info in seen]
    assert record.mean_batch_size == pytest.approx(np.mean(real))
    assert run.expected_batch_size == pytest.approx(0.1 * DATA.train_size)


@pytest.mark.gpu
def test_cupy_backend_matches_numpy_without_noise() -> None:
    """Same batches, no noise: the cupy run reproduces the numpy run up to rounding."""
    run = _run(steps=30)
    host = train(TrainingConfig(model="mlp", hidden=8, backend="numpy"), DATA, run)
    device = train(TrainingConfig(model="mlp", hidden=8, backend="cupy"), DATA, run)
    assert device.backend == "cupy"
    assert device.train_loss == pytest.approx(host.train_loss, rel=1e-9)
    noisy = train(TrainingConfig(backend="cupy"), DATA, _run(sigma=1.0, steps=30))
    assert math.isfinite(noisy.train_loss)
