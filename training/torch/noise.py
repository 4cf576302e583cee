"""The run's correlated noise σ·C·(C⁻¹Z)[i] drawn on the parameters' device (docs/math.md §8).

The rows come from the strategy's own streaming generator (``Strategy.noise``, e.g. the banded
recursion of :mod:`minsep.strategies.noise`), handed a backend whose array namespace creates
torch tensors on the parameters' device and whose random source is a seeded
``torch.Generator`` there: nothing crosses to the host. One row covers all trainable
parameters (flattened and concatenated), so the noise is correlated across steps exactly as
the accountant assumed and independent across coordinates.

Checkpointing: the state is ``(seed, step)`` plus what identifies the stream (σ·C, the
strategy, the parameter count, dtype). Restoring rebuilds the stream from the seed and replays
``step`` rows: the continuation is bit-identical to the uninterrupted run on the same device
(the same generator draws the same Z in the same order). The replay costs what drawing those
rows cost the first time (O(step · bands · d)); memory stays O(bands · d).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import attrs
import numpy as np
import torch

from minsep.framework.backend import Backend
from minsep.framework.errors import CheckpointError, ConfigurationError
from minsep.framework.validation import check_range
from minsep.training.private import PrivateRun, strategy_description

__all__ = ["NoiseStream", "TorchRandom", "torch_backend"]


class _TorchNamespace:
    """The array calls the strategies' noise streams make, creating tensors on one device.

    ``float64`` is the stream's working dtype (the name the streams ask for), so a float32
    model gets float32 noise unless ``noise_dtype`` says otherwise.
    """

    __name__ = "torch"

    def __init__(self, device: torch.device, dtype: torch.dtype) -> None:
        self.device = device
        self.float64 = dtype

    def asarray(self, value: Any, dtype: torch.dtype | None = None) -> torch.Tensor:
        return torch.as_tensor(value, dtype=dtype or self.float64, device=self.device)

    def zeros(self, shape: Sequence[int], dtype: torch.dtype | None = None) -> torch.Tensor:
        return torch.zeros(tuple(shape), dtype=dtype or self.float64, device=self.device)

    @staticmethod
    def reshape(value: torch.Tensor, shape: Sequence[int]) -> torch.Tensor:
        return torch.reshape(value, tuple(shape))

    @staticmethod
    def roll(value: torch.Tensor, shift: int) -> torch.Tensor:
        return torch.roll(value, int(shift))


@attrs.frozen
class TorchRandom:
    """A RandomSource drawing with a seeded ``torch.Generator`` on ``device``."""

    generator: torch.Generator
    device: torch.device
    dtype: torch.dtype

    def standard_normal(self, shape: Sequence[int]) -> torch.Tensor:
        return torch.randn(
            tuple(shape), generator=self.generator, device=self.device, dtype=self.dtype
        )

    def random(self, shape: Sequence[int]) -> torch.Tensor:
        return torch.rand(
            tuple(shape), generator=self.generator, device=self.device, dtype=self.dtype
        )


def _seeded(seed: int, device: torch.device, dtype: torch.dtype) -> TorchRandom:
    generator = torch.Generator(device=device)
    generator.manual_seed(int(seed))
    return TorchRandom(generator, device, dtype)


def torch_backend(device: torch.device | str, dtype: torch.dtype = torch.float64) -> Backend:
    """A minsep backend whose arrays are torch tensors on ``device`` (working dtype ``dtype``)."""
    where = torch.device(device)

    def rng(seed: np.random.SeedSequence) -> TorchRandom:
        return _seeded(int(seed.generate_state(1, np.uint32)[0]), where, dtype)

    def to_numpy(value: Any) -> np.ndarray:
        return np.asarray(value.detach().cpu().numpy())

    return Backend("torch", _TorchNamespace(where, dtype), rng, to_numpy)


class NoiseStream:
    """The rows σ·C·(C⁻¹Z)[i], i = 1..n, of ``run``, shaped like ``parameters``.

    Args:
        run: the private run (σ > 0) whose strategy and σ·C the rows follow.
        parameters: the trainable tensors; their device is where the rows are drawn.
        seed: the generator's seed (an int >= 0).
        dtype: the working dtype of the stream (default: the parameters' dtype).
    """

    def __init__(
        self,
        run: PrivateRun,
        parameters: Sequence[torch.Tensor],
        seed: int,
        dtype: torch.dtype | None = None,
    ) -> None:
        check_range("NoiseStream", "seed", seed, low=0, integer=True)
        if not parameters:
            raise ConfigurationError(
                "NoiseStream.parameters = [] is invalid: must hold at least one trainable tensor"
            )
        self.run = run
        self.seed = int(seed)
        self.shapes = [tuple(p.shape) for p in parameters]
        self.sizes = [int(p.numel()) for p in parameters]
        self.device = parameters[0].device
        self.dtype = dtype or parameters[0].dtype
        self.step = 0
        self._rows = self._start()

    def _start(self) -> Iterator[Any]:
        rng = _seeded(self.seed, self.device, self.dtype)
        backend = torch_backend(self.device, self.dtype)
        return self.run.noise((sum(self.sizes),), rng, backend)

    def __iter__(self) -> NoiseStream:
        return self

    def __next__(self) -> list[torch.Tensor]:
        if self.step >= self.run.n_steps:
            raise StopIteration
        flat = next(self._rows)
        self.step += 1
        parts = torch.split(flat, self.sizes)
        return [part.reshape(shape) for part, shape in zip(parts, self.shapes, strict=True)]

    def _identity(self) -> dict[str, Any]:
        return {
            "noise_std": self.run.noise_std,
            "n_steps": self.run.n_steps,
            "strategy": strategy_description(self.run.strategy),
            "numel": sum(self.sizes),
            "dtype": str(self.dtype),
        }

    def state_dict(self) -> dict[str, Any]:
        """``seed``, ``step`` and what identifies the stream (checked on restore)."""
        return {"seed": self.seed, "step": self.step, **self._identity()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue the stream saved in ``state`` (replaying its ``step`` rows from the seed).

        Raises CheckpointError when ``state`` belongs to another stream (σ·C, strategy, size or
        dtype differ): its continuation would not be the noise the accountant analysed.
        """
        mine = self._identity()
        for key, value in mine.items():
            if state.get(key) != value:
                raise CheckpointError(
                    f"NoiseStream state {key} = {state.get(key)!r} is invalid: this run's is "
                    f"{value!r}"
                )
        step = int(state["step"])
        check_range("NoiseStream", "step", step, low=0, high=self.run.n_steps, integer=True)
        self.seed = int(state["seed"])
        self.step = 0
        self._rows = self._start()
        for _ in range(step):
            next(self._rows)
        self.step = step
