"""The private optimizer step: clip, add the step's correlated noise, normalise, step.

Step i sets, for every trainable parameter (paper §2, docs/math.md §1),

    p.grad = (Σ_{j ∈ B_i} clip(∇ℓ(θ; x_j, y_j), C) + σ·C·(C⁻¹Z)[i]) / (p₀·|D|)

and calls the wrapped optimizer's ``step``. The divisor is the *expected* batch size p₀·|D|,
public, never the realised |B_i| (which would leak the batch size). A run takes exactly the
``n`` steps the accountant analysed; a step beyond them is refused.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from minsep.framework.errors import MinsepError
from minsep.torch.clipping import Loss, clipped_gradient_sum
from minsep.torch.noise import NoiseStream
from minsep.training.private import PrivateRun

__all__ = ["PrivacyBudgetError", "PrivateOptimizer"]


class PrivacyBudgetError(MinsepError):
    """A step beyond the ``n`` steps the accountant certified."""


class PrivateOptimizer(torch.optim.Optimizer):
    """Wraps ``optimizer``; ``step(inputs, targets)`` takes one private step on a batch.

    It shares the wrapped optimizer's ``param_groups`` and ``state``, so learning-rate
    schedulers work on it directly. ``state_dict`` holds the wrapped optimizer's state, the
    noise stream's (seed and position) and the step count.
    """

    def __init__(
        self,
        optimizer: torch.optim.Optimizer,
        model: nn.Module,
        loss: Loss,
        run: PrivateRun,
        noise: NoiseStream | None,
        chunk_size: int | None = None,
    ) -> None:
        # not Optimizer.__init__: the parameters, their groups and state are the wrapped one's
        self.original = optimizer
        self.model = model
        self.loss = loss
        self.run = run
        self.noise = noise
        self.chunk_size = chunk_size
        self.steps_taken = 0
        self._share()
        self._optimizer_step_pre_hooks: dict[int, Any] = {}
        self._optimizer_step_post_hooks: dict[int, Any] = {}

    def _share(self) -> None:
        """Use the wrapped optimizer's parameter groups, state and defaults (the same objects;
        again after it loads a state, which rebinds them)."""
        self.param_groups = self.original.param_groups
        self.state = self.original.state
        self.defaults = self.original.defaults

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.original.zero_grad(set_to_none=set_to_none)

    def step(self, inputs: Any = None, targets: Any = None) -> None:  # type: ignore[override]
        """One private step on the batch ``(inputs, targets)`` (empty tensors: noise only)."""
        if inputs is None or targets is None:
            raise MinsepError(
                "PrivateOptimizer.step needs the batch: call step(inputs, targets); the "
                "per-example gradients are computed from it (no loss.backward() needed)"
            )
        if self.steps_taken >= self.run.n_steps:
            raise PrivacyBudgetError(
                f"PrivateOptimizer.step: the run was certified for n = {self.run.n_steps} "
                "steps, all taken; another step would release more than was accounted"
            )
        sums = clipped_gradient_sum(
            self.model, self.loss, inputs, targets, self.run.clip_norm, self.chunk_size
        )
        rows = next(self.noise) if self.noise is not None else None
        params = [p for p in self.model.parameters() if p.requires_grad]
        scale = self.run.expected_batch_size
        for index, (param, total) in enumerate(zip(params, sums, strict=True)):
            if rows is not None:
                total = total + rows[index].to(total.dtype)
            param.grad = total / scale
        self.original.step()
        self.steps_taken += 1

    def state_dict(self) -> dict[str, Any]:
        """The wrapped optimizer's state, the noise stream's and the step count."""
        return {
            "optimizer": self.original.state_dict(),
            "noise": None if self.noise is None else self.noise.state_dict(),
            "steps_taken": self.steps_taken,
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` saved; the noise continues bit-identically."""
        self.original.load_state_dict(state_dict["optimizer"])
        self._share()
        if self.noise is not None:
            self.noise.load_state_dict(state_dict["noise"])
        self.steps_taken = int(state_dict["steps_taken"])
