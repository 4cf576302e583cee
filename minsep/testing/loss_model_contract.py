"""The contract every Monte Carlo privacy-loss model satisfies (docs/math.md §1, §7)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import pytest

from minsep.framework.backend import numpy_backend
from minsep.framework.interfaces import Direction, PrivacyLossModel, Transcript
from minsep.testing.assertions import assert_change_of_measure
from minsep.testing.zero_out import ZeroOutOracle


def _draw(model: PrivacyLossModel, samples: int, direction: Direction, seed: int) -> Transcript:
    backend = numpy_backend()
    return model.draw(samples, direction, backend.rng(np.random.SeedSequence(seed)), backend)


def _values(model: PrivacyLossModel, transcript: Transcript, sigma: float) -> np.ndarray:
    return np.asarray(numpy_backend().to_numpy(model.log_ratio(transcript, sigma)), dtype=float)


class LossModelContract:
    """Override the ``loss_model`` fixture to check a :class:`PrivacyLossModel`.

    Checks the two-stage sampling every accountant relies on: sigma-free transcripts of the
    requested size and direction, ``ln P/Q`` finite per sample for every sigma, the direction's
    sign applied by ``privacy_loss``, reproducible draws, and transcripts reusable across sigma
    (common random numbers, docs/math.md §7).

    Two checks tie the model to its math, and catch a wrong sign, a sampler that ignores a
    constraint of the scheme, or an off-by-one in a recursion:

    * change of measure in both directions, ``E_P[exp(-L)] = 1`` (y ~ P, ``L = ln P/Q``) and
      ``E_Q[exp(L)] = 1`` (y ~ Q, ``L = ln P/Q``; i.e. ``E_Q[P/Q] = 1``), at ``CHANGE_SIGMA`` on
      ``CHANGE_SAMPLES`` draws of fixed seeds: the sample mean must lie within ``CHANGE_K``
      standard errors (from the sample variance) of 1, the standard error below
      ``CHANGE_MAX_STDERR`` so that the check has power (``<= 1`` one-sided for a model that
      bounds the ratio, docs/math.md §2.1). With ``CHANGE_K = 5`` a correct model fails with
      probability below 1e-6 under the normal approximation, and the seeds are fixed;
    * when the ``zero_out_oracle`` fixture returns a :class:`~minsep.testing.ZeroOutOracle`
      (the scheme's pattern law and ``C``, tiny n), ``log_ratio_at(y, sigma, numpy)`` equals
      the brute-force ``ln P(y)/Q(y)`` to ``ORACLE_ATOL`` on outputs the oracle draws from P
      and from Q. The ratio pinned pointwise, change of measure then pins the sampler.
    """

    SAMPLES: ClassVar[int] = 512
    SIGMAS: ClassVar[tuple[float, ...]] = (0.3, 1.0, 4.0, 30.0)
    CHANGE_SAMPLES: ClassVar[int] = 40_000
    CHANGE_SIGMA: ClassVar[float] = 1.5
    CHANGE_K: ClassVar[float] = 5.0
    CHANGE_MAX_STDERR: ClassVar[float] = 0.05
    ORACLE_SAMPLES: ClassVar[int] = 64
    ORACLE_ATOL: ClassVar[float] = 1e-9

    @pytest.fixture
    def zero_out_oracle(self, loss_model: PrivacyLossModel) -> ZeroOutOracle | None:
        """The brute-force oracle of ``loss_model`` (None: no oracle check). Override it to
        return ``ZeroOutOracle(matrix=C, law=pattern_law)`` for a tiny instance."""
        return None

    def test_n_steps_is_a_positive_int(self, loss_model: PrivacyLossModel) -> None:
        assert isinstance(loss_model.n_steps, int) and loss_model.n_steps >= 1

    def test_transcripts_have_the_requested_size_and_direction(
        self, loss_model: PrivacyLossModel
    ) -> None:
        for direction in Direction:
            transcript: Any = _draw(loss_model, self.SAMPLES, direction, seed=1)
            assert isinstance(transcript, Transcript)
            assert transcript.n_samples == self.SAMPLES
            assert transcript.direction is direction

    def test_log_ratio_is_finite_per_sample_for_several_sigmas(
        self, loss_model: PrivacyLossModel
    ) -> None:
        for direction in Direction:
            transcript = _draw(loss_model, self.SAMPLES, direction, seed=2)
            for sigma in self.SIGMAS:
                values = _values(loss_model, transcript, sigma)
                assert values.shape == (self.SAMPLES,), f"sigma = {sigma}: shape {values.shape}"
                assert np.all(np.isfinite(values)), (
                    f"{direction.value}, sigma = {sigma}: {np.sum(~np.isfinite(values))} "
                    "non-finite values"
                )

    def test_privacy_loss_applies_the_direction_sign(self, loss_model: PrivacyLossModel) -> None:
        """``L = ln P/Q`` under REMOVE and ``-ln P/Q`` under ADD (docs/math.md §1)."""
        for direction in Direction:
            transcript = _draw(loss_model, self.SAMPLES, direction, seed=3)
            ratio = _values(loss_model, transcript, 1.0)
            loss = np.asarray(loss_model.privacy_loss(transcript, 1.0), dtype=float)
            np.testing.assert_array_equal(loss, direction.sign * ratio)

    def test_privacy_loss_is_positive_on_average_at_low_noise(
        self, loss_model: PrivacyLossModel
    ) -> None:
        """E[L] is a KL divergence in each direction, so a sampler that mixes the directions
        up (e.g. draws y ~ Q for REMOVE) shows a negative mean at low noise."""
        sigma = self.SIGMAS[0]
        for direction in Direction:
            transcript = _draw(loss_model, 4 * self.SAMPLES, direction, seed=4)
            loss = np.asarray(loss_model.privacy_loss(transcript, sigma), dtype=float)
            assert loss.mean() > 0, f"{direction.value}: mean privacy loss {loss.mean():.3g}"

    def test_draws_are_reproducible_for_a_fixed_seed(self, loss_model: PrivacyLossModel) -> None:
        for direction in Direction:
            first = _values(loss_model, _draw(loss_model, self.SAMPLES, direction, seed=5), 1.0)
            again = _values(loss_model, _draw(loss_model, self.SAMPLES, direction, seed=5), 1.0)
            other = _values(loss_model, _draw(loss_model, self.SAMPLES, direction, seed=6), 1.0)
            np.testing.assert_array_equal(first, again)
            assert not np.array_equal(first, other), "another seed gave the same draws"

    def test_a_transcript_is_reused_across_sigma(self, loss_model: PrivacyLossModel) -> None:
        """Evaluating a transcript leaves it unchanged, so calibration can sweep sigma on one
        set of draws: the values at each sigma equal those of a fresh draw of the same seed."""
        for direction in Direction:
            shared = _draw(loss_model, self.SAMPLES, direction, seed=7)
            first = [_values(loss_model, shared, sigma) for sigma in self.SIGMAS]
            for sigma, value in zip(self.SIGMAS, first, strict=True):
                fresh = _draw(loss_model, self.SAMPLES, direction, seed=7)
                np.testing.assert_array_equal(_values(loss_model, shared, sigma), value)
                np.testing.assert_allclose(
                    _values(loss_model, fresh, sigma), value, rtol=1e-12, atol=1e-12
                )

    def test_log_ratio_vanishes_as_the_noise_grows(self, loss_model: PrivacyLossModel) -> None:
        """``ln P/Q -> 0`` as sigma grows: the mean magnitude falls from the lowest to the
        highest sigma on the same draws."""
        for direction in Direction:
            transcript = _draw(loss_model, self.SAMPLES, direction, seed=8)
            low, high = (
                float(np.abs(_values(loss_model, transcript, sigma)).mean())
                for sigma in (self.SIGMAS[0], self.SIGMAS[-1])
            )
            assert high < low, f"{direction.value}: mean |ln P/Q| {high:.3g} >= {low:.3g}"

    def test_change_of_measure_under_p(self, loss_model: PrivacyLossModel) -> None:
        """``E_P[exp(-L)] = E_P[Q/P] = 1`` on REMOVE draws (docs/math.md §1)."""
        assert_change_of_measure(
            loss_model,
            Direction.REMOVE,
            self.CHANGE_SIGMA,
            samples=self.CHANGE_SAMPLES,
            seed=11,
            k=self.CHANGE_K,
            max_stderr=self.CHANGE_MAX_STDERR,
        )

    def test_change_of_measure_under_q(self, loss_model: PrivacyLossModel) -> None:
        """``E_Q[exp(ln P/Q)] = E_Q[P/Q] = 1`` on ADD draws (docs/math.md §1)."""
        assert_change_of_measure(
            loss_model,
            Direction.ADD,
            self.CHANGE_SIGMA,
            samples=self.CHANGE_SAMPLES,
            seed=12,
            k=self.CHANGE_K,
            max_stderr=self.CHANGE_MAX_STDERR,
        )

    def test_log_ratio_matches_the_zero_out_oracle(
        self, loss_model: PrivacyLossModel, zero_out_oracle: ZeroOutOracle | None
    ) -> None:
        """``ln P(y)/Q(y)`` of the model equals the oracle's enumeration at shared outputs."""
        if zero_out_oracle is None:
            pytest.skip("no zero_out_oracle given for this loss model")
        at = getattr(loss_model, "log_ratio_at", None)
        assert at is not None, (
            f"{type(loss_model).__name__} has no log_ratio_at(outputs, sigma, xp): the oracle "
            "check evaluates ln P/Q at outputs it draws itself"
        )
        assert zero_out_oracle.n_steps == loss_model.n_steps, "oracle and model differ in n"
        for seed, direction in enumerate(Direction):
            for sigma in self.SIGMAS[:3]:
                y = zero_out_oracle.draw_outputs(self.ORACLE_SAMPLES, direction, sigma, seed)
                np.testing.assert_allclose(
                    np.asarray(at(y, sigma, np), dtype=float),
                    zero_out_oracle.log_ratio(y, sigma),
                    rtol=0,
                    atol=self.ORACLE_ATOL,
                    err_msg=f"ln P/Q against the oracle, y ~ {direction.name}, sigma = {sigma}",
                )
