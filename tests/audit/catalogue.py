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

#: The cases the default test suite runs: a spread over every area (the ``cli-process`` area
#: runs as real subprocesses, seconds each, and is covered in process by ``cli``) and over
#: every defect class the audit found (tracebacks of TypeError/AttributeError/ValueError/
#: OverflowError/ZeroDivisionError/MemoryError, numpy RuntimeWarnings, hangs, silently accepted
#: bad input, silently wrong values, missing JSON error objects, exit statuses), including
#: every case that failed before issue #13 was closed. About 10 s of cases; the rest are
#: marked slow (``make test-all``).
FAST: frozenset[str] = frozenset(
    {
        # CLI: usage, missing and repeated options, names, --json errors, exit statuses
        "cli-list",
        "cli-epsilon-missing-sigma",
        "cli-unknown-option",
        "cli-duplicate-sigma-conflicting",
        "cli-duplicate-delta-conflicting",
        "cli-missing-min-sep-default-scheme",
        "cli-missing-min-sep-b-min-sep-json",
        "cli-truncated-bmax-above-dataset",
        "cli-unknown-scheme-did-you-mean",
        "cli-unknown-scheme-json",
        "cli-unknown-accountant-did-you-mean",
        "cli-empty-accountant",
        "cli-pld-on-b-min-sep",
        "cli-uncertified-exit-status",
        # CLI: numbers (overflow, subnormal, huge, strict integers) and limits
        "cli-sigma-nan",
        "cli-sigma-nan-json",
        "cli-sigma-1e999",
        "cli-rate-1e999",
        "cli-rate-1e-320",
        "cli-seed-10pow400",
        "cli-min-sep-2p0",
        "cli-steps-1e20-gaussian",
        "cli-samples-1e18",
        "cli-chunk-size-4e6",
        "cli-delta-1e-300-monte-carlo",
        "cli-sigma-1e-3-pld",
        "cli-calibrate-epsilon-1e6-pld",
        "cli-calibrate-epsilon-1e308-gaussian",
        "cli-delta-1",
        "cli-rate-2",
        "cli-steps-0",
        "cli-samples-99",
        "cli-rate-infeasible-for-min-sep",
        "cli-bands-above-min-sep",
        # CLI: executors, scheduler, checkpoints, compare, train, valid answers
        "cli-executor-local-two-workers",
        "cli-scheduler-file-missing",
        "cli-checkpoint-missing-folder",
        "cli-checkpoint-is-a-folder",
        "cli-checkpoint-unwritable",
        "cli-compare-rate-and-batch-size",
        "cli-compare-batch-above-dataset",
        "cli-compare-unknown-family",
        "cli-train-unknown-model",
        "cli-epsilon-monte-carlo-json",
        "cli-epsilon-monte-carlo-text",
        "cli-epsilon-pld-json",
        "cli-epsilon-gaussian-json",
        # schemes
        "bmin-n-steps-string",
        "bmin-n-steps-huge",
        "bmin-rate-nan",
        "bmin-rate-subnormal",
        "bmin-rate-above-one-over-b",
        "bmin-numpy-scalars",
        "bmin-from-rate-missing-min-sep",
        "bmin-from-rate-swapped-arguments",
        "balls-from-rate-subnormal",
        "multi-missing-probability-and-graph",
        "multi-valid",
        "truncated-no-options",
        "truncated-bmax-above-dataset",
        "truncated-valid",
        "batches-rng-int",
        # strategies
        "banded-bands-above-steps",
        "banded-steps-huge",
        "coefficients-nan",
        "coefficients-1e308",
        "coefficients-subnormal",
        "coefficients-numpy-array",
        # registries
        "scheme-typo-did-you-mean",
        "scheme-empty-name",
        "scheme-none-name",
        "scheme-int-name",
        "accountant-class-instead-of-name",
        "accountant-dash-spelling",
        "register-not-a-scheme",
        # trainer and compare set-ups
        "config-decay-end-before-start",
        "config-model-unknown",
        "config-numpy-seed",
        "setup-epsilon-and-sigma",
        "setup-families-unknown",
        "compare-tiny-exact",
        # accountants: arguments, limits, precision, soundness order
        "mc-samples-below-100",
        "mc-samples-1e18",
        "mc-checkpoint-missing-folder",
        "mc-checkpoint-folder",
        "mc-scheduler-missing-file",
        "mc-scheme-strategy-swapped",
        "mc-numpy-seed-end-to-end",
        "mc-bands-above-min-sep",
        "mc-too-few-samples-for-delta",
        "mc-delta-1e-320",
        "mc-sigma-1e-320",
        "mc-multi-attribution-ku-1e6",
        "mc-multi-attribution-valid",
        "mc-steps-1e7",
        "mc-chunk-size-4e6",
        "pld-epsilon-delta-string",
        "pld-scheme-strategy-swapped",
        "pld-sigma-1e-3",
        "pld-calibrate-epsilon-1e6",
        "pld-below-gaussian-poisson",
        "pld-truncated-valid",
        "gauss-epsilon-sigma-none",
        "gauss-calibrate-epsilon-1e308",
        "gauss-delta-sigma-1e16-not-pure",
        "gauss-calibrate-epsilon-zero-tiny-delta",
        "gauss-epsilon-delta-1e-320",
        "gauss-multi-attribution-grows-with-ku",
        "gauss-truncated-not-below-pld",
        # engine and backend
        "certify-ladder-empty",
        "certify-config-wrong-type",
        "certify-numpy-seed",
        "engine-config-backend-unknown",
        "engine-config-executor-string",
        "bins-max-loss-nan",
        "sample-no-sigmas",
        "sample-sigma-nan",
        "base-delta-too-few",
        "min-samples-delta-1e-300",
        "executor-unknown-kind",
        "chunk-seed-negative",
        "checkpoint-folder",
        "backend-unknown",
        "backend-cupy",
        "backend-auto",
        # results and checkpoints
        "json-unknown-kind",
        "json-delta-five",
        "json-certified-below-estimate",
        "json-float-tag-garbage",
        "json-epsilon-result-of-calibration",
        "json-round-trip-uncertified-inf",
        "json-round-trip-real-result",
        "ckpt-garbage",
        "ckpt-empty-file",
        "ckpt-other-question",
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
