"""minsep.torch on CPU torch: clipping, the noise's law, resume, training to an accuracy."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402
from torch.utils.data import TensorDataset  # noqa: E402

from minsep.framework.backend import numpy_backend  # noqa: E402
from minsep.framework.errors import CheckpointError, ConfigurationError  # noqa: E402
from minsep.framework.registries import schemes, strategies  # noqa: E402
from minsep.torch import (  # noqa: E402
    NoiseStream,
    PrivacyBudgetError,
    clipped_gradient_sum,
    make_private,
    torch_backend,
)
from minsep.training.data import load_digits, synthetic  # noqa: E402
from minsep.training.private import PrivateRun  # noqa: E402

DATA = synthetic(n_examples=300, n_features=5, n_classes=3, separation=4.0, seed=0)


def quiet(_: str) -> None:
    """Swallow progress lines."""


def mlp(n_in: int, n_out: int, hidden: int = 8, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(n_in, hidden), nn.ReLU(), nn.Linear(hidden, n_out))


def tensors(x: np.ndarray, y: np.ndarray) -> TensorDataset:
    return TensorDataset(torch.as_tensor(x, dtype=torch.float32), torch.as_tensor(y))


def run_for(steps: int = 12, bands: int = 3, sigma: float = 1.3) -> PrivateRun:
    scheme = schemes.get("b_min_sep").from_rate(steps, 0.1, min_sep=bands)
    strategy = strategies.get("banded_toeplitz").for_steps(steps, bands=bands)
    return PrivateRun(scheme, strategy, sigma, DATA.train_size, clip_norm=0.7)


# -- clipping ------------------------------------------------------------------------------


@pytest.mark.parametrize("chunk_size", [None, 3])
def test_clipped_sum_matches_a_per_example_loop(chunk_size: int | None) -> None:
    model = mlp(DATA.n_features, DATA.n_classes, hidden=6, seed=1)
    model[0].bias.requires_grad_(False)  # a frozen parameter gets no gradient and no noise
    x = torch.as_tensor(DATA.x_train[:7] * 3, dtype=torch.float32)
    y = torch.as_tensor(DATA.y_train[:7])
    clip = 0.3
    loss = torch.nn.functional.cross_entropy
    fast = clipped_gradient_sum(model, loss, x, y, clip, chunk_size)
    trainable = [p for p in model.parameters() if p.requires_grad]
    reference = [torch.zeros_like(p) for p in trainable]
    for j in range(7):
        model.zero_grad()
        loss(model(x[j : j + 1]), y[j : j + 1]).backward()
        grads = [p.grad.detach().clone() for p in trainable]
        norm = float(torch.sqrt(sum((g**2).sum() for g in grads)))
        assert norm > clip  # the test exercises clipping
        for acc, g in zip(reference, grads, strict=True):
            acc += g * min(1.0, clip / norm)
    assert len(fast) == len(trainable) == 3
    for a, b in zip(fast, reference, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    empty = clipped_gradient_sum(model, loss, x[:0], y[:0], clip)
    assert all(float(e.abs().sum()) == 0.0 for e in empty)


# -- noise ---------------------------------------------------------------------------------


class _HostDraws:
    """A RandomSource handing the same numpy draws to both backends (as torch or numpy)."""

    def __init__(self, seed: int, to_torch: bool) -> None:
        self.rng = np.random.default_rng(seed)
        self.to_torch = to_torch

    def standard_normal(self, shape: Any) -> Any:
        z = self.rng.standard_normal(tuple(shape))
        return torch.as_tensor(z, dtype=torch.float64) if self.to_torch else z

    def random(self, shape: Any) -> Any:
        raise AssertionError("the noise streams draw normals only")


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("identity", {}),
        ("banded_toeplitz", {"bands": 3}),
        ("blt", {"buffers": 2}),
        ("banded_inverse", {"bands": 3}),
    ],
)
def test_torch_namespace_runs_each_strategys_stream_as_numpy_does(
    name: str, options: dict[str, Any]
) -> None:
    strategy = strategies.get(name).for_steps(10, **options)
    on_torch = strategy.noise((4, 3), 10, _HostDraws(5, True), torch_backend("cpu"))
    on_numpy = strategy.noise((4, 3), 10, _HostDraws(5, False), numpy_backend())
    for a, b in zip(on_torch, on_numpy, strict=True):
        assert isinstance(a, torch.Tensor) and a.dtype == torch.float64
        np.testing.assert_allclose(a.numpy(), b, rtol=1e-12, atol=1e-12)


def test_noise_covariance_is_sigma_squared_times_inverse_gram() -> None:
    """Rows X_i = s·(C⁻¹Z)[i] (s = σ·clip): Cov(X) = s²·(CᵀC)⁻¹ across steps. Each of the
    d = 40,000 coordinates is one independent draw of the n-vector; every entry of the sample
    covariance must lie within 5 standard errors sqrt((Σ_ii Σ_jj + Σ_ij²) / d) of the truth
    (fixed seed; a wrong C, a missing σ or a reused Z fails by far more)."""
    run = run_for(steps=8, bands=3)
    d = 40_000
    param = torch.zeros(d, dtype=torch.float64)
    stream = NoiseStream(run, [param], seed=3)
    rows = torch.stack([row[0] for row in stream]).numpy()  # (n, d)
    assert rows.shape == (8, d)
    C = run.strategy.matrix(8)
    truth = run.noise_std**2 * np.linalg.inv(C.T @ C)
    sample = rows @ rows.T / d
    error = np.sqrt((np.outer(np.diag(truth), np.diag(truth)) + truth**2) / d)
    assert np.all(np.abs(sample - truth) <= 5 * error), np.max(np.abs(sample - truth) / error)
    # and the whitened rows C·X / s are uncorrelated with unit variance
    white = C @ rows / run.noise_std
    np.testing.assert_allclose(white @ white.T / d, np.eye(8), atol=5 * math.sqrt(2 / d))


def test_noise_resumes_bit_identically_and_refuses_another_streams_state() -> None:
    run = run_for()
    params = [torch.zeros(3, 2), torch.zeros(5)]
    whole = [torch.cat([r.reshape(-1) for r in row]) for row in NoiseStream(run, params, 11)]
    first = NoiseStream(run, params, 11)
    for _ in range(5):
        next(first)
    state = first.state_dict()
    resumed = NoiseStream(run, params, 0)
    resumed.load_state_dict(state)
    rest = [torch.cat([r.reshape(-1) for r in row]) for row in resumed]
    assert len(rest) == run.n_steps - 5
    for a, b in zip(whole[5:], rest, strict=True):
        assert torch.equal(a, b)
    other = NoiseStream(run_for(sigma=2.0), params, 11)
    with pytest.raises(CheckpointError, match="noise_std"):
        other.load_state_dict(state)


# -- make_private --------------------------------------------------------------------------


def _private(model: nn.Module, steps: int = 30, **kwargs: Any) -> Any:
    options: dict[str, Any] = {
        "scheme": "b_min_sep",
        "scheme_options": {"min_sep": 3},
        "steps": steps,
        "rate": 0.1,
        "strategy": "banded_toeplitz",
        "strategy_options": {"bands": 3},
        "sigma": 1.0,
        "delta": 1e-5,
        "accountant": "gaussian",
        "seed": 2,
        "say": quiet,
    }
    options.update(kwargs)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.3, momentum=0.9)
    return make_private(model, optimizer, tensors(DATA.x_train, DATA.y_train), **options)


def test_loader_yields_the_schemes_batches_and_steps_are_counted() -> None:
    model = mlp(DATA.n_features, DATA.n_classes)
    private = _private(model, steps=12)
    batches = list(private.loader)
    assert len(batches) == 12 == len(private.loader)
    assert any(x.shape[0] == 0 for x, _ in batches) or all(x.shape[1] == 5 for x, _ in batches)
    for x, y in batches:
        private.optimizer.step(x, y)
    with pytest.raises(PrivacyBudgetError, match="n = 12"):
        private.optimizer.step(*batches[0])
    spent = private.accountant.spent()
    assert spent == private.accountant.whole_run() and spent.steps == 12
    # a prefix is never charged more than the whole run, and less where it can be accounted
    half = private.accountant.prefix(6)
    assert half.epsilon < spent.epsilon and half.delta == spent.delta


def test_an_empty_batch_still_takes_the_noise_step() -> None:
    model = mlp(DATA.n_features, DATA.n_classes)
    private = _private(model, steps=5)
    before = [p.detach().clone() for p in model.parameters()]
    private.optimizer.step(torch.empty((0, 5)), torch.empty((0,), dtype=torch.int64))
    assert private.optimizer.steps_taken == 1
    assert all(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


def test_resume_continues_the_same_run_bit_identically() -> None:
    model = mlp(DATA.n_features, DATA.n_classes)
    private = _private(model)
    for x, y in private.loader:
        private.optimizer.step(x, y)
    final = [p.detach().clone() for p in model.parameters()]

    model = mlp(DATA.n_features, DATA.n_classes)
    private = _private(model)
    for k, (x, y) in enumerate(private.loader):
        private.optimizer.step(x, y)
        if k == 12:
            break
    checkpoint = {"model": model.state_dict(), "private": private.state_dict()}
    checkpoint = {k: _copy(v) for k, v in checkpoint.items()}

    model = mlp(DATA.n_features, DATA.n_classes, seed=99)  # other weights: the load must win
    private = _private(model)
    model.load_state_dict(checkpoint["model"])
    private.load_state_dict(checkpoint["private"])
    assert len(private.loader) == 30 - 13
    for x, y in private.loader:
        private.optimizer.step(x, y)
    assert private.optimizer.steps_taken == 30
    for a, b in zip(final, model.parameters(), strict=True):
        assert torch.equal(a, b)


def _copy(value: Any) -> Any:
    import copy

    return copy.deepcopy(value)


def test_make_private_refuses_both_or_neither_of_epsilon_and_sigma() -> None:
    model = mlp(DATA.n_features, DATA.n_classes)
    with pytest.raises(ConfigurationError, match="epsilon"):
        _private(model, epsilon=1.0)
    with pytest.raises(ConfigurationError, match="epsilon"):
        _private(model, sigma=None)
    with pytest.raises(ConfigurationError, match="sigma"):
        _private(model, sigma=0.0)
    built = schemes.get("poisson").from_rate(20, 0.1)
    with pytest.raises(ConfigurationError, match="steps"):
        _private(model, scheme=built, scheme_options=None, steps=30)
    assert _private(model, scheme=built, scheme_options=None, steps=None).run.n_steps == 20


def test_calibration_prints_the_first_answer_then_the_certified_sigma() -> None:
    lines: list[str] = []
    model = mlp(DATA.n_features, DATA.n_classes)
    private = _private(model, sigma=None, epsilon=4.0, accountant="rdp", say=lines.append)
    assert private.run.calibration is not None and private.run.calibration.certified
    assert any("calibrating sigma" in line for line in lines)
    assert "certified" in lines[-1] or "-DP" in lines[-1]
    assert private.accountant.whole_run().epsilon == 4.0


def test_auto_falls_back_when_an_accountant_cannot_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    from minsep.accountants.monte_carlo import MonteCarloAccountant
    from minsep.framework.errors import CalibrationError

    def cannot(*args: Any, **kwargs: Any) -> Any:
        raise CalibrationError("escort_setups.orders = (2,) is invalid: no order fits")

    monkeypatch.setattr(MonteCarloAccountant, "_calibrate", cannot)
    lines: list[str] = []
    model = mlp(DATA.n_features, DATA.n_classes)
    private = _private(model, sigma=None, epsilon=4.0, accountant="auto", say=lines.append)
    assert any("'monte_carlo' could not calibrate" in line for line in lines)
    assert private.run.calibration is not None
    assert private.run.calibration.accountant in ("rdp", "gaussian")


def test_digits_mlp_trains_to_the_stated_accuracy() -> None:
    """A 32-unit MLP, b-min-sep (b = 4) with 4-band BandMF, σ = 1, 300 steps: >= 85% test
    accuracy on the digits (chance 10%); its certified (ε, δ) is reported."""
    data = load_digits(seed=0)
    model = mlp(data.n_features, data.n_classes, hidden=32)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    private = make_private(
        model,
        optimizer,
        tensors(data.x_train, data.y_train),
        scheme="b_min_sep",
        scheme_options={"min_sep": 4},
        steps=300,
        rate=1 / 16,
        strategy="banded_toeplitz",
        strategy_options={"bands": 4},
        sigma=1.0,
        delta=1e-5,
        accountant="gaussian",
        say=quiet,
    )
    for x, y in private.loader:
        private.optimizer.step(x, y)
    with torch.no_grad():
        logits = model(torch.as_tensor(data.x_test, dtype=torch.float32))
    accuracy = float((logits.argmax(1) == torch.as_tensor(data.y_test)).float().mean())
    assert accuracy >= 0.85, accuracy
    assert math.isfinite(private.accountant.spent().epsilon)
