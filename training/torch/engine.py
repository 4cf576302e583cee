"""``make_private``: BandMF (any registered strategy) with any scheme's sampler, in one call.

The call builds the scheme and the strategy from the registries, calibrates σ for (ε, δ) by the
certified route (:mod:`.calibration`) or takes a given σ and certifies its ε, and wires one
:class:`~minsep.training.private.PrivateRun` (the single source of the scheme, strategy, σ and
clip norm) to the three things a training loop needs: the scheme's DataLoader, the private
optimizer and the accountant view.
"""

from __future__ import annotations

from collections.abc import Mapping, Sized
from typing import Any, cast

import attrs
import torch
from numpy.random import SeedSequence
from torch import nn
from torch.nn import functional
from torch.utils.data import DataLoader

from minsep.framework.errors import ConfigurationError
from minsep.framework.interfaces import SamplingScheme, Strategy
from minsep.framework.registries import schemes, strategies
from minsep.framework.setup import AUTO, build_accountant, select_accountant
from minsep.framework.validation import check_range
from minsep.schemes.torch_adapter import SchemeBatchSampler
from minsep.torch.accountant import PrivacyAccountant, PrivacySpent
from minsep.torch.calibration import Say, calibrate, stderr_lines
from minsep.torch.clipping import Loss
from minsep.torch.loader import ResumableBatchSampler, scheme_loader
from minsep.torch.noise import NoiseStream
from minsep.torch.optimizer import PrivateOptimizer
from minsep.training.private import PrivateRun

__all__ = ["PrivateTraining", "make_private"]


