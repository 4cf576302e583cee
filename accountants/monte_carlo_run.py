"""How a Monte Carlo question runs: the settings that are not part of the statistical question.

:class:`RunSettings` groups where and how the draws are computed (array backend and kernel
set, chunk size and memory budget, worker processes, executor, Dask scheduler, checkpoint,
progress bar, time limit). The certified numbers depend on them only through the chunk size
(the draws are seeded by chunk, so a seeded answer reproduces at the same chunk size); the
statistical question itself (samples, seed, proposal, bound, sweep) lives on
:class:`~minsep.accountants.monte_carlo.MonteCarloAccountant`.
"""

from __future__ import annotations

import contextlib
import math
import os
from pathlib import Path
from typing import Any

import attrs

from minsep.framework import validation as v
from minsep.framework.backend import BACKEND_SPECS, get_backend
from minsep.framework.interfaces import PrivacyLossModel
from minsep.framework.montecarlo import (
    DEFAULT_MEMORY_BUDGET,
    EXECUTOR_KINDS,
    Checkpoint,
    EngineConfig,
    Executor,
    chunk_size_for,
    get_executor,
)
from minsep.framework.montecarlo.checkpoint import writable_folder_problem
from minsep.framework.option_groups import to_record
from minsep.framework.workers import MAX_WORKERS, resolve_workers

__all__ = ["RunSettings", "as_run_settings", "shared_loss_model"]

#: The last loss model built (scheme, strategy, model): see :func:`shared_loss_model`.
_LAST_MODEL: dict[str, tuple[object, object, PrivacyLossModel]] = {}


def shared_loss_model(scheme: Any, strategy: Any) -> PrivacyLossModel:
    """``scheme.loss_model(strategy)``, the same object while the same scheme and strategy
    objects ask again: the escort's memos (``ln Z``, forward passes, rates) are kept per model
    object, so a question's route, plan line and run then share them."""
    last = _LAST_MODEL.get("last")
    if last is not None and last[0] is scheme and last[1] is strategy:
        return last[2]
    model: PrivacyLossModel = scheme.loss_model(strategy)
    _LAST_MODEL["last"] = (scheme, strategy, model)
    return model


def _workers(value: Any) -> Any:
    """Converter: ``"auto"`` to the cores free now; other strings are refused (naming the
    field); numbers pass on to the validator."""
    value = v.plain_number(value)
    return resolve_workers(value, "MonteCarloAccountant") if isinstance(value, str) else value


def _path(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, str | os.PathLike) or not str(value):
        raise v.fail(instance, attribute.name, value, "a file path (a non-empty str)")


