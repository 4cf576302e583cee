"""PyTorch with minsep: a minsep sampler drives the DataLoader, minsep's BandMF noise the update.

    pip install 'minsep[torch,data]'
    python examples/torch_bandmf.py --scheme b_min_sep --min-sep 4 --bands 4 --epsilon 8

What happens (paper §2, docs/math.md §1):

1. ``build_run`` builds the scheme and the banded Toeplitz strategy from the registries and asks
   an accountant for the noise multiplier σ that makes the run (ε, δ)-DP. The resulting
   :class:`~minsep.training.private.PrivateRun` is the only place these parameters live.
2. ``make_loader`` hands the run's scheme to ``DataLoader(batch_sampler=SchemeBatchSampler)``:
   step i of the loader is batch B_i of the scheme (variable size, possibly empty).
3. ``private_step`` computes per-example gradients with ``torch.func.vmap(grad(...))``, clips
   each to norm C, sums them, adds the step's row σ·C·(C⁻¹Z)[i] of minsep's streaming
   correlated noise, divides by the *expected* batch size p₀|D| (never the realised one) and
   takes an SGD-with-momentum step.

The functions are importable (``tests/unit/test_torch_example.py`` calls them).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np
import torch
from torch import nn
from torch.func import functional_call, grad, vmap
from torch.nn import functional
from torch.utils.data import DataLoader, TensorDataset

from minsep.framework.backend import numpy_backend
from minsep.framework.registries import schemes, strategies
from minsep.framework.setup import build_accountant, select_accountant
from minsep.schemes.torch_adapter import SchemeBatchSampler
from minsep.training.data import Dataset, load_digits, synthetic
from minsep.training.optim import LinearDecay
from minsep.training.private import PrivateRun


def build_run(
    dataset_size: int,
    *,
    scheme: str = "b_min_sep",
    steps: int = 300,
    rate: float = 1 / 16,
    min_sep: int | None = 4,
    bands: int = 4,
    epsilon: float | None = 8.0,
    delta: float = 1e-5,
    accountant: str = "auto",
    clip_norm: float = 1.0,
    accountant_options: dict[str, Any] | None = None,
) -> PrivateRun:
    """Scheme + strategy from the registries and σ calibrated for (ε, δ); ``epsilon=None``
    gives the non-private baseline (no clipping, no noise)."""
    options = {} if min_sep is None else {"min_sep": min_sep}
    the_scheme = schemes.get(scheme).from_rate(steps, rate, **options)
    if bands == 1:
        the_strategy = strategies.get("identity").for_steps(steps)
    else:
        the_strategy = strategies.get("banded_toeplitz").for_steps(steps, bands=bands)
    if epsilon is None:
        return PrivateRun.non_private(the_scheme, the_strategy, dataset_size=dataset_size)
    chosen = select_accountant(
        accountant,
        the_scheme,
        the_strategy,
        factory=lambda name: build_accountant(name, accountant_options, strict=False),
    )
    return PrivateRun.calibrated(
        the_scheme,
        the_strategy,
        chosen,
        epsilon=epsilon,
        delta=delta,
        dataset_size=dataset_size,
        clip_norm=clip_norm,
    )


def make_model(n_features: int, n_classes: int, hidden: int = 32, seed: int = 0) -> nn.Module:
    """A one-hidden-layer ReLU network (float32)."""
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(n_features, hidden), nn.ReLU(), nn.Linear(hidden, n_classes))


def tensors(x: np.ndarray, y: np.ndarray) -> TensorDataset:
    """A TensorDataset of float32 features and int64 labels."""
    return TensorDataset(torch.as_tensor(x, dtype=torch.float32), torch.as_tensor(y))


def collate_allowing_empty(n_features: int) -> Callable[[list[Any]], tuple[Any, Any]]:
    """Stack (x, y) pairs; an empty batch (possible under Poisson-like sampling) becomes empty
    tensors, so the step still happens and adds its noise."""

    def collate(items: list[Any]) -> tuple[Any, Any]:
        if not items:
            return torch.empty((0, n_features)), torch.empty((0,), dtype=torch.int64)
        xs, ys = zip(*items, strict=True)
        return torch.stack(xs), torch.stack(ys)

    return collate


def make_loader(dataset: TensorDataset, run: PrivateRun, seed: int) -> DataLoader:
    """``DataLoader(batch_sampler=...)`` over the run's scheme; one pass = ``run.n_steps`` steps."""
    sampler = SchemeBatchSampler(scheme=run.scheme, population=run.dataset_size, seed=seed)
    n_features = int(dataset.tensors[0].shape[1])
    return DataLoader(dataset, batch_sampler=sampler, collate_fn=collate_allowing_empty(n_features))


