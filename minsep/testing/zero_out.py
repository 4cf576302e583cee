"""A brute-force oracle for zero-out mixtures, and pattern laws by enumeration (tiny n only).

Under zero-out adjacency (docs/math.md §1) the output is ``y = C x + z``, ``z ~ N(0, sigma^2 I)``,
with the participation pattern ``x`` of the sensitive unit drawn from the scheme's pattern law
under P and ``x = 0`` under Q. The oracle evaluates

    ln P(y)/Q(y) = ln sum_x Pr_P[x] N(Cx, sigma^2 I)(y) - ln sum_x Pr_Q[x] N(Cx, sigma^2 I)(y)

by summing over every enumerated pattern, with ``C`` a dense matrix: no recursion, no
sampler, nothing shared with a loss model. A plugin author gives the pattern law (a dict
``{pattern: probability}``, e.g. from :func:`enumerate_law`) and ``C``; the oracle then pins the
model's ``ln P/Q`` pointwise (:meth:`ZeroOutOracle.log_ratio`) on outputs it draws itself
(:meth:`ZeroOutOracle.draw_outputs`), and :class:`~minsep.testing.LossModelContract` runs the
comparison when its ``zero_out_oracle`` fixture returns one. For n <= 2 it also integrates the
exact ``delta(epsilon)`` (:meth:`ZeroOutOracle.delta`), a target for an accountant's answer.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import numpy as np
from scipy import integrate
from scipy.special import logsumexp

from minsep.framework.errors import ConfigurationError
from minsep.framework.interfaces import Direction

Pattern = tuple[int, ...]
#: A participation-pattern law: every pattern of positive probability, with its probability.
PatternLaw = Mapping[Pattern, float]

#: Most patterns an oracle sums over (the enumeration is for tiny n only).
MAX_PATTERNS = 1 << 16
#: Most steps :meth:`ZeroOutOracle.delta` integrates over (adaptive quadrature in n dimensions).
MAX_INTEGRATION_STEPS = 2
#: Half-width of the integration box around the component means, in units of sigma: the mass
#: left outside is at most ``2 n Phi(-10) < 1.6e-23 n``, a bound on what the truncation drops.
_BOX_SIGMAS = 10.0


def enumerate_law(
    n: int, probability: Callable[[Pattern], float], values: Sequence[int] = (0, 1)
) -> dict[Pattern, float]:
    """The law ``{x: probability(x)}`` over every ``x`` in ``values^n`` of positive probability.

    ``probability`` states the scheme's law of one pattern directly (e.g. a product of the
    per-step participation probabilities, zero where a constraint is broken), so nothing of a
    loss model's recursion is reused. Refuses more than :data:`MAX_PATTERNS` candidates.
    """
    if len(values) ** n > MAX_PATTERNS:
        raise ConfigurationError(
            f"enumerate_law: {len(values)}^{n} patterns exceed {MAX_PATTERNS}; use a smaller n"
        )
    law = {x: float(probability(x)) for x in itertools.product(tuple(values), repeat=n)}
    return {x: prob for x, prob in law.items() if prob > 0}


def chain_path_probability(x: Pattern, p: float, b: int, state: int) -> float:
    """Probability that one unit starting in ``state`` of the b-min-sep availability chain
    (0: available; s > 0: s more steps blocked) participates exactly on ``x`` (docs/math.md §3)."""
    prob = 1.0
    for xt in x:
        if state == 0:
            if xt:
                prob *= p
                state = b - 1
            else:
                prob *= 1 - p
        else:
            if xt:
                return 0.0
            state -= 1
    return prob


def min_sep_initial_law(p: float, b: int, warm: bool) -> dict[int, float]:
    """Law of the chain's initial state: 0 (cold start), or the stationary law (warm start)."""
    if not warm:
        return {0: 1.0}
    norm = 1 + (b - 1) * p
    return {s: (1.0 if s == 0 else p) / norm for s in range(b)}


def min_sep_law(n: int, p: float, b: int, warm: bool) -> dict[Pattern, float]:
    """The pattern law of one unit under b-min-sep sampling (paper Algorithm 1 cold, 2 warm)."""
    start = min_sep_initial_law(p, b, warm)
    return enumerate_law(
        n, lambda x: sum(w * chain_path_probability(x, p, b, s) for s, w in start.items())
    )


def banded_toeplitz_matrix(coefficients: Sequence[float], n: int) -> np.ndarray:
    """Dense banded lower-triangular Toeplitz ``C[t, s] = c[t - s]`` for ``0 <= t - s < k``."""
    C = np.zeros((n, n))
    for t in range(n):
        for s in range(n):
            if 0 <= t - s < len(coefficients):
                C[t, s] = coefficients[t - s]
    return C


def log_gaussian_ratio(C: np.ndarray, x: Sequence[float], y: np.ndarray, sigma: float) -> float:
    """``ln N(Cx, sigma^2 I)(y) / N(0, sigma^2 I)(y)``, straight from the two densities."""
    mean = C @ np.asarray(x, dtype=float)
    return float(-(np.sum((y - mean) ** 2) - np.sum(y**2)) / (2 * sigma**2))


def log_mixture_ratio(law: PatternLaw, C: np.ndarray, y: np.ndarray, sigma: float) -> float:
    """``ln sum_x Pr[x] N(Cx)(y) / N(0)(y)`` for one output ``y``, one pattern at a time."""
    terms = [
        math.log(prob) + log_gaussian_ratio(C, x, y, sigma) for x, prob in law.items() if prob > 0
    ]
    return float(logsumexp(terms))


def _float_matrix(matrix: Any) -> np.ndarray:
    return np.array(matrix, dtype=float, copy=True)


