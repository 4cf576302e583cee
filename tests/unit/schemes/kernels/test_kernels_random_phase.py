"""The fused kernels of random-phase cyclic Poisson (:mod:`minsep.schemes.cyclic_poisson.fused`)
against the portable array code: the same participation from the same stream, the same losses to
rounding on both the linear-scale and the log-domain path, and the edge cases of the law (b > n,
q = 1, b = 1). The enumeration tests of ``tests/theorems/test_loss_random_phase.py`` pin the
fused kernel itself (``log_ratio_at`` runs it under numba)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from minsep.framework.backend import numpy_backend
from minsep.framework.interfaces import Direction
from minsep.schemes.b_min_sep.fused import signal_table
from minsep.schemes.cyclic_poisson import cpu_kernels
from minsep.schemes.kernels.blocks import tail_norms
from minsep.schemes.kernels.jit import NUMBA_AVAILABLE
from minsep.schemes.losses import RandomPhaseCyclicLossModel

pytestmark = pytest.mark.skipif(not NUMBA_AVAILABLE, reason="needs numba")

FUSED, ARRAY = numpy_backend(), numpy_backend("array")
CASES = [
    # (coefficients, n, b, q)
    ((0.9, 0.3), 7, 2, 0.4),
    ((0.7, 0.5, 0.3), 64, 3, 0.5),
    ((1.0,), 3, 5, 0.6),  # b > n: empty phases
    ((0.6, 0.5, 0.4), 70, 3, 1.0),  # q = 1
    ((1.0,), 60, 1, 0.25),  # b = 1: Poisson
    (tuple(float(v) for v in np.linspace(1.0, 0.1, 16)), 1024, 16, 16 / 256),
]
#: sigma 0.02 sends some exponents past the linear path's range (the log-domain rows).
SIGMAS = (0.02, 0.5, 1.0, 3.0)


def _model(case: tuple[Any, ...]) -> RandomPhaseCyclicLossModel:
    c, n, b, q = case
    return RandomPhaseCyclicLossModel(coefficients=c, n_steps=n, groups=b, group_rate=q)


def _draw(model: RandomPhaseCyclicLossModel, direction: Direction, backend: Any) -> Any:
    return model.draw(257, direction, backend.rng(np.random.SeedSequence(4)), backend)


@pytest.mark.parametrize("case", CASES)
def test_the_fused_draw_is_the_array_draw(case: tuple[Any, ...]) -> None:
    model = _model(case)
    fused, array = _draw(model, Direction.REMOVE, FUSED), _draw(model, Direction.REMOVE, ARRAY)
    assert fused.stored_signal is None and fused.steps is not None  # kept sparsely
    np.testing.assert_allclose(fused.signal, array.signal, rtol=0, atol=1e-12)
    np.testing.assert_allclose(fused.noise, array.noise, rtol=0, atol=1e-12)
    n = model.n_steps
    steps = np.asarray(fused.steps)
    taken = steps[steps < n]
    assert taken.size > 0 or model.group_rate == 0.0
    rows = np.nonzero(steps < n)[0]  # each row's steps share one phase
    assert np.all(taken % model.groups == steps[rows, 0] % model.groups)


@pytest.mark.parametrize("direction", list(Direction))
@pytest.mark.parametrize("case", CASES)
def test_fused_losses_agree_with_the_array_code(
    case: tuple[Any, ...], direction: Direction
) -> None:
    model = _model(case)
    fused, array = _draw(model, direction, FUSED), _draw(model, direction, ARRAY)
    for sigma in SIGMAS:
        got = model.privacy_loss(fused, sigma)
        want = model.privacy_loss(array, sigma)
        assert np.all(np.isfinite(got))
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-11)


@pytest.mark.parametrize(("sigma", "wild"), [(1.0, False), (0.02, True)])
def test_rows_out_of_the_linear_range_are_done_in_logs(sigma: float, wild: bool) -> None:
    model = _model(CASES[1])
    transcript = _draw(model, Direction.REMOVE, FUSED)
    n = model.n_steps
    out = np.empty(transcript.n_samples)
    steps = np.asarray(transcript.steps)
    inv_s2 = 1.0 / (sigma * sigma)  # as the driver forms them
    in_logs = cpu_kernels.random_phase_rows(
        np.asarray(transcript.noise),
        steps,
        np.ones(steps.shape[1]),
        signal_table(model.coefficients, n),
        -(0.5 * inv_s2) * tail_norms(model.coefficients, n),
        1.0 / sigma,
        inv_s2,
        model.group_rate,
        model.groups,
        out,
    )
    assert (in_logs > 0) == wild
    np.testing.assert_array_equal(out, model.log_ratio(transcript, sigma))


def test_declared_transcript_bytes_are_the_arrays() -> None:
    model = _model(CASES[-1])
    for direction in Direction:
        transcript = _draw(model, direction, FUSED)
        assert transcript.nbytes() == model.transcript_bytes(257, direction, FUSED)
        array = _draw(model, direction, ARRAY)
        assert array.nbytes() == model.transcript_bytes(257, direction, ARRAY)