class CorrelatedNoise:
    """σ·C·(C⁻¹Z)[i] for i = 1..n over all parameters, shaped like each parameter tensor.

    Streams minsep's banded recursion (memory O(bands · #parameters)) from ``run.noise``.
    """

    def __init__(
        self, run: PrivateRun, parameters: Sequence[torch.Tensor], seed: np.random.SeedSequence
    ) -> None:
        self.shapes = [p.shape for p in parameters]
        self.sizes = [p.numel() for p in parameters]
        backend = numpy_backend()
        self._rows = run.noise((sum(self.sizes),), backend.rng(seed), backend)

    def __iter__(self) -> CorrelatedNoise:
        return self

    def __next__(self) -> list[torch.Tensor]:
        flat = torch.from_numpy(np.ascontiguousarray(next(self._rows)))
        parts = torch.split(flat, self.sizes)
        return [part.reshape(shape) for part, shape in zip(parts, self.shapes, strict=True)]


def per_example_gradients(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> list[Any]:
    """∇_θ ℓ(θ; x_j, y_j) for every row j, one tensor (m, *p.shape) per parameter p."""
    params = {name: p.detach() for name, p in model.named_parameters()}

    def loss_one(p: dict[str, torch.Tensor], xi: torch.Tensor, yi: torch.Tensor) -> Any:
        logits = functional_call(model, p, (xi.unsqueeze(0),))
        return functional.cross_entropy(logits, yi.unsqueeze(0))

    per_example = vmap(grad(loss_one), in_dims=(None, 0, 0))(params, x, y)
    return [per_example[name] for name in params]


def clipped_gradient_sum(
    model: nn.Module, x: torch.Tensor, y: torch.Tensor, clip_norm: float | None
) -> list[torch.Tensor]:
    """Σ_j clip(∇ℓ_j, C) with clip(g, C) = g·min(1, C/‖g‖) over all parameters jointly."""
    if x.shape[0] == 0:
        return [torch.zeros_like(p) for p in model.parameters()]
    grads = per_example_gradients(model, x, y)
    if clip_norm is None:
        return [g.sum(dim=0) for g in grads]
    squared = sum(g.reshape(g.shape[0], -1).pow(2).sum(dim=1) for g in grads)
    norms = torch.sqrt(squared)
    factors = clip_norm / torch.clamp(norms, min=clip_norm)
    return [(g * factors.reshape(-1, *([1] * (g.dim() - 1)))).sum(dim=0) for g in grads]


def private_step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    x: torch.Tensor,
    y: torch.Tensor,
    run: PrivateRun,
    noise: list[torch.Tensor] | None,
) -> None:
    """p.grad ← (Σ clipped per-example gradients + noise) / (p₀·|D|); then ``optimizer.step``."""
    sums = clipped_gradient_sum(model, x, y, run.clip_norm)
    for index, (param, total) in enumerate(zip(model.parameters(), sums, strict=True)):
        if noise is not None:
            total = total + noise[index].to(total.dtype)
        param.grad = total / run.expected_batch_size
    optimizer.step()


