"""Escort draws in the Monte Carlo engine: chunk tasks, the sampler, the rate probe.

Chunk ``i`` of stream ``s`` draws from ``R_lam`` with ``SeedSequence(seed, spawn_key=(s, i,
0))`` on the host backend's generator (SFC64: the plain engine's seeding), counts first, then
the normals; ``ln u`` comes from the dots ``<c_i, y>`` without forming y where the model
allows (docs/rdp-escort.md §7). Tasks are picklable (process and Dask executors) and each
sampling call is one checkpoint stage. Every check tallies ``X = W(eps) / s*`` with ``s*`` the
support bound fixed before the draws; a weight above it is refused
(:class:`~minsep.framework.montecarlo.proposals.SupportBoundError`), never clipped.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from minsep.accountants import rdp_moments as moments
from minsep.accountants.escort import escort_outputs, log_escort_weight
from minsep.accountants.escort_setup import EscortSetup, escort_law, escort_target
from minsep.framework.backend import Backend, RandomSource, get_backend, numpy_backend
from minsep.framework.errors import MinsepError
from minsep.framework.interfaces import Direction, PrivacyLossModel
from minsep.framework.montecarlo.accumulators import SweepTally
from minsep.framework.montecarlo.proposals import SupportBoundError
from minsep.framework.montecarlo.sampling import (
    ChunkTask,
    EngineConfig,
    chunk_seed,
    sample_chunks,
)

__all__ = [
    "CHUNK_ELEMENTS",
    "EscortChunkTask",
    "EscortSampler",
    "escort_sample",
    "measure_escort_seconds",
]

#: A weight may exceed its bound by this relative slack (rounding) before the run refuses.
SUPPORT_SLACK = 1e-9
#: Elements (samples x steps) of one escort chunk's outputs (128 MiB of float64).
CHUNK_ELEMENTS = 1 << 24
#: Bytes of escort counts (int8, samples x steps) one batch of chunks may hold
#: (:meth:`EscortChunkTask._counts`): 16 chunks of 8,192 draws at n = 1024.
BATCH_BYTES = 1 << 27
#: The chunks of the last batch not yet tallied, per (run key, chunk index): the model, the
#: counts and the chunk's generator after its backward walk.
_BATCH: dict[tuple[Any, int], tuple[object, np.ndarray, RandomSource]] = {}
#: The (run key, chunk index) this process drew last: a batch is drawn only when chunks come
#: in order to one process (the local executor). A pool hands consecutive chunks to different
#: workers, so a batch there would be drawn and then thrown away (the production run at
#: n = 7200 took 8x longer with 2 worker processes).
_LAST: list[tuple[Any, int] | None] = [None]
#: The escort rate probe stops at a probe this long (seconds) or this many draws.
PROBE_SECONDS = 0.1
PROBE_DRAWS = 2048
#: A forward pass at least this long (seconds) is slow enough that the probe times one call of
#: PROBE_DRAWS draws at once instead of growing the draws call by call (each call repeats it).
SLOW_PASS_SECONDS = 0.5
#: Rates measured in this process, per (model, order, max_states): a model's rates do not
#: depend on sigma, and a question asks for them twice (the route and the plan line).
_MEASURED: dict[tuple[int, int, int], tuple[object, tuple[float, float]]] = {}


@attrs.frozen
class EscortChunkTask(ChunkTask):
    """One escort run, callable on a chunk index (picklable).

    Chunk ``i`` draws its samples from ``R_lam`` with ``SeedSequence(seed, spawn_key=(stream,
    i, 0))`` and tallies ``X = W(eps) / e^log_scale`` at every ``eps`` of ``checks`` (REMOVE
    only, no histogram). ``log_scale`` must be at least ``ln s_lam(eps)`` for every check; a
    weight above it raises :class:`SupportBoundError`.
    """

    order: int = 2
    log_z: float = 0.0
    log_scale: float = 0.0
    max_states: int = moments.DEFAULT_MAX_STATES

    def describe(self) -> dict[str, Any]:
        """Plain data identifying the run (the escort's order, ln Z and scale included)."""
        return {
            **super().describe(),
            "proposal": "escort",
            "order": self.order,
            "log_z": self.log_z,
            "log_scale": self.log_scale,
        }

    def __call__(self, index: int) -> SweepTally:
        """Draw chunk ``index`` from the escort and return its tally."""
        size = self.chunk_length(index)
        target = escort_target("EscortChunkTask", self.model)
        law = target.escort_law()
        sigma = self.sigmas[0]
        backend = _host_backend(self.backend)
        counts, source = self._counts(law, index, backend)
        log_u = np.asarray(_log_ratios(target, law, counts, sigma, source, backend))
        if np.isnan(log_u).any():
            raise MinsepError("log_ratio_at returned NaN on escort draws")
        out = self.empty()
        tally = out.tally(0, Direction.REMOVE)
        tally.count = size
        sums, squares = np.empty(len(self.checks)), np.empty(len(self.checks))
        for j, eps in enumerate(self.checks):
            x = np.exp(log_escort_weight(log_u, self.log_z, self.order, eps) - self.log_scale)
            top = float(x.max())
            if top > 1.0 + SUPPORT_SLACK:
                raise SupportBoundError(
                    f"escort weight W = {top:.6g} x the declared support bound at epsilon "
                    f"{eps:g} (order {self.order}, chunk {index}): the bound is wrong, so "
                    "nothing is certified"
                )
            sums[j], squares[j] = float(x.sum()), float((x * x).sum())
        tally.sum_x, tally.sum_x2 = sums, squares
        return out

    def _counts(self, law: Any, index: int, backend: Backend) -> tuple[np.ndarray, RandomSource]:
        """Chunk ``index``'s escort counts and its random source (``backend.rng`` of the
        chunk's seed, as the plain engine's; left where the draws left it).

        Where the law draws batches (``sample_batch``), the chunks ``index ..`` up to
        :data:`BATCH_BYTES` of counts are drawn together, each on its own generator (so the
        same draws as one by one), and the later ones are kept for the calls that follow
        (:data:`_BATCH`, one batch per process): their backward walks share one recomputation
        of the forward messages instead of one each. Only where the chunks come in order to this
        process (:data:`_LAST`); the draws are the same either way."""
        key = (id(self.model), self.sigmas[0], self.order, self.seed, self.stream,
               self.chunk_size, self.n_samples, self.max_states)  # fmt: skip
        kept = _BATCH.pop((key, index), None)
        in_order, _LAST[0] = _LAST[0] == (key, index - 1), (key, index)
        if kept is not None and kept[0] is self.model:
            return kept[1], kept[2]
        n = law.n_steps
        width = max(1, min(BATCH_BYTES // max(self.chunk_size * n, 1), self.n_chunks - index))
        if not hasattr(law, "sample_batch") or not in_order:
            width = 1
        indices = range(index, index + width)
        sources = [backend.rng(chunk_seed(self.seed, self.stream, i, Direction.REMOVE))
                   for i in indices]  # fmt: skip
        rngs = [_generator(source) for source in sources]
        sizes = [self.chunk_length(i) for i in indices]
        if width == 1:
            draws = [law.sample(self.sigmas[0], self.order, sizes[0], rngs[0], self.max_states)]
        else:
            draws = law.sample_batch(self.sigmas[0], self.order, sizes, rngs, self.max_states)
        _BATCH.clear()
        for i, draw, source in zip(indices[1:], draws[1:], sources[1:], strict=True):
            _BATCH[(key, i)] = (self.model, draw.counts, source)
        return draws[0].counts, sources[0]


def _host_backend(spec: str | Backend) -> Backend:
    """The task's backend where it is a host one (escort counts are drawn on host numpy), else
    the default host backend."""
    backend = get_backend(spec)
    return backend if backend.xp is np else numpy_backend()


def _generator(source: RandomSource) -> np.random.Generator:
    generator = getattr(source, "generator", None)
    if not isinstance(generator, np.random.Generator):  # pragma: no cover - host backends
        raise MinsepError("escort draws need a host backend whose source holds a Generator")
    return generator


def _log_ratios(
    target: Any, law: Any, counts: np.ndarray, sigma: float, source: RandomSource,
    backend: Backend,
) -> np.ndarray:  # fmt: skip
    """``ln u(y)`` of the draws ``y = C counts + sigma z`` (z: the source's next normals,
    row-major): by the model's ``log_ratio_of_counts`` where it has one over the law's own C
    (the dots from the fused noise kernels and the nonzero counts, docs/rdp-escort.md §7),
    else on the dense outputs (:func:`~.escort.escort_outputs`, the same normals)."""
    fast = getattr(target, "log_ratio_of_counts", None)
    own = getattr(target, "coefficients", None)
    coefficients = np.asarray(law.coefficients, dtype=np.float64)
    if (
        fast is not None
        and own is not None
        and np.array_equal(
            np.asarray(own, dtype=np.float64)[: law.n_steps], coefficients[: law.n_steps]
        )
    ):
        return np.asarray(fast(counts, sigma, source, backend), dtype=np.float64)
    outputs = escort_outputs(counts, coefficients, sigma, _generator(source))
    return np.asarray(target.log_ratio_at(outputs, sigma, np), dtype=np.float64)


def escort_sample(
    model: PrivacyLossModel,
    setup: EscortSetup,
    checks: Sequence[float],
    log_scale: float,
    *,
    n_samples: int,
    seed: int,
    stream: int,
    config: EngineConfig | None = None,
    description: str = "escort",
    max_states: int = moments.DEFAULT_MAX_STATES,
) -> SweepTally:
    """``n_samples`` escort draws tallied at ``checks`` (one checkpoint stage ``description``).

    The chunk size is ``config.chunk_size`` capped so that one chunk's outputs stay within
    :data:`CHUNK_ELEMENTS` float64s.
    """
    config = config or EngineConfig()
    n = escort_law("escort_sample", model).n_steps
    chunk = max(1, min(config.chunk_size, CHUNK_ELEMENTS // n))
    task = EscortChunkTask(
        model,
        (setup.sigma,),
        n_samples,
        seed,
        stream,
        tuple(float(e) for e in checks),
        (Direction.REMOVE,),
        chunk,
        None,
        "numpy",
        order=setup.order,
        log_z=setup.log_z,
        log_scale=float(log_scale),
        max_states=max_states,
    )
    return sample_chunks(
        task, range(task.n_chunks), config, description=description, stage=description
    )


@attrs.frozen
class EscortSampler:
    """Escort draws of the remove direction at ``setup`` (a
    :class:`~minsep.framework.montecarlo.proposals.Sampler`): ``X = W / s`` with support
    bound ``s = e^log_scale``."""

    model: PrivacyLossModel
    setup: EscortSetup
    log_scale: float
    config: EngineConfig | None
    max_states: int = moments.DEFAULT_MAX_STATES
    support: float = attrs.field(init=False)

    @support.default
    def _support(self) -> float:
        return math.exp(self.log_scale)

    def tally(
        self, checks: Sequence[float], *, n_samples: int, seed: int, stream: int, description: str
    ) -> SweepTally:
        """:func:`escort_sample` at ``checks`` on this sampler's setup and scale."""
        return escort_sample(
            self.model,
            self.setup,
            checks,
            self.log_scale,
            n_samples=n_samples,
            seed=seed,
            stream=stream,
            config=self.config,
            description=description,
            max_states=self.max_states,
        )


def measure_escort_seconds(
    model: PrivacyLossModel, setup: EscortSetup, *, max_states: int = moments.DEFAULT_MAX_STATES
) -> tuple[float, float]:
    """``(seconds per escort sampling call, seconds per draw)`` at ``setup``: the fixed cost of
    one call (its forward pass) and the cost of each draw (the tuple law's backward walk, the
    outputs and ln u), timed in this process on its own seed (never a run's). A one-draw
    warm-up compiles the backward walk; then one draw and ``8, 32, 128, ...`` draws are timed
    until the draws beyond the first take :data:`PROBE_SECONDS` and at least the one-draw time
    (so that its jitter cannot swamp them), or :data:`PROBE_DRAWS` is reached; the time per
    draw is never taken below a quarter of the last probe's average. Where one pass takes
    :data:`SLOW_PASS_SECONDS` or more, the probe goes straight to :data:`PROBE_DRAWS` draws
    (every call repeats the pass, so growing the draws would cost several passes). Measured
    once per model, order and ``max_states`` in a process. The escort engine's rates for
    plans, in place of the plain engine's probe."""
    key = (id(model), setup.order, max_states)
    cached = _MEASURED.get(key)
    if cached is not None and cached[0] is model:
        return cached[1]
    rates = _probe(model, setup, max_states)
    _MEASURED[key] = (model, rates)
    return rates


def _probe(model: PrivacyLossModel, setup: EscortSetup, max_states: int) -> tuple[float, float]:
    """The timing of :func:`measure_escort_seconds` (no cache)."""
    quiet = EngineConfig(progress=False)

    def timed(size: int) -> float:  # CPU time of this process: robust to other load
        start = time.process_time()
        escort_sample(
            model, setup, (0.0,), setup.log_support(0.0), n_samples=size, seed=1 << 31,
            stream=0, config=quiet, description="escort rate probe", max_states=max_states,
        )  # fmt: skip
        return time.process_time() - start

    warm_up = timed(1)
    fixed, size = (warm_up, PROBE_DRAWS) if warm_up >= 4 * SLOW_PASS_SECONDS else (timed(1), 8)
    if fixed >= SLOW_PASS_SECONDS:
        size = PROBE_DRAWS
    while True:
        seconds = timed(size)
        # the draws must outweigh the fixed cost, else its jitter swamps them
        if seconds - fixed >= max(PROBE_SECONDS, fixed) or size >= PROBE_DRAWS:
            per_draw = max(seconds - fixed, 0.0) / (size - 1)
            return fixed, max(per_draw, seconds / size / 4)
        size *= 4
