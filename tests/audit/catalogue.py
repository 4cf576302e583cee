"""Every audit case, and the fast subset the default test suite runs."""

from __future__ import annotations

from tests.audit.cases_accounting import accounting_cases
from tests.audit.cases_cli import cli_cases, subprocess_cases
from tests.audit.cases_setup import (
    compare_cases,
    registry_cases,
    scheme_cases,
    strategy_cases,
    trainer_cases,
)
from tests.audit.runner import Case, unique_ids

#: Cases that pass today and run in the default suite (a spread over every area, < 30 s).
#: The others are marked slow until the defects of issue #13 are fixed.
FAST: frozenset[str] = frozenset(
    {
        # CLI
        "cli-list",
        "cli-epsilon-missing-sigma",
        "cli-unknown-option",
        "cli-unknown-scheme-did-you-mean",
        "cli-unknown-accountant-did-you-mean",
        "cli-pld-on-b-min-sep",
        "cli-sigma-nan",
        "cli-delta-1",
        "cli-rate-2",
        "cli-steps-0",
        "cli-samples-99",
        "cli-rate-infeasible-for-min-sep",
        "cli-bands-above-min-sep",
        "cli-executor-local-two-workers",
        "cli-checkpoint-missing-folder",
        "cli-compare-rate-and-batch-size",
        "cli-compare-unknown-family",
        "cli-epsilon-monte-carlo-json",
        "cli-epsilon-pld-json",
        "cli-epsilon-gaussian-json",
        # schemes, strategies, registries, trainer
        "bmin-n-steps-string",
        "bmin-rate-nan",
        "bmin-rate-above-one-over-b",
        "bmin-numpy-scalars",
        "multi-missing-probability-and-graph",
        "truncated-no-options",
        "batches-rng-int",
        "banded-bands-above-steps",
        "coefficients-nan",
        "coefficients-numpy-array",
        "scheme-typo-did-you-mean",
        "accountant-dash-spelling",
        "config-decay-end-before-start",
        # accountants, engine, backend, results, checkpoints
        "mc-samples-below-100",
        "mc-checkpoint-missing-folder",
        "pld-epsilon-delta-string",
        "gauss-epsilon-sigma-none",
        "mc-bands-above-min-sep",
        "mc-too-few-samples-for-delta",
        "pld-below-gaussian-poisson",
        "certify-ladder-empty",
        "base-delta-too-few",
        "sample-no-sigmas",
        "backend-unknown",
        "json-unknown-kind",
        "json-round-trip-real-result",
        "ckpt-garbage",
        "ckpt-resume-identical",
    }
)


def all_cases() -> list[Case]:
    """Every case, in a stable order (ids unique)."""
    cases = [
        *cli_cases(),
        *subprocess_cases(),
        *scheme_cases(),
        *strategy_cases(),
        *registry_cases(),
        *trainer_cases(),
        *compare_cases(),
        *accounting_cases(),
    ]
    unique_ids(cases)
    return cases
