"""What the run has spent: certified (ε, δ) of the steps taken and of the whole run.

The whole run is what was calibrated (or, for a given σ, what the accountant certified at δ).
For the first k < n steps: releasing them is post-processing of the whole run's release, so the
whole run's ε bounds them; where the scheme declares that its first k steps are the k-step
scheme (``SamplingScheme.prefix_scheme``: Poisson and b-min-sep, whose per-step law does not
depend on n) and the strategy is lower triangular (every registered one is: the first k noisy
outputs use only rows 1..k of C), the k-step mechanism is accounted directly by the
deterministic certified accountants (exact PLD, Rényi DP, unamplified Gaussian) and the
smallest ε is reported.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from minsep.framework.errors import MinsepError
from minsep.framework.setup import build_accountant
from minsep.training.private import PrivateRun

__all__ = ["PREFIX_ACCOUNTANTS", "PrivacyAccountant", "PrivacySpent"]

#: The deterministic certified accountants asked about a prefix of the run, in this order.
PREFIX_ACCOUNTANTS: tuple[str, ...] = ("pld", "rdp", "gaussian")


@attrs.frozen
class PrivacySpent:
    """A certified (ε, δ) for the first ``steps`` of ``n_steps`` steps, and who certified it."""

    epsilon: float
    delta: float
    steps: int
    n_steps: int
    accountant: str

    def __str__(self) -> str:
        return (
            f"({self.epsilon:.4g}, {self.delta:.3g})-DP after {self.steps} of {self.n_steps} "
            f"steps (certified by {self.accountant})"
        )


class PrivacyAccountant:
    """Reports :class:`PrivacySpent` for the steps taken so far and for the whole run."""

    def __init__(
        self, run: PrivateRun, whole: PrivacySpent, steps_taken: Callable[[], int]
    ) -> None:
        self.run = run
        self._whole = whole
        self._steps_taken = steps_taken
        self._prefixes: dict[int, PrivacySpent] = {}

    def whole_run(self) -> PrivacySpent:
        """The certified (ε, δ) of all ``n`` steps."""
        return self._whole

    def spent(self) -> PrivacySpent:
        """The certified (ε, δ) of the steps taken so far."""
        return self.prefix(self._steps_taken())

    def prefix(self, steps: int) -> PrivacySpent:
        """The certified (ε, δ) of the first ``steps`` steps (0: nothing released yet)."""
        n, whole = self.run.n_steps, self._whole
        if steps >= n:
            return whole
        if steps <= 0:
            return attrs.evolve(whole, epsilon=0.0, delta=0.0, steps=0)
        if steps not in self._prefixes:
            self._prefixes[steps] = self._account_prefix(steps)
        return self._prefixes[steps]

    def _account_prefix(self, steps: int) -> PrivacySpent:
        whole = self._whole
        best = attrs.evolve(whole, steps=steps, accountant=f"{whole.accountant} (whole run)")
        scheme = self.run.scheme.prefix_scheme(steps)
        if scheme is None:
            return best
        for name in PREFIX_ACCOUNTANTS:
            accountant = build_accountant(name, strict=False)
            if not accountant.supports(scheme, self.run.strategy):
                continue
            try:
                result: Any = accountant.epsilon(
                    scheme, self.run.strategy, self.run.sigma, whole.delta
                )
            except MinsepError:
                continue
            epsilon = float(result.certified_epsilon)
            if epsilon < best.epsilon:
                best = attrs.evolve(best, epsilon=epsilon, accountant=f"{name} (first {steps})")
        return best
