"""Rényi divergences to (ε, δ): the optimal single-order conversion, minimised over the orders.

For one order λ > 1 with ``D = D_λ(P‖Q)`` (Canonne, Kamath & Steinke 2020, Prop. 12;
docs/rdp-escort.md §5)

    δ(ε) ≤ exp((λ − 1)(D − ε)) (λ − 1)^(λ−1) / λ^λ,
    ln δ = (λ − 1)(D − ε + ln(1 − 1/λ)) − ln λ,
    so ε(δ) = D + ln(1 − 1/λ) − (ln δ + ln λ)/(λ − 1),

and, for every order, ``δ(0) = TV(P, Q) ≤ √(1 − e^{−D})`` (Bretagnolle–Huber with KL ≤ D_λ), so
ε = 0 wherever that is at most δ. The answer is the smallest over the orders given.

This is what dp_accounting's ``compute_epsilon`` / ``compute_delta`` evaluate (the tests pin
these functions to them); it is written here because importing dp_accounting imports
scipy.stats, about 0.75 CPU-s of every command line that asks the RDP accountant, against a
few microseconds for the formulas (docs/performance.md, "Issue 29, fifth pass").
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def _total_variation_bound(divergence: float) -> float:
    """``√(1 − e^{−D})``: TV(P, Q) from KL ≤ D_λ (1 for D = inf)."""
    return math.sqrt(-math.expm1(-divergence))


def epsilon_of(
    orders: Sequence[float], divergences: Sequence[float], delta: float
) -> tuple[float, float]:
    """``(ε, λ)``: the smallest ε over ``orders`` (each > 1) at which the single-order bound or
    the total-variation bound gives ``delta``, and the order attaining it (inf for
    ``delta <= 0`` or infinite divergences; never negative)."""
    _check(orders, divergences)
    best, best_order = math.inf, float(orders[0])
    for order, divergence in zip(orders, divergences, strict=True):
        if _total_variation_bound(divergence) <= delta:
            epsilon = 0.0
        elif delta <= 0.0 or math.isinf(divergence):
            epsilon = math.inf
        else:
            epsilon = (
                divergence
                + math.log1p(-1.0 / order)
                - (math.log(delta) + math.log(order)) / (order - 1.0)
            )
        if epsilon < best:
            best, best_order = epsilon, float(order)
    return max(best, 0.0), best_order


def delta_of(
    orders: Sequence[float], divergences: Sequence[float], epsilon: float
) -> tuple[float, float]:
    """``(δ, λ)``: the smallest δ over ``orders`` (each > 1) of the single-order bound at
    ``epsilon`` and the total-variation bound, at most 1, and the order attaining it (compared
    in logarithms, so that bounds above 1 still rank the orders)."""
    _check(orders, divergences)
    best, best_order = math.inf, float(orders[0])
    for order, divergence in zip(orders, divergences, strict=True):
        log_total_variation = 0.5 * math.log1p(-math.exp(-divergence)) if divergence else -math.inf
        log_single = (order - 1.0) * (divergence - epsilon + math.log1p(-1.0 / order)) - math.log(
            order
        )
        log_delta = min(log_single, log_total_variation)
        if log_delta < best:
            best, best_order = log_delta, float(order)
    return min(math.exp(best), 1.0), best_order


def _check(orders: Sequence[float], divergences: Sequence[float]) -> None:
    """Orders above 1, non-negative divergences, as many of each (else ValueError)."""
    if len(orders) != len(divergences) or not len(orders):
        raise ValueError(
            f"orders and divergences must be non-empty and as long as each other, got "
            f"{len(orders)} and {len(divergences)}"
        )
    for order, divergence in zip(orders, divergences, strict=True):
        if not order > 1.0:
            raise ValueError(f"orders must be > 1, got {order!r}")
        if not divergence >= 0.0:
            raise ValueError(f"divergences must be >= 0, got {divergence!r}")
