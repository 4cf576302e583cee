"""The PyTorch example (examples/torch_bandmf.py); runs only where torch is installed."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from minsep.framework.backend import numpy_backend  # noqa: E402
from minsep.training.data import synthetic  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "torch_bandmf.py"
DATA = synthetic(n_examples=300, n_features=5, n_classes=3, separation=4.0, seed=0)


@pytest.fixture(scope="module")
def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("torch_bandmf_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _run(example: ModuleType, **kwargs):  # type: ignore[no-untyped-def]
    options = {
        "scheme": "b_min_sep",
        "steps": 40,
        "rate": 0.1,
        "min_sep": 3,
        "bands": 3,
        "epsilon": 8.0,
        "delta": 1e-5,
        "accountant": "gaussian",
    }
    options.update(kwargs)
    return example.build_run(DATA.train_size, **options)


def test_loader_yields_the_schemes_batches(example: ModuleType) -> None:
    run = _run(example)
    dataset = example.tensors(DATA.x_train, DATA.y_train)
    loader = example.make_loader(dataset, run, seed=4)
    batches = list(loader)
    assert len(batches) == run.n_steps
    expected = list(run.scheme.batches(run.dataset_size, np.random.default_rng([4, 0])))
    for (x, y), index in zip(batches, expected, strict=True):
        np.testing.assert_array_equal(y.numpy(), DATA.y_train[index])
        np.testing.assert_allclose(x.numpy(), DATA.x_train[index].astype(np.float32))


def test_clipped_sum_matches_a_per_example_loop(example: ModuleType) -> None:
    model = example.make_model(DATA.n_features, DATA.n_classes, hidden=6, seed=1)
    x = torch.as_tensor(DATA.x_train[:7] * 3, dtype=torch.float32)
    y = torch.as_tensor(DATA.y_train[:7])
    clip = 0.3
    fast = example.clipped_gradient_sum(model, x, y, clip)
    reference = [torch.zeros_like(p) for p in model.parameters()]
    for j in range(7):
        model.zero_grad()
        torch.nn.functional.cross_entropy(model(x[j : j + 1]), y[j : j + 1]).backward()
        grads = [p.grad.detach().clone() for p in model.parameters()]
        norm = torch.sqrt(sum((g**2).sum() for g in grads))
        assert norm > clip  # the test exercises clipping
        for acc, g in zip(reference, grads, strict=True):
            acc += g * min(1.0, clip / float(norm))
    for a, b in zip(fast, reference, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    empty = example.clipped_gradient_sum(model, x[:0], y[:0], clip)
    assert all(float(e.abs().sum()) == 0.0 for e in empty)


def test_noise_is_the_runs_correlated_noise(example: ModuleType) -> None:
    run = _run(example)
    model = example.make_model(DATA.n_features, DATA.n_classes, hidden=6)
    params = list(model.parameters())
    seed = np.random.SeedSequence(9)
    noise = example.CorrelatedNoise(run, params, seed)
    backend = numpy_backend()
    total = sum(p.numel() for p in params)
    reference = run.noise((total,), backend.rng(np.random.SeedSequence(9)), backend)
    for _ in range(run.n_steps):
        parts = next(noise)
        assert [tuple(p.shape) for p in parts] == [tuple(p.shape) for p in params]
        flat = torch.cat([p.reshape(-1) for p in parts]).numpy()
        np.testing.assert_allclose(flat, next(reference), rtol=1e-12)


def test_private_training_beats_chance(example: ModuleType) -> None:
    run = _run(example, steps=80, rate=0.2, min_sep=3, bands=3)
    assert run.sigma > 0
    result = example.train(DATA, run, lr=0.5, seed=0)
    assert result["steps"] == 80
    assert result["test_accuracy"] > 0.7  # chance is 1/3
