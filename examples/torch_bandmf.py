"""PyTorch with minsep: BandMF noise and a scheme's sampler in one call (``minsep.torch``).

    pip install 'minsep[torch,data]'     # CPU torch: see the README, "PyTorch"
    python examples/torch_bandmf.py --scheme b_min_sep --min-sep 4 --bands 4 --epsilon 8

What happens (paper §2, docs/math.md §1):

1. ``make_private`` builds the scheme and the strategy from the registries and calibrates σ
   for (ε, δ) by the certified route: a first answer (the deterministic bounds) on stderr at
   once, then the certified σ; with ``--accountant auto`` an accountant that cannot answer is
   skipped with a line saying why, never silently.
2. Its ``loader`` is a DataLoader driven by the scheme's batch sampler: step i is batch B_i
   (variable size, possibly empty).
3. Its ``optimizer.step(x, y)`` clips per-example gradients (torch.func), adds the step's row
   σ·C·(C⁻¹Z)[i] of the strategy's streaming noise (drawn on the parameters' device), divides
   by the expected batch size p₀·|D| and steps the wrapped SGD-with-momentum optimizer.
4. Its ``accountant`` reports the certified (ε, δ) of the steps taken and of the whole run.

``tests/unit/training/test_torch_example.py`` runs :func:`main` at a reduced size.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn
from torch.utils.data import TensorDataset

from minsep.framework.registries import schemes
from minsep.torch import PrivateTraining, make_private
from minsep.training.data import Dataset, load_digits, synthetic


def make_model(n_features: int, n_classes: int, hidden: int = 32, seed: int = 0) -> nn.Module:
    """A one-hidden-layer ReLU network (float32)."""
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(n_features, hidden), nn.ReLU(), nn.Linear(hidden, n_classes))


def accuracy(model: nn.Module, x: Any, y: Any) -> float:
    """Share of rows classified correctly."""
    with torch.no_grad():
        logits = model(torch.as_tensor(x, dtype=torch.float32))
        return float((logits.argmax(dim=1) == torch.as_tensor(y)).float().mean())


def private_training(model: nn.Module, data: Dataset, args: argparse.Namespace) -> PrivateTraining:
    """``make_private`` with the command line's scheme, strategy and target."""
    scheme_options = {}
    if "min_sep" in {p.name for p in schemes.get(args.scheme).parameters()}:
        scheme_options["min_sep"] = args.min_sep or args.bands  # b >= bands for BandMF
    strategy, strategy_options = ("identity", {}) if args.bands == 1 else (args.strategy, {})
    if strategy == "banded_toeplitz":
        strategy_options = {"bands": args.bands}
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    dataset = TensorDataset(
        torch.as_tensor(data.x_train, dtype=torch.float32), torch.as_tensor(data.y_train)
    )
    return make_private(
        model,
        optimizer,
        dataset,
        scheme=args.scheme,
        scheme_options=scheme_options,
        steps=args.steps,
        rate=args.rate,
        strategy=strategy,
        strategy_options=strategy_options,
        epsilon=None if args.sigma is not None else args.epsilon,
        sigma=args.sigma,
        delta=args.delta,
        accountant=args.accountant,
        accountant_options={"samples": args.samples, "seed": args.seed},
        seed=args.seed,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Command line of the example."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", choices=["digits", "synthetic"], default="digits")
    parser.add_argument("--scheme", default="b_min_sep")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--rate", type=float, default=1 / 16)
    parser.add_argument("--min-sep", type=int, help="b (default: --bands)")
    parser.add_argument("--bands", type=int, default=4)
    parser.add_argument("--strategy", default="banded_toeplitz")
    parser.add_argument("--epsilon", type=float, default=8.0)
    parser.add_argument("--sigma", type=float, help="use this sigma (certify its epsilon)")
    parser.add_argument("--delta", type=float, default=1e-5)
    parser.add_argument("--accountant", default="auto")
    parser.add_argument("--samples", type=int, help="Monte Carlo samples (if that accountant)")
    parser.add_argument("--lr", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    data = synthetic(seed=args.seed) if args.data == "synthetic" else load_digits(seed=0)
    model = make_model(data.n_features, data.n_classes, seed=args.seed)
    private = private_training(model, data, args)
    print(f"sigma = {private.run.sigma:.6g}: {private.accountant.whole_run()}")
    started = time.process_time()
    for step, (x, y) in enumerate(private.loader, start=1):
        private.optimizer.step(x, y)
        if step == private.run.n_steps // 2:
            print(f"half way: {private.accountant.spent()}")
    print(
        f"train accuracy {accuracy(model, data.x_train, data.y_train):.4f}  test accuracy "
        f"{accuracy(model, data.x_test, data.y_test):.4f}  ({time.process_time() - started:.1f} "
        f"CPU-s, {private.optimizer.steps_taken} steps); {private.accountant.spent()}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