def _law(law: PatternLaw) -> dict[Pattern, float]:
    return {tuple(int(v) for v in x): float(prob) for x, prob in law.items()}


def _zero_law(n: int) -> dict[Pattern, float]:
    return {(0,) * n: 1.0}


def _check_law(name: str, law: PatternLaw, n: int) -> None:
    if not law or len(law) > MAX_PATTERNS:
        raise ConfigurationError(f"{name}: {len(law)} patterns; need 1 to {MAX_PATTERNS}")
    if any(len(x) != n for x in law):
        raise ConfigurationError(f"{name}: every pattern must have n = {n} entries")
    total = math.fsum(law.values())
    if min(law.values()) < 0 or abs(total - 1) > 1e-9:
        raise ConfigurationError(f"{name}: probabilities must be >= 0 and sum to 1 (sum {total!r})")


@attrs.frozen(eq=False)
class ZeroOutOracle:
    """The exact ``ln P/Q`` of a Gaussian mixture pair by enumeration (docs/math.md §1).

    ``P = sum_x law[x] N(C x, sigma^2 I)`` and ``Q = sum_x reference[x] N(C x, sigma^2 I)``;
    ``reference`` defaults to the all-zero pattern (zero-out: ``Q = N(0, sigma^2 I)``), and
    a scheme whose Q is a mixture too (truncation) passes its law.
    """

    matrix: np.ndarray = attrs.field(converter=_float_matrix)
    law: dict[Pattern, float] = attrs.field(converter=_law)
    reference: dict[Pattern, float] = attrs.field(converter=_law, factory=dict)

    def __attrs_post_init__(self) -> None:
        n = self.n_steps
        if self.matrix.shape != (n, n):
            raise ConfigurationError(f"matrix: must be square, got shape {self.matrix.shape}")
        if not self.reference:
            object.__setattr__(self, "reference", _zero_law(n))
        _check_law("law", self.law, n)
        _check_law("reference", self.reference, n)

    @property
    def n_steps(self) -> int:
        return int(self.matrix.shape[0])

    def _log_density(self, law: PatternLaw, outputs: np.ndarray, sigma: float) -> np.ndarray:
        """``ln sum_x law[x] N(Cx)(y)/N(0)(y)`` per row of ``outputs``."""
        patterns = np.array(list(law), dtype=float)
        means = patterns @ self.matrix.T  # one row C x per pattern
        exponents = (outputs @ means.T - 0.5 * np.sum(means**2, axis=1)) / sigma**2
        return np.asarray(logsumexp(exponents + np.log(list(law.values())), axis=1))

    def log_ratio(self, outputs: Any, sigma: float) -> np.ndarray:
        """``ln P(y)/Q(y)`` per row of ``outputs`` (shape ``(samples, n)``)."""
        y = np.atleast_2d(np.asarray(outputs, dtype=float))
        if y.shape[1] != self.n_steps:
            raise ConfigurationError(f"outputs: need {self.n_steps} columns, got {y.shape[1]}")
        ratio = self._log_density(self.law, y, sigma) - self._log_density(self.reference, y, sigma)
        return np.asarray(ratio, dtype=float)

    def delta(
        self, epsilon: float, sigma: float, direction: Direction, *, tolerance: float = 1e-10
    ) -> float:
        """``delta(epsilon)`` of the pair in ``direction`` by adaptive quadrature (n <= 2):
        ``int (P - e^eps Q)_+ dy`` for REMOVE, ``int (Q - e^eps P)_+ dy`` for ADD
        (docs/math.md §1), over a box of ``_BOX_SIGMAS`` sigmas around the component means
        (the mass outside is below ``1.6e-23 n``), to absolute ``tolerance`` per quadrature."""
        n = self.n_steps
        if n > MAX_INTEGRATION_STEPS:
            raise ConfigurationError(
                f"ZeroOutOracle.delta: n = {n} is too large for quadrature (at most "
                f"{MAX_INTEGRATION_STEPS}); use log_ratio on samples instead"
            )
        first, second = (
            (self.law, self.reference)
            if direction is Direction.REMOVE
            else (self.reference, self.law)
        )
        means = np.array(list(first) + list(second), dtype=float) @ self.matrix.T
        box = [
            (
                float(means[:, i].min()) - _BOX_SIGMAS * sigma,
                float(means[:, i].max()) + _BOX_SIGMAS * sigma,
            )
            for i in range(n)
        ]
        log_norm = -0.5 * n * math.log(2 * math.pi * sigma**2)

        def excess(*y: float) -> float:
            point = np.array([y])
            base = log_norm - 0.5 * float(np.sum(point**2)) / sigma**2
            upper = base + float(self._log_density(first, point, sigma)[0])
            lower = base + epsilon + float(self._log_density(second, point, sigma)[0])
            return max(math.exp(upper) - math.exp(lower), 0.0)

        value, _ = integrate.nquad(excess, box, opts={"epsabs": tolerance, "limit": 200})
        return float(max(value, 0.0))

    def draw_outputs(self, samples: int, direction: Direction, sigma: float, seed: int) -> Any:
        """``samples`` outputs ``y = C x + sigma z`` with ``x`` from P's law (REMOVE) or Q's
        (ADD), from a generator seeded with ``seed``."""
        law = self.law if direction is Direction.REMOVE else self.reference
        gen = np.random.default_rng(seed)
        patterns = np.array(list(law), dtype=float)
        probs = np.array(list(law.values()))
        chosen = gen.choice(len(patterns), size=samples, p=probs / probs.sum())
        noise = gen.standard_normal((samples, self.n_steps))
        return patterns[chosen] @ self.matrix.T + sigma * noise
