"""Symbolic derivations behind the b-min-sep sampler (docs/math.md §3, §9), checked with sympy.

Each test derives a closed form from its definition (not from the formula being checked) and
compares it with what docs/math.md states and what the code computes.
"""

from __future__ import annotations

import sympy as sp

from minsep.schemes.b_min_sep.scheme import probability_for_rate, stationary_law

p, p0, s, n = sp.symbols("p p0 s n", positive=True)
b = sp.Symbol("b", positive=True, integer=True)

# The per-step probability in terms of the rate (docs/math.md §3), the formula under test.
P_OF_P0 = p0 / (1 - p0 * (b - 1))


def transition_matrix(b_value: int, prob: sp.Expr) -> sp.Matrix:
    """Availability chain on states 0..b-1 (steps still barred)."""
    m = sp.zeros(b_value, b_value)
    if b_value == 1:
        m[0, 0] = 1
        return m
    m[0, 0] = 1 - prob
    m[0, b_value - 1] = prob
    for state in range(1, b_value):
        m[state, state - 1] = 1
    return m


def stationary_pi(b_value: int, prob: sp.Expr) -> sp.Matrix:
    """pi(0) = 1/(1+(b-1)p), pi(s) = p/(1+(b-1)p) as stated in docs/math.md §3."""
    z = 1 + (b_value - 1) * prob
    return sp.Matrix([[1 / z] + [prob / z] * (b_value - 1)])


def test_probability_and_rate_are_inverse() -> None:
    rate = p / (1 + (b - 1) * p)  # participation rate = pi of the "just joined" state
    solved = sp.solve(sp.Eq(p0, rate), p)
    assert len(solved) == 1
    assert sp.simplify(solved[0] - P_OF_P0) == 0
    assert sp.simplify(rate.subs(p, P_OF_P0) - p0) == 0
    # p <= 1 iff p0 <= 1/b: at p0 = 1/b the probability is exactly 1.
    assert sp.simplify(P_OF_P0.subs(p0, 1 / b)) == 1
    for b_value, rate_value in ((1, 0.3), (4, 0.1), (8, 0.125), (3, 0.2)):
        exact = float(P_OF_P0.subs({p0: sp.Rational(str(rate_value)), b: b_value}))
        assert abs(probability_for_rate(rate_value, b_value) - exact) < 1e-15


def test_pi_is_stationary() -> None:
    for b_value in range(1, 7):
        pi = stationary_pi(b_value, p)
        residual = sp.simplify(pi * transition_matrix(b_value, p) - pi)
        assert residual == sp.zeros(1, b_value)
        assert sp.simplify(sum(pi) - 1) == 0
        numeric = [float(v.subs(p, sp.Rational(3, 10))) for v in pi]
        assert (
            max(abs(x - y) for x, y in zip(numeric, stationary_law(0.3, b_value), strict=True))
            < 1e-15
        )
        # The participation rate is the mass flowing out of state 0: pi(0)·p = p0(p).
        assert sp.simplify(pi[0] * p - p / (1 + (b_value - 1) * p)) == 0


def geometric_pgf() -> sp.Expr:
    """PGF of G ~ Geometric(p) on {1, 2, ...}: the wait in state 0 until joining."""
    return p * s / (1 - (1 - p) * s)


def test_geometric_pgf_matches_its_series() -> None:
    series = sp.series(geometric_pgf(), s, 0, 7).removeO()
    for k in range(1, 7):
        assert sp.simplify(series.coeff(s, k) - p * (1 - p) ** (k - 1)) == 0


def return_time_moments() -> tuple[sp.Expr, sp.Expr]:
    """Mean and variance of T = (b - 1) + G, the gap between two participations."""
    g = geometric_pgf()
    pgf_t = s ** (b - 1) * g
    d1 = sp.diff(pgf_t, s).subs(s, 1)
    d2 = sp.diff(pgf_t, s, 2).subs(s, 1)
    return sp.simplify(d1), sp.simplify(d2 + d1 - d1**2)


