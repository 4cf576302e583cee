"""The training loop: DP-SGD / BandMF with any scheme's batches.

At step i (0-based) with batch B_i (negative indices are padding slots) and noise row
``σ·C·(C⁻¹Z)[i]`` from the run's :class:`~minsep.training.private.PrivateRun`:

    g_i = Σ_{j ∈ B_i, real} clip(∇ℓ(θ; d_j), C) + σ·C·(C⁻¹Z)[i]
    θ  ← SGD-momentum(θ, g_i / (p₀·|D|), η_i)

The divisor is the *expected* batch size p₀·|D|, a public constant: dividing by the realised
batch size would release it without noise. Train/test metrics in the record are diagnostics
computed on the raw data and are not covered by the DP guarantee.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from minsep.framework.backend import BACKEND_NAMES, get_backend
from minsep.framework.errors import ConfigurationError
from minsep.framework.validation import integer, number, one_of, positive, positive_int
from minsep.training.clipping import clipped_sum
from minsep.training.data import Dataset
from minsep.training.models import MODEL_NAMES, Model, build_model
from minsep.training.optim import LinearDecay, SGDMomentum
from minsep.training.private import PrivateRun

Array = Any


@attrs.frozen(kw_only=True)
class TrainingConfig:
    """Optimisation settings of a run (privacy parameters live on :class:`PrivateRun`).

    Attributes:
        model: ``"softmax"`` (softmax regression) or ``"mlp"`` (one hidden ReLU layer).
        hidden: hidden width of the MLP.
        learning_rate: base learning rate η.
        momentum: heavy-ball momentum μ ∈ [0, 1).
        final_lr_factor, decay_start, decay_end: the linear decay η → η·factor between
            fractions ``decay_start`` and ``decay_end`` of the run (paper §7.2: 1/20, ¼, ¾).
        seed: seeds parameter init, batch sampling and noise (independent spawned streams).
        backend: ``"numpy"``, ``"cupy"`` or ``"auto"``.
        eval_points: how many evenly spaced steps record the full training loss.
    """

    model: str = attrs.field(default="softmax", validator=one_of(*MODEL_NAMES))
    hidden: int = attrs.field(default=32, validator=positive_int())
    learning_rate: float = attrs.field(default=2.0, validator=positive())
    momentum: float = attrs.field(default=0.9, validator=number(low=0.0, high=1.0, high_open=True))
    final_lr_factor: float = attrs.field(
        default=0.05, validator=number(low=0.0, high=1.0, low_open=True)
    )
    decay_start: float = attrs.field(default=0.25, validator=number(low=0.0, high=1.0))
    decay_end: float = attrs.field(default=0.75, validator=number(low=0.0, high=1.0))
    seed: int = attrs.field(default=0, validator=integer(low=0))
    backend: str = attrs.field(default="numpy", validator=one_of(*BACKEND_NAMES))
    eval_points: int = attrs.field(default=10, validator=integer(low=0))

    def __attrs_post_init__(self) -> None:
        if self.decay_end < self.decay_start:
            raise ConfigurationError(
                f"TrainingConfig.decay_end = {self.decay_end!r} is invalid: must be >= "
                f"decay_start = {self.decay_start!r}"
            )

    def schedule(self, n_steps: int) -> LinearDecay:
        """The learning-rate schedule for an ``n_steps`` run."""
        return LinearDecay(
            self.learning_rate, n_steps, self.final_lr_factor, self.decay_start, self.decay_end
        )


@attrs.frozen
class StepInfo:
    """What an observer sees at each step (tests use it to audit batches and noise)."""

    step: int
    batch: np.ndarray
    noise: Array | None
    learning_rate: float


def _tuple_of_pairs(value: Any) -> tuple[tuple[int, float], ...]:
    return tuple((int(s), float(v)) for s, v in value)


@attrs.frozen(kw_only=True)
class TrainingRecord:
    """Outcome of one training run; ``to_json`` / ``from_json`` round-trip exactly.

    ``run`` is :meth:`PrivateRun.describe` (σ, clip norm, scheme, strategy, calibration);
    ``loss_curve`` holds (step, full training loss) pairs; ``mean_batch_size`` is the realised
    mean number of real examples per batch (a diagnostic, compare with p₀·|D|).
    """

    seed: int
    train_accuracy: float
    test_accuracy: float
    train_loss: float
    test_loss: float
    loss_curve: tuple[tuple[int, float], ...] = attrs.field(converter=_tuple_of_pairs)
    mean_batch_size: float
    n_steps: int
    seconds: float
    backend: str
    config: dict[str, Any]
    model: dict[str, Any]
    dataset: dict[str, Any]
    run: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """Plain data (lists for tuples)."""
        data = attrs.asdict(self)
        data["loss_curve"] = [list(pair) for pair in self.loss_curve]
        return data

    def to_json(self, **kwargs: Any) -> str:
        """JSON text of :meth:`to_dict`."""
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainingRecord:
        """Inverse of :meth:`to_dict`."""
        return cls(**data)

    @classmethod
    def from_json(cls, text: str) -> TrainingRecord:
        """Inverse of :meth:`to_json`."""
        return cls.from_dict(json.loads(text))


def _mean_loss(model: Model, params: Array, x: Array, y: Array, xp: Any) -> float:
    return float(xp.mean(model.example_losses(params, x, y, xp)))


def _accuracy(model: Model, params: Array, x: Array, y: Array, xp: Any) -> float:
    return float(xp.mean((model.predict(params, x, xp) == y).astype(xp.float64)))


def _eval_steps(n_steps: int, points: int) -> set[int]:
    """The steps after which the training loss is recorded: ``points`` evenly spaced ones
    ending at ``n_steps`` (none for fewer than 2 points)."""
    if points <= 1:
        return set()
    return set(np.linspace(0, n_steps, points, dtype=int).tolist()[1:])


def _check_batches(run: PrivateRun, batches: int) -> None:
    """Refuse a scheme that yields a number of batches other than the n the accountant
    analysed (called with n + 1 as soon as it yields one too many)."""
    n_steps = run.n_steps
    if batches > n_steps:
        raise ConfigurationError(
            f"train: scheme {run.scheme.name!r} yielded more than n_steps = {n_steps} "
            "batches, the number the accountant analysed"
        )
    if batches != n_steps:
        raise ConfigurationError(
            f"train: scheme {run.scheme.name!r} yielded {batches} batches: must yield "
            f"n_steps = {n_steps}, the number the accountant analysed"
        )


def train(
    config: TrainingConfig,
    data: Dataset,
    run: PrivateRun,
    *,
    progress: bool | None = False,
    observer: Callable[[StepInfo], None] | None = None,
) -> TrainingRecord:
    """Train ``config.model`` on ``data`` with the batches, clipping and noise of ``run``.

    Args:
        progress: show a tqdm bar (``None``: only on a terminal).
        observer: called with a :class:`StepInfo` after each step's noise is drawn.

    Raises ConfigurationError when ``data`` is not the dataset the run was built for, or when
    the scheme yields a number of batches other than the n the accountant analysed.
    """
    if data.train_size != run.dataset_size:
        raise ConfigurationError(
            f"train: data has {data.train_size} training examples: must equal "
            f"PrivateRun.dataset_size = {run.dataset_size}"
        )
    from tqdm.auto import tqdm

    started = time.perf_counter()
    backend = get_backend(config.backend)
    xp = backend.xp
    model = build_model(config.model, data.n_features, data.n_classes, hidden=config.hidden)
    init_seed, batch_seed, noise_seed = np.random.SeedSequence(config.seed).spawn(3)

    params = backend.asarray(model.init(np.random.default_rng(init_seed)))
    x_train, y_train = backend.asarray(data.x_train), backend.asarray(data.y_train)
    x_test, y_test = backend.asarray(data.x_test), backend.asarray(data.y_test)
    n_steps = run.n_steps
    schedule = config.schedule(n_steps)
    optimizer = SGDMomentum(config.momentum)
    velocity = optimizer.init(params)
    divisor = run.expected_batch_size
    noise_rows = (
        run.noise((model.n_parameters,), backend.rng(noise_seed), backend) if run.private else None
    )
    eval_steps = _eval_steps(n_steps, config.eval_points)
    curve: list[tuple[int, float]] = []
    real_examples = 0
    steps_done = 0

    bar = tqdm(
        total=n_steps,
        disable=None if progress is None else not progress,
        desc="train",
        unit="step",
        leave=False,
    )
    for step, batch in enumerate(run.batches(np.random.default_rng(batch_seed))):
        if step >= n_steps:
            _check_batches(run, step + 1)
        mask = batch >= 0  # negative entries are padding slots
        real_examples += int(mask.sum())
        index = backend.asarray(np.where(mask, batch, 0))
        grads, _ = model.per_example_gradients(params, x_train[index], y_train[index], xp)
        total = clipped_sum(grads, run.clip_norm, backend.asarray(mask), xp)
        noise = next(noise_rows) if noise_rows is not None else None
        if noise is not None:
            total = total + noise
        learning_rate = schedule(step)
        params, velocity = optimizer.update(params, velocity, total / divisor, learning_rate)
        if observer is not None:
            observer(StepInfo(step, batch, noise, learning_rate))
        steps_done = step + 1
        if steps_done in eval_steps:
            curve.append((steps_done, _mean_loss(model, params, x_train, y_train, xp)))
        bar.update(1)
    bar.close()
    _check_batches(run, steps_done)
    return TrainingRecord(
        seed=config.seed,
        train_accuracy=_accuracy(model, params, x_train, y_train, xp),
        test_accuracy=_accuracy(model, params, x_test, y_test, xp),
        train_loss=_mean_loss(model, params, x_train, y_train, xp),
        test_loss=_mean_loss(model, params, x_test, y_test, xp),
        loss_curve=curve,
        mean_batch_size=real_examples / n_steps,
        n_steps=n_steps,
        seconds=time.perf_counter() - started,
        backend=backend.name,
        config=attrs.asdict(config),
        model=model.describe(),
        dataset=data.summary(),
        run=run.describe(),
    )