def accuracy(model: nn.Module, x: np.ndarray, y: np.ndarray) -> float:
    """Share of rows classified correctly."""
    with torch.no_grad():
        logits = model(torch.as_tensor(x, dtype=torch.float32))
        return float((logits.argmax(dim=1) == torch.as_tensor(y)).float().mean())


def train(
    data: Dataset,
    run: PrivateRun,
    *,
    lr: float = 0.5,
    momentum: float = 0.9,
    hidden: int = 32,
    seed: int = 0,
) -> dict[str, float]:
    """Train a fresh MLP for ``run.n_steps`` steps; returns train/test accuracy and steps."""
    started = time.perf_counter()
    loader_seed, noise_seed = np.random.SeedSequence(seed).spawn(2)
    model = make_model(data.n_features, data.n_classes, hidden, seed)
    loader = make_loader(
        tensors(data.x_train, data.y_train), run, int(loader_seed.generate_state(1)[0])
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    schedule = LinearDecay(lr, run.n_steps)  # η → η/20 over steps n/4 .. 3n/4 (paper §7.2)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: schedule(step) / lr)
    noise = CorrelatedNoise(run, list(model.parameters()), noise_seed) if run.private else None
    steps = 0
    for x, y in loader:
        private_step(model, optimizer, x, y, run, next(noise) if noise is not None else None)
        scheduler.step()
        steps += 1
    if steps != run.n_steps:
        raise RuntimeError(
            f"the loader gave {steps} batches; the accountant analysed {run.n_steps}"
        )
    return {
        "train_accuracy": accuracy(model, data.x_train, data.y_train),
        "test_accuracy": accuracy(model, data.x_test, data.y_test),
        "steps": float(steps),
        "seconds": time.perf_counter() - started,
    }


def _fields(cls: type) -> set[str]:
    return {f.name for f in attrs.fields(cls)} if attrs.has(cls) else set()


def main(argv: Sequence[str] | None = None) -> int:
    """Command line of the example."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", choices=["digits", "synthetic"], default="digits")
    parser.add_argument("--scheme", default="b_min_sep")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--rate", type=float, default=1 / 16)
    parser.add_argument(
        "--min-sep", type=int, help="b (default: --bands, where the scheme takes a min-sep)"
    )
    parser.add_argument("--bands", type=int, default=4)
    parser.add_argument("--epsilon", type=float, default=8.0)
    parser.add_argument("--delta", type=float, default=1e-5)
    parser.add_argument("--accountant", default="auto")
    parser.add_argument("--samples", type=int, help="Monte Carlo samples (if that accountant)")
    parser.add_argument("--lr", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--non-private", action="store_true")
    args = parser.parse_args(argv)

    data = synthetic(seed=args.seed) if args.data == "synthetic" else load_digits(seed=0)
    min_sep = args.min_sep
    if min_sep is None and "min_sep" in _fields(schemes.get(args.scheme)):
        min_sep = args.bands  # the b-min-sep analysis needs b >= bands
    run = build_run(
        data.train_size,
        scheme=args.scheme,
        steps=args.steps,
        rate=args.rate,
        min_sep=min_sep,
        bands=args.bands,
        epsilon=None if args.non_private else args.epsilon,
        delta=args.delta,
        accountant=args.accountant,
        accountant_options={"samples": args.samples},
    )
    if run.calibration is not None:
        print(
            f"sigma = {run.sigma:.6g} ({run.calibration.accountant}) for "
            f"(epsilon={args.epsilon:g}, delta={args.delta:g})"
        )
    else:
        print("non-private baseline: no clipping, no noise")
    result = train(data, run, lr=args.lr, seed=args.seed)
    print(
        f"train accuracy {result['train_accuracy']:.4f}  test accuracy "
        f"{result['test_accuracy']:.4f}  ({result['seconds']:.1f} s, {int(result['steps'])} steps)"
    )
    return 0 if math.isfinite(result["test_accuracy"]) else 1


if __name__ == "__main__":
    sys.exit(main())
