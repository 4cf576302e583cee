"""Per-example clipped gradient sums with ``torch.func`` (paper §2, docs/math.md §1).

``Σ_j clip(∇_θ ℓ(θ; x_j, y_j), C)`` with ``clip(g, C) = g · min(1, C / ‖g‖₂)``, the norm taken
over all trainable parameters jointly: adding or removing one example moves the sum by at most
C, the sensitivity the accountant assumed. The per-example gradients come from
``vmap(grad(loss of one example))``; ``chunk_size`` bounds how many are held at once (memory
O(chunk · #parameters)), the sum being the same whatever the chunking up to float rounding.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn
from torch.func import functional_call, grad, vmap

__all__ = ["Loss", "clipped_gradient_sum", "per_example_gradients"]

#: ``loss(outputs, targets) -> scalar`` for a batch of one (e.g. ``F.cross_entropy``).
Loss = Callable[[Any, Any], torch.Tensor]


def _as_args(inputs: Any) -> tuple[Any, ...]:
    return inputs if isinstance(inputs, tuple) else (inputs,)


def per_example_gradients(
    model: nn.Module, loss: Loss, inputs: Any, targets: torch.Tensor
) -> list[torch.Tensor]:
    """∇_θ ℓ(θ; x_j, y_j) for every row j: one ``(m, *p.shape)`` tensor per trainable p.

    ``inputs``: a tensor (or a tuple of tensors, the model's positional arguments) whose first
    dimension indexes the examples; ``targets`` likewise.
    """
    trainable = {name: p.detach() for name, p in model.named_parameters() if p.requires_grad}
    frozen = {name: p.detach() for name, p in model.named_parameters() if not p.requires_grad}
    frozen.update(dict(model.named_buffers()))

    def loss_one(params: dict[str, torch.Tensor], xs: tuple[Any, ...], y: Any) -> torch.Tensor:
        batch = tuple(x.unsqueeze(0) for x in xs)
        outputs = functional_call(model, (params, frozen), batch)
        return loss(outputs, y.unsqueeze(0))

    per_example = vmap(grad(loss_one), in_dims=(None, 0, 0))(trainable, _as_args(inputs), targets)
    return [per_example[name] for name in trainable]


def clipped_gradient_sum(
    model: nn.Module,
    loss: Loss,
    inputs: Any,
    targets: torch.Tensor,
    clip_norm: float | None,
    chunk_size: int | None = None,
) -> list[torch.Tensor]:
    """Σ_j clip(∇ℓ_j, C) per trainable parameter (``clip_norm=None``: no clipping); an empty
    batch gives zeros."""
    params = [p for p in model.parameters() if p.requires_grad]
    totals = [torch.zeros_like(p) for p in params]
    m = int(targets.shape[0])
    step = m if chunk_size is None else max(1, int(chunk_size))
    args = _as_args(inputs)
    for start in range(0, m, max(step, 1)):
        part = tuple(x[start : start + step] for x in args)
        grads = per_example_gradients(model, loss, part, targets[start : start + step])
        _accumulate(totals, grads, clip_norm)
    return totals


def _accumulate(
    totals: Sequence[torch.Tensor], grads: Sequence[torch.Tensor], clip_norm: float | None
) -> None:
    if clip_norm is None:
        for total, g in zip(totals, grads, strict=True):
            total += g.sum(dim=0)
        return
    squared = torch.stack([g.reshape(g.shape[0], -1).pow(2).sum(dim=1) for g in grads]).sum(0)
    factors = clip_norm / torch.clamp(torch.sqrt(squared), min=clip_norm)
    for total, g in zip(totals, grads, strict=True):
        total += torch.tensordot(factors.to(g.dtype), g, dims=1)
