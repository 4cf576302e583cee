"""Assertions shared by the contracts and by statistical and brute-force tests."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import pytest

from minsep.framework.backend import Backend, numpy_backend
from minsep.framework.errors import ConfigurationError
from minsep.framework.interfaces import Direction, PrivacyLossModel


def assert_refuses_invalid(cls: type, invalid: Iterable[tuple[dict[str, Any], str]]) -> None:
    """Each ``cls(**kwargs)`` raises ConfigurationError whose message names ``parameter``."""
    for kwargs, parameter in invalid:
        with pytest.raises(ConfigurationError) as info:
            cls(**kwargs)
        assert parameter in str(info.value), (
            f"{cls.__name__}({kwargs}) error does not name {parameter!r}: {info.value}"
        )


def assert_mc_agrees_with_exact(
    mc_value: float, exact: float, stderr: float, *, k: float = 5.0, atol: float = 0.0
) -> None:
    """``|mc_value - exact| <= k * stderr + atol``: a Monte Carlo mean agrees with its target.

    ``k`` is the number of standard errors allowed (5 keeps a fixed-seed test's false-alarm
    probability below 1e-6 under a normal approximation); ``atol`` absorbs a known bias floor.
    A non-finite or negative ``stderr`` fails: it would make the bound meaningless.
    """
    assert math.isfinite(stderr) and stderr >= 0, f"standard error {stderr!r} is not usable"
    assert math.isfinite(mc_value), f"Monte Carlo value {mc_value!r} is not finite"
    gap = abs(mc_value - exact)
    assert gap <= k * stderr + atol, (
        f"Monte Carlo {mc_value:.6g} vs exact {exact:.6g}: gap {gap:.3g} exceeds "
        f"{k:g} x stderr {stderr:.3g} + {atol:.3g}"
        + (f" ({gap / stderr:.1f} standard errors)" if stderr > 0 else "")
    )


def assert_loss_model_matches_bruteforce(
    log_ratio: Callable[[np.ndarray, float], Any],
    oracle: Callable[[np.ndarray, float], float],
    outputs: np.ndarray,
    sigmas: Sequence[float],
    *,
    atol: float = 1e-10,
) -> None:
    """A model's ``ln P(y)/Q(y)`` equals a brute-force oracle on every row of ``outputs``.

    ``log_ratio(outputs, sigma)`` is the model under test on a batch of outputs (e.g.
    ``lambda y, s: model.log_ratio_at(y, s, np)``); ``oracle(row, sigma)`` evaluates one output
    by explicit enumeration of the participation patterns (docs/math.md §1-§6).
    """
    outputs = np.asarray(outputs, dtype=float)
    assert outputs.ndim == 2 and outputs.shape[0] >= 1, "outputs must be a non-empty 2-D array"
    for sigma in sigmas:
        computed = np.asarray(log_ratio(outputs, sigma), dtype=float)
        expected = np.array([oracle(row, sigma) for row in outputs])
        assert computed.shape == expected.shape, (
            f"sigma = {sigma}: model returned shape {computed.shape}, expected {expected.shape}"
        )
        np.testing.assert_allclose(
            computed, expected, rtol=0, atol=atol, err_msg=f"ln P/Q at sigma = {sigma}"
        )


def change_of_measure_mean(
    model: PrivacyLossModel,
    direction: Direction,
    sigma: float,
    *,
    samples: int,
    seed: int,
    backend: Backend | None = None,
) -> tuple[float, float]:
    """Sample mean and standard error of ``exp(-L)`` over fresh draws in ``direction``.

    Its expectation is 1 in both directions (docs/math.md §1): ``E_P[Q/P] = 1`` for REMOVE
    (``L = ln P/Q``, ``y ~ P``) and ``E_Q[P/Q] = 1`` for ADD (``L = -ln P/Q``, ``y ~ Q``).
    """
    backend = backend or numpy_backend()
    transcript = model.draw(samples, direction, backend.rng(np.random.SeedSequence(seed)), backend)
    losses = np.asarray(backend.to_numpy(model.privacy_loss(transcript, sigma)), dtype=float)
    values = np.exp(-losses)
    return float(values.mean()), float(values.std() / math.sqrt(values.size))


def assert_change_of_measure(
    model: PrivacyLossModel,
    direction: Direction,
    sigma: float,
    *,
    samples: int,
    seed: int,
    k: float = 5.0,
    atol: float = 1e-3,
    max_stderr: float = 0.05,
) -> None:
    """``E[exp(-L)] = 1`` within ``k`` standard errors (plus ``atol``), the standard error
    being below ``max_stderr`` so that the check has power; ``E[exp(-L)] <= 1`` (one-sided)
    for a model whose ``log_ratio`` is a bound (``bounds_ratio``, docs/math.md §2.1).

    The REMOVE identity ties the sampler to the density ratio: drawing the participation
    pattern from another law than the one ``log_ratio`` integrates over breaks it.
    """
    mean, stderr = change_of_measure_mean(model, direction, sigma, samples=samples, seed=seed)
    assert stderr < max_stderr, (
        f"{type(model).__name__} {direction.value}: standard error {stderr:.3g} >= "
        f"{max_stderr:g}; draw more samples for a meaningful check"
    )
    if model.bounds_ratio:
        assert mean <= 1.0 + k * stderr + atol, (
            f"{type(model).__name__} {direction.value}: E[exp(-L)] = {mean:.6g} > 1 beyond "
            f"{k:g} x stderr {stderr:.3g} + {atol:.3g}: the bound is on the wrong side"
        )
        return
    assert_mc_agrees_with_exact(mean, 1.0, stderr, k=k, atol=atol)