def test_mean_return_time_is_one_over_p0() -> None:
    mean, variance = return_time_moments()
    assert sp.simplify(mean - ((b - 1) + 1 / p)) == 0
    assert sp.simplify(variance - (1 - p) / p**2) == 0  # the fixed part adds no variance
    assert sp.simplify(mean.subs(p, P_OF_P0) - 1 / p0) == 0
    # Kac: the mean return time to the "just joined" state b-1 is 1/pi(b-1).
    for b_value in range(2, 6):
        pi = stationary_pi(b_value, p)
        assert sp.simplify(1 / pi[b_value - 1] - mean.subs(b, b_value)) == 0


def renewal_variance() -> sp.Expr:
    """Var of the participation count over n steps: n Var(T) / E[T]^3 (renewal theorem)."""
    mean, variance = return_time_moments()
    return sp.simplify((n * variance / mean**3).subs(p, P_OF_P0))


def test_b_min_sep_variance_is_cyclic_times_one_minus_p0_b_minus_one() -> None:
    q = b * p0  # cyclic Poisson's group rate
    var_cyclic = (n / b) * q * (1 - q)  # Binomial(n/b, q)
    assert sp.simplify(var_cyclic - n * p0 * (1 - b * p0)) == 0
    var_bms = renewal_variance()
    assert sp.simplify(var_bms - n * p0 * (1 - b * p0) * (1 - p0 * (b - 1))) == 0
    assert sp.simplify(var_bms - var_cyclic * (1 - p0 * (b - 1))) == 0


def test_poisson_limit_b_equals_one() -> None:
    assert sp.simplify(P_OF_P0.subs(b, 1) - p0) == 0
    assert stationary_pi(1, p) == sp.Matrix([[1]])
    # Poisson: n independent Bernoulli(p0) participations.
    assert sp.simplify(renewal_variance().subs(b, 1) - n * p0 * (1 - p0)) == 0


def test_balls_in_bins_limit_p_equals_one() -> None:
    assert sp.simplify(P_OF_P0.subs(p0, 1 / b)) == 1
    for b_value in range(1, 6):
        pi = stationary_pi(b_value, sp.Integer(1))
        assert pi == sp.Matrix([[sp.Rational(1, b_value)] * b_value])  # a uniform bin
    # Exactly one participation per cycle of length b: no count variance.
    assert sp.simplify(renewal_variance().subs(p0, 1 / b)) == 0


def test_pattern_law_n3_b2() -> None:
    """docs/math.md §3: the law of x in (101, 100, 010, 001, 000) for n = 3, b = 2."""

    def law(start: sp.Matrix) -> dict[str, sp.Expr]:
        out: dict[str, sp.Expr] = {}
        for pattern in ("101", "100", "010", "001", "000", "110", "011", "111"):
            total = sp.Integer(0)
            for s0 in (0, 1):
                prob, state = start[s0], s0
                for x in pattern:
                    if state == 1:
                        prob, state = (0, 0) if x == "1" else (prob, 0)
                    elif x == "1":
                        prob, state = prob * p, 1
                    else:
                        prob = prob * (1 - p)
                total += prob
            out[pattern] = sp.simplify(total)
        return out

    cold = law(sp.Matrix([[1, 0]]))
    warm = law(stationary_pi(2, p))
    half = {p: sp.Rational(1, 2)}
    assert [cold[k].subs(half) for k in ("101", "100", "010", "001", "000")] == [
        sp.Rational(1, 4),
        sp.Rational(1, 4),
        sp.Rational(1, 4),
        sp.Rational(1, 8),
        sp.Rational(1, 8),
    ]
    assert [warm[k].subs(half) for k in ("101", "100", "010", "001", "000")] == [
        sp.Rational(1, 6),
        sp.Rational(1, 6),
        sp.Rational(1, 3),
        sp.Rational(1, 6),
        sp.Rational(1, 6),
    ]
    for impossible in ("110", "011", "111"):
        assert cold[impossible] == 0 and warm[impossible] == 0
    # Warm start: every step has participation probability p0 = p/(1+p).
    for step in range(3):
        marginal = sum(v for k, v in warm.items() if k[step] == "1")
        assert sp.simplify(marginal - p / (1 + p)) == 0