@attrs.frozen
class PrivateTraining:
    """What ``make_private`` returns.

    Attributes:
        loader: yields batch B_i at step i (``len`` = steps left in the run).
        optimizer: ``optimizer.step(inputs, targets)`` takes one private step.
        accountant: ``spent()`` and ``whole_run()``: certified (ε, δ).
        run: the scheme, strategy, σ and clip norm (and the calibration) of the run.
    """

    loader: DataLoader[Any]
    optimizer: PrivateOptimizer
    accountant: PrivacyAccountant
    run: PrivateRun

    def state_dict(self) -> dict[str, Any]:
        """The optimizer's state (with the noise stream's) and the loader's position."""
        sampler = self._sampler()
        return {
            "optimizer": self.optimizer.state_dict(),
            "loader": {"seed": sampler.sampler.seed, "epoch": sampler.sampler.epoch},
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume: the same noise continues and the loader yields the batches not yet taken."""
        self.optimizer.load_state_dict(state["optimizer"])
        sampler = self._sampler()
        sampler.sampler.seed = int(state["loader"]["seed"])
        sampler.sampler.set_epoch(int(state["loader"]["epoch"]))
        sampler.skip = self.optimizer.steps_taken

    def _sampler(self) -> ResumableBatchSampler:
        sampler = self.loader.batch_sampler
        assert isinstance(sampler, ResumableBatchSampler)
        return sampler


def _scheme(
    scheme: str | SamplingScheme, steps: int | None, rate: float | None, options: Mapping[str, Any]
) -> SamplingScheme:
    if not isinstance(scheme, str):
        if steps is not None and steps != scheme.n_steps:
            raise ConfigurationError(
                f"make_private.steps = {steps!r} is invalid: the scheme given runs "
                f"n_steps = {scheme.n_steps} (leave steps out, or build the scheme for it)"
            )
        return scheme
    if steps is None or rate is None:
        raise ConfigurationError(
            f"make_private.steps = {steps!r}, rate = {rate!r} is invalid: a scheme given by name "
            f"({scheme!r}) needs steps (an int >= 1) and rate or batch_size"
        )
    built: SamplingScheme = schemes.get(scheme).from_rate(steps, rate, **options)
    return built


def _strategy(strategy: str | Strategy, steps: int, options: Mapping[str, Any]) -> Strategy:
    if not isinstance(strategy, str):
        return strategy
    built: Strategy = strategies.get(strategy).for_steps(steps, **options)
    return built


def _rate(rate: float | None, batch_size: float | None, size: int) -> float | None:
    if batch_size is None:
        return rate
    if rate is not None:
        raise ConfigurationError(
            f"make_private.batch_size = {batch_size!r} is invalid together with rate = "
            f"{rate!r}: give one (rate = expected batch size / dataset size)"
        )
    check_range("make_private", "batch_size", batch_size, low=0.0, low_open=True, high=size)
    return float(batch_size) / size


def make_private(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    data: Any,
    *,
    scheme: str | SamplingScheme = "b_min_sep",
    scheme_options: Mapping[str, Any] | None = None,
    steps: int | None = None,
    rate: float | None = None,
    batch_size: float | None = None,
    strategy: str | Strategy = "banded_toeplitz",
    strategy_options: Mapping[str, Any] | None = None,
    epsilon: float | None = None,
    delta: float,
    sigma: float | None = None,
    clip_norm: float = 1.0,
    loss: Loss = functional.cross_entropy,
    accountant: str = AUTO,
    accountant_options: Mapping[str, Any] | None = None,
    seed: int = 0,
    noise_dtype: torch.dtype | None = None,
    chunk_size: int | None = None,
    say: Say = stderr_lines,
    **loader_options: Any,
) -> PrivateTraining:
    """Make ``model`` and ``optimizer`` train privately on ``data`` (a Dataset or DataLoader).

    Args:
        scheme, scheme_options: a registered scheme name and its options (``min_sep`` for
            b-min-sep, ...), or a built SamplingScheme.
        steps, rate, batch_size: the run's length n and participation rate p₀ (or the expected
            batch size p₀·|D|); for a scheme given by name.
        strategy, strategy_options: a registered strategy name (``banded_toeplitz`` with
            ``bands``, ``identity``, ``blt``, ``banded_inverse``, ...) and its options, or a
            built Strategy.
        epsilon, delta, sigma: the target (ε, δ) to calibrate σ for, or σ itself (and δ, at
            which its ε is certified).
        clip_norm: the per-example clip norm C.
        loss: ``loss(outputs, targets)`` for a batch of one.
        accountant, accountant_options: ``"auto"`` (the project's order, falling back when one
            cannot answer) or a registered accountant name and its options.
        seed: the root of the batch sampler's and the noise's randomness (distinct streams).
        noise_dtype: the noise stream's working dtype (default the parameters').
        chunk_size: most per-example gradients held at once (default: the whole batch).
        say: where progress lines go (default: stderr, at once).
        loader_options: passed to the DataLoader (``num_workers``, ``collate_fn``, ...).
    """
    check_range("make_private", "seed", seed, low=0, integer=True)
    if sigma is not None:
        check_range("make_private", "sigma", sigma, low=0.0, low_open=True)
    if (epsilon is None) == (sigma is None):
        raise ConfigurationError(
            f"make_private.epsilon = {epsilon!r}, sigma = {sigma!r} is invalid: give exactly "
            "one (a target epsilon to calibrate sigma for, or sigma itself)"
        )
    dataset = data.dataset if isinstance(data, DataLoader) else data
    size = len(cast(Sized, dataset))
    the_scheme = _scheme(scheme, steps, _rate(rate, batch_size, size), scheme_options or {})
    n = the_scheme.n_steps
    the_strategy = _strategy(strategy, n, strategy_options or {})
    if epsilon is not None:
        calibration = calibrate(
            the_scheme,
            the_strategy,
            epsilon=epsilon,
            delta=delta,
            accountant=accountant,
            options=accountant_options,
            say=say,
        )
        run = PrivateRun(
            the_scheme, the_strategy, float(calibration.sigma), size, clip_norm, calibration
        )
        whole = PrivacySpent(
            float(calibration.epsilon), float(calibration.delta), n, n, calibration.accountant
        )
    else:
        run = PrivateRun(the_scheme, the_strategy, float(sigma or 0.0), size, clip_norm)
        whole = _certify(run, delta, accountant, accountant_options, say)
    loader_seed, noise_seed = (int(s.generate_state(1)[0]) for s in SeedSequence(seed).spawn(2))
    params = [p for p in model.parameters() if p.requires_grad]
    noise = NoiseStream(run, params, noise_seed, noise_dtype) if run.private else None
    private = PrivateOptimizer(optimizer, model, loss, run, noise, chunk_size)
    sampler = SchemeBatchSampler(scheme=the_scheme, population=size, seed=loader_seed)
    return PrivateTraining(
        loader=scheme_loader(data, sampler, **loader_options),
        optimizer=private,
        accountant=PrivacyAccountant(run, whole, lambda: private.steps_taken),
        run=run,
    )


def _certify(
    run: PrivateRun,
    delta: float,
    accountant: str,
    options: Mapping[str, Any] | None,
    say: Say,
) -> PrivacySpent:
    """The certified ε at δ of a run with a given σ (the accountant chosen as for calibration)."""
    chosen = select_accountant(
        accountant,
        run.scheme,
        run.strategy,
        factory=lambda name: build_accountant(name, options, strict=accountant != AUTO),
    )
    name = str(getattr(type(chosen), "registry_name", type(chosen).__name__))
    say(f"certifying epsilon at delta = {delta:g} for sigma = {run.sigma:g} with {name!r} ...")
    result = chosen.epsilon(run.scheme, run.strategy, run.sigma, delta)
    spent = PrivacySpent(
        float(result.certified_epsilon), float(delta), run.n_steps, run.n_steps, name
    )
    say(f"sigma = {run.sigma:g}: {spent}")
    return spent
