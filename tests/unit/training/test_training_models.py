"""Models, clipping, optimiser and data of the minimal trainer."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from minsep.framework.errors import ConfigurationError
from minsep.training.clipping import clip_rows, clipped_sum, row_norms
from minsep.training.data import Dataset, load_digits, standardise, synthetic
from minsep.training.models import MLP, SoftmaxRegression, build_model
from minsep.training.optim import LinearDecay, SGDMomentum

MODELS = [SoftmaxRegression(5, 3), MLP(5, 3, hidden=4)]


def _random_params(model, rng: np.random.Generator) -> np.ndarray:
    return rng.standard_normal(model.n_parameters) * 0.7


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.name)
def test_per_example_gradients_match_central_differences(model, rng) -> None:
    x = rng.standard_normal((4, 5))
    y = np.array([0, 2, 1, 2])
    params = _random_params(model, rng)
    grads, losses = model.per_example_gradients(params, x, y)
    assert grads.shape == (4, model.n_parameters)
    np.testing.assert_allclose(losses, model.example_losses(params, x, y), rtol=1e-12)
    h = 1e-6
    numeric = np.empty_like(grads)
    for p in range(model.n_parameters):
        step = np.zeros(model.n_parameters)
        step[p] = h
        up = model.example_losses(params + step, x, y)
        down = model.example_losses(params - step, x, y)
        numeric[:, p] = (up - down) / (2 * h)
    np.testing.assert_allclose(grads, numeric, atol=1e-7)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.name)
def test_batched_gradients_equal_one_example_at_a_time(model, rng) -> None:
    x = rng.standard_normal((6, 5))
    y = rng.integers(0, 3, size=6)
    params = _random_params(model, rng)
    grads, _ = model.per_example_gradients(params, x, y)
    for j in range(6):
        alone, _ = model.per_example_gradients(params, x[j : j + 1], y[j : j + 1])
        np.testing.assert_allclose(grads[j], alone[0], rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.name)
def test_empty_batch_gives_empty_gradients(model) -> None:
    grads, losses = model.per_example_gradients(
        np.zeros(model.n_parameters), np.zeros((0, 5)), np.zeros(0, dtype=np.int64)
    )
    assert grads.shape == (0, model.n_parameters) and losses.shape == (0,)


def test_softmax_loss_at_zero_is_log_k() -> None:
    model = SoftmaxRegression(5, 3)
    losses = model.example_losses(np.zeros(model.n_parameters), np.ones((2, 5)), np.array([0, 1]))
    np.testing.assert_allclose(losses, np.log(3.0))


def test_softmax_loss_is_stable_for_huge_logits() -> None:
    model = SoftmaxRegression(1, 2)
    params = np.array([1e4, -1e4, 0.0, 0.0])  # W = [[1e4, -1e4]], b = 0
    losses = model.example_losses(params, np.array([[1.0]]), np.array([1]))
    np.testing.assert_allclose(losses, [2e4])


def test_build_model_and_invalid_shapes() -> None:
    assert isinstance(build_model("mlp", 4, 2, hidden=3), MLP)
    assert build_model("softmax", 4, 2).n_parameters == 10
    assert MLP(4, 2, hidden=3).n_parameters == 4 * 3 + 3 + 3 * 2 + 2
    with pytest.raises(ConfigurationError, match="model"):
        build_model("cnn", 4, 2)
    with pytest.raises(ConfigurationError, match="hidden"):
        MLP(4, 2, hidden=0)
    with pytest.raises(ConfigurationError, match="classes"):
        SoftmaxRegression(4, 1)


def test_clip_rows_bounds_norms_and_keeps_small_rows(rng) -> None:
    grads = rng.standard_normal((50, 7)) * rng.uniform(0.01, 5.0, size=(50, 1))
    grads[3] = 0.0
    clipped = clip_rows(grads, 1.0)
    norms = row_norms(grads)
    np.testing.assert_array_less(row_norms(clipped), 1.0 + 1e-12)
    small = norms <= 1.0
    np.testing.assert_array_equal(clipped[small], grads[small])
    big = ~small
    np.testing.assert_allclose(row_norms(clipped[big]), 1.0, rtol=1e-12)
    # direction is kept
    np.testing.assert_allclose(clipped[big] * norms[big, None], grads[big], rtol=1e-12)
    with pytest.raises(ConfigurationError, match="clip_norm"):
        clip_rows(grads, 0.0)


def test_clipped_sum_ignores_masked_padding(rng) -> None:
    grads = rng.standard_normal((4, 3)) * 10
    mask = np.array([True, False, True, False])
    total = clipped_sum(grads, 2.0, mask)
    expected = clip_rows(grads[[0, 2]], 2.0).sum(axis=0)
    np.testing.assert_allclose(total, expected, rtol=1e-12)
    np.testing.assert_allclose(clipped_sum(grads, None, mask), grads[[0, 2]].sum(axis=0))


def test_linear_decay_schedule() -> None:
    schedule = LinearDecay(1.0, 100, final_factor=0.05, start=0.25, end=0.75)
    assert schedule(0) == 1.0
    assert schedule(25) == 1.0
    assert schedule(50) == pytest.approx(0.525)
    assert schedule(75) == pytest.approx(0.05)
    assert schedule(99) == pytest.approx(0.05)
    values = [schedule(i) for i in range(100)]
    assert all(a >= b for a, b in itertools.pairwise(values))
    with pytest.raises(ConfigurationError, match="end"):
        LinearDecay(1.0, 10, start=0.8, end=0.5)
    with pytest.raises(ConfigurationError, match="base"):
        LinearDecay(0.0, 10)


def test_sgd_momentum_is_heavy_ball() -> None:
    opt = SGDMomentum(0.5)
    params = np.array([1.0, 2.0])
    velocity = opt.init(params)
    grad = np.array([1.0, -1.0])
    params, velocity = opt.update(params, velocity, grad, 0.1)
    np.testing.assert_allclose(params, [0.9, 2.1])
    params, velocity = opt.update(params, velocity, grad, 0.1)
    np.testing.assert_allclose(velocity, [1.5, -1.5])
    np.testing.assert_allclose(params, [0.75, 2.25])
    with pytest.raises(ConfigurationError, match="momentum"):
        SGDMomentum(1.0)


def test_synthetic_data_is_seeded_and_balanced() -> None:
    a = synthetic(n_examples=90, n_features=4, n_classes=3, seed=1)
    b = synthetic(n_examples=90, n_features=4, n_classes=3, seed=1)
    np.testing.assert_array_equal(a.x_train, b.x_train)
    assert a.train_size + a.x_test.shape[0] == 90
    assert a.n_features == 4 and a.n_classes == 3
    assert sorted(np.bincount(np.concatenate([a.y_train, a.y_test])).tolist()) == [30, 30, 30]
    c = synthetic(n_examples=90, n_features=4, n_classes=3, seed=2)
    assert not np.array_equal(a.x_train, c.x_train)
    with pytest.raises(ConfigurationError, match="n_classes"):
        synthetic(n_classes=1)


def test_dataset_refuses_inconsistent_parts() -> None:
    with pytest.raises(ConfigurationError, match="y_train"):
        Dataset("bad", np.zeros((3, 2)), np.zeros(4), np.zeros((1, 2)), np.zeros(1), 2)
    with pytest.raises(ConfigurationError, match="y_test"):
        Dataset("bad", np.zeros((3, 2)), np.zeros(3), np.zeros((1, 2)), np.array([5]), 2)


def test_digits_split_and_public_scaling() -> None:
    pytest.importorskip("sklearn")
    data = load_digits(seed=0)
    assert data.train_size + data.x_test.shape[0] == 1797
    assert data.n_features == 64 and data.n_classes == 10
    assert data.x_train.min() >= -1.0 and data.x_train.max() <= 1.0
    assert not data.private_preprocessing
    standard = load_digits(seed=0, scaling="standard")
    assert standard.private_preprocessing
    np.testing.assert_allclose(standard.x_train.mean(axis=0), 0.0, atol=1e-12)
    with pytest.raises(ConfigurationError, match="scaling"):
        load_digits(scaling="minmax")  # type: ignore[arg-type]


def test_standardise_leaves_constant_features_centred() -> None:
    train = np.array([[1.0, 5.0], [3.0, 5.0]])
    test = np.array([[2.0, 6.0]])
    a, b = standardise(train, test)
    np.testing.assert_allclose(a, [[-1.0, 0.0], [1.0, 0.0]])
    np.testing.assert_allclose(b, [[0.0, 1.0]])