@attrs.frozen(kw_only=True)
class RunSettings:
    """Where and how a Monte Carlo question's draws are computed.

    Attributes:
        backend: ``"numpy"``, ``"cupy"`` or ``"auto"``, optionally with the kernel set of the
            loss models: ``"numpy:array"``, ``"numpy:numba"``, ``"cupy:cuda"``, ``"cupy:array"``
            (default: the fastest available; see :mod:`minsep.framework.backend`).
        chunk_size: samples per chunk; None picks ``clip(2**23 / n_steps, 1024, 65536)``,
            lowered to what ``memory_budget`` allows. Part of the reproducibility key with
            ``seed``. A chunk that does not fit the budget is refused before sampling.
        workers: worker processes (1 = in-process); with ``executor="dask"`` and no
            ``scheduler``, the processes of an in-process Dask LocalCluster. ``"auto"``: the
            cores free at construction (:func:`minsep.framework.workers.resolve_workers`:
            usable CPUs less the rounded load average, at least 1; logged on
            ``minsep.plan``); the field then holds that number.
        executor: ``"local"``, ``"processes"`` or ``"dask"``; None picks ``"dask"`` when
            ``scheduler`` is set, else ``"local"`` for 1 worker and ``"processes"`` otherwise.
        scheduler: address of a running Dask scheduler (``"tcp://host:8786"``) or its
            scheduler file (``*.json``); implies ``executor="dask"``.
        checkpoint: a file where every sampling stage of a question saves its merged tally
            (stages ``pilot``/``verify``, ``pilot coarse``/``pilot fine``/``calibrate``,
            ``curve``); rerunning the same question resumes from it without redoing or
            double-counting a chunk. Another question (other parameters) with the same file is
            refused (CheckpointError). With ``seed`` None the checkpoint's seed is reused.
        checkpoint_interval: seconds between checkpoint saves (0: after every chunk).
        progress: progress bar (None: only on a terminal).
        memory_budget: bytes a worker may spend on one chunk (the model's
            ``bytes_per_sample`` times the chunk size); None: 1 GiB. When not even one sample
            fits, the question is refused (ConfigurationError with both figures).
        max_seconds: refuse (ConfigurationError) a question whose estimated time exceeds
            this; None: no limit. The plan and the estimate are logged (logger
            ``minsep.plan``, INFO) before every run either way.
    """

    backend: str = attrs.field(default="numpy", validator=v.one_of(*BACKEND_SPECS))
    chunk_size: int | None = attrs.field(
        default=None, converter=v.plain_number, validator=v.optional(v.integer(low=1, high=1 << 24))
    )
    workers: int = attrs.field(
        default=1, converter=_workers, validator=v.integer(low=1, high=MAX_WORKERS)
    )
    executor: str | None = attrs.field(
        default=None, validator=v.optional(v.one_of(*EXECUTOR_KINDS))
    )
    scheduler: str | None = None
    checkpoint: str | None = attrs.field(default=None, validator=v.optional(_path))
    checkpoint_interval: float = attrs.field(
        default=60.0, converter=v.plain_number, validator=v.number(low=0.0)
    )
    progress: bool | None = attrs.field(default=None, validator=v.optional(v.boolean()))
    memory_budget: int | None = attrs.field(
        default=None, converter=v.plain_number, validator=v.optional(v.positive_int())
    )
    max_seconds: float | None = attrs.field(
        default=None, converter=v.plain_number, validator=v.optional(v.positive())
    )

    def __attrs_post_init__(self) -> None:
        if self.scheduler is not None and self.executor not in (None, "dask"):
            raise v.fail(self, "scheduler", self.scheduler, f"None with executor {self.executor!r}")
        if self.executor == "local" and self.workers != 1:
            raise v.fail(self, "workers", self.workers, "1 with executor 'local'")
        if self.checkpoint is not None:
            self._check_checkpoint(self.checkpoint)
        self.executor_now()  # validates the scheduler address; needs dask for "dask"

    def _check_checkpoint(self, path: str) -> None:
        if not (path and Path(path).parent.is_dir()):
            raise v.fail(self, "checkpoint", path, "a file path in an existing folder")
        if Path(path).is_dir():
            raise v.fail(self, "checkpoint", path, "a file path, not a folder")
        problem = writable_folder_problem(path)
        if problem is not None:
            raise v.fail(self, "checkpoint", path, f"a file in a writable folder ({problem})")

    @classmethod
    def invalid_examples(cls) -> list[tuple[dict[str, Any], str]]:
        """``(options, parameter)`` pairs that must raise ConfigurationError."""
        return [
            ({"backend": "tpu"}, "backend"),
            ({"chunk_size": 0}, "chunk_size"),
            ({"workers": 0}, "workers"),
            ({"executor": "mpi"}, "executor"),
            ({"executor": "local", "workers": 2}, "workers"),
            ({"executor": "processes", "scheduler": "tcp://127.0.0.1:8786"}, "scheduler"),
            ({"scheduler": "not an address"}, "scheduler"),
            ({"checkpoint": "/nonexistent-folder/run.ckpt"}, "checkpoint"),
            ({"checkpoint": "/"}, "checkpoint"),
            ({"checkpoint_interval": -1.0}, "checkpoint_interval"),
            ({"memory_budget": 0}, "memory_budget"),
            ({"memory_budget": 2.5}, "memory_budget"),
            ({"max_seconds": 0.0}, "max_seconds"),
            ({"max_seconds": math.inf}, "max_seconds"),
        ]

    def executor_now(self) -> Executor:
        """The executor the chunks run on (a process pool or Dask client is shared)."""
        return get_executor(self.workers, self.executor, self.scheduler)

    def checkpoint_file(self) -> Checkpoint | None:
        """The checkpoint every sampling stage saves to, or None."""
        if self.checkpoint is None:
            return None
        return Checkpoint(self.checkpoint, every_seconds=self.checkpoint_interval)

    def hold_checkpoint(self) -> contextlib.AbstractContextManager[None]:
        """Hold the checkpoint's lock for a whole question (its stages, its seed lookup)."""
        checkpoint = self.checkpoint_file()
        return contextlib.nullcontext() if checkpoint is None else checkpoint.locked()

    def budget(self) -> int:
        """Bytes a worker may spend on one chunk."""
        return DEFAULT_MEMORY_BUDGET if self.memory_budget is None else self.memory_budget

    def chunk(self, model: PrivacyLossModel) -> int:
        """Samples per chunk for ``model`` (the requested size, or the budget's)."""
        backend = get_backend(self.backend).name
        return chunk_size_for(model, self.budget(), requested=self.chunk_size, backend=backend)

    def provenance(self, model: PrivacyLossModel) -> dict[str, Any]:
        """What reproduces the draws of ``model`` besides the seed and the sample counts: the
        backend, the kernel set (as seen by this process) and the chunk size (the draws are
        seeded by chunk)."""
        backend = get_backend(self.backend)
        return {
            "backend": backend.name,
            "kernels": model.kernel_set(backend),
            "chunk_size": self.chunk(model),
        }

    def config(self, model: PrivacyLossModel, executor: Executor) -> EngineConfig:
        """The engine's configuration for ``model``, its chunks run on ``executor``."""
        return EngineConfig(
            chunk_size=self.chunk(model),
            backend=get_backend(self.backend).spec,  # workers run the same kernel set
            executor=executor,
            progress=self.progress,
            checkpoint=self.checkpoint_file(),
            memory_budget=self.budget(),
        )


def as_run_settings(value: Any) -> RunSettings:
    """attrs converter of an accountant's ``run`` field (:func:`~minsep.framework.
    option_groups.to_record`: a record, a mapping of its options, or None)."""
    return to_record(RunSettings, "MonteCarloAccountant.run", value)
