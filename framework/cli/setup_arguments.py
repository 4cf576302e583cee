"""The options of one accounting setup, shared by ``epsilon``, ``delta``, ``calibrate``,
``curve`` and ``train``.

:func:`add_setup_arguments` adds the options that describe one accounting question (scheme,
steps, rate, strategy bands, delta, backend, samples, seed, ``--json``). The scheme options are
not written here: they are generated from the registry, one flag per parameter that a registered
scheme declares (``SamplingScheme.parameters()``: ``--min-sep``, ``--warm-start``,
``--max-batch-size``, ...), plus ``--param KEY=VALUE`` for anything else, so a plugin scheme's
own options work without any edit to the CLI; the strategies' and accountants' options likewise
(:mod:`.strategy_options`, :mod:`.accountant_options`).
"""

from __future__ import annotations

import argparse

from minsep.framework.backend import BACKEND_SPECS
from minsep.framework.cli import accountant_options, argtypes, strategy_options
from minsep.framework.cli.option_flags import add_option_flag, taken_flags
from minsep.framework.parameters import Parameter
from minsep.framework.registries import schemes
from minsep.framework.workers import parse_workers

#: ``--executor`` choices: ``montecarlo.executors.EXECUTOR_KINDS``, spelled out so that the CLI
#: starts without importing the engine (a test keeps the two equal).
EXECUTOR_CHOICES = ("local", "processes", "dask")


def add_setup_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options describing one accounting setup (shared by epsilon/calibrate/compare).

    Scheme: ``--scheme --steps --rate`` and the registered schemes' options
    (:func:`add_scheme_arguments`); strategy: ``--strategy NAME[:key=value,...]`` and the
    registered strategies' options, or the shorthand ``--bands`` (1 = identity, k >= 2 =
    MSE-optimal banded Toeplitz); question: ``--delta``; Monte Carlo: ``--backend --samples
    --pilot-samples --seed --workers --executor --scheduler --checkpoint --checkpoint-interval
    --chunk-size --memory-budget --max-seconds --progress/--no-progress``; output:
    ``--json``.
    """
    _add_question_arguments(parser)
    mc = parser.add_argument_group("Monte Carlo")
    _add_sample_arguments(mc)
    _add_run_arguments(mc)
    _add_engine_arguments(mc)
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="keep stderr silent: no first answer, plan, progress or cache lines (errors and "
        "warnings still show)",
    )
    add_pld_arguments(parser)
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    add_scheme_arguments(parser)
    strategy_options.add_strategy_arguments(parser)
    accountant_options.add_accountant_arguments(parser)


def add_sigma_argument(parser: argparse.ArgumentParser) -> None:
    """``--sigma`` (required): the noise multiplier of a question at a fixed sigma."""
    parser.add_argument(
        "--sigma", type=argtypes.noise_multiplier, required=True, help="noise multiplier"
    )


def add_epsilon_argument(parser: argparse.ArgumentParser) -> None:
    """``--epsilon`` (required): the target epsilon of ``delta`` and ``calibrate``."""
    parser.add_argument(
        "--epsilon", type=argtypes.nonnegative_float, required=True, help="target epsilon"
    )


def add_accountant_argument(parser: argparse.ArgumentParser) -> None:
    """``--accountant``: a registered name, or ``auto`` (the default)."""
    parser.add_argument(
        "--accountant",
        default="auto",
        help="registered accountant, or auto (default): exact pld where the scheme has an "
        "exact event, else monte_carlo; the output names the one that answered",
    )


def _add_question_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``setup`` group: ``--scheme --steps --rate --bands --delta``."""
    setup = parser.add_argument_group("setup")
    setup.add_argument("--scheme", default="b_min_sep", help="registered scheme name")
    setup.add_argument(
        "--steps", type=argtypes.positive_int, default=1024, help="number of training steps n"
    )
    setup.add_argument(
        "--rate",
        type=argtypes.parse_rate,
        default=1 / 256,
        help="participation rate p0 = expected batch size / dataset size (default: 1/256)",
    )
    setup.add_argument(
        "--bands",
        type=argtypes.positive_int,
        default=None,
        help="bands k of the MSE-optimal banded Toeplitz strategy (1 = identity, DP-SGD; the "
        "default), or of a --strategy that takes bands",
    )
    setup.add_argument(
        "--delta", type=argtypes.probability, default=1e-3, help="target delta (default 1e-3)"
    )


def _add_sample_arguments(mc: argparse._ArgumentGroup) -> None:
    """How many samples, from which seed: ``--backend --samples --precision --pilot-samples
    --seed``."""
    mc.add_argument(
        "--backend",
        choices=list(BACKEND_SPECS),
        default=None,
        help="array backend, optionally with the kernel set (numpy:array, numpy:numba, ...)",
    )
    mc.add_argument(
        "--samples",
        type=argtypes.positive_int,
        help="verification samples m per direction (default: epsilon and calibrate choose them "
        "from --delta and --precision and say how many; delta and curve 1,000,000)",
    )
    mc.add_argument(
        "--precision",
        type=argtypes.positive_float,
        metavar="FRACTION",
        help="without --samples: the relative gap between the certified answer and the "
        "estimate the samples are chosen for (default 0.05; docs/math.md §7.3)",
    )
    mc.add_argument("--pilot-samples", type=argtypes.positive_int, help="pilot (estimate) samples")
    mc.add_argument(
        "--seed",
        type=argtypes.nonnegative_int,
        help="seed of the sampling streams (default: fresh entropy, reported in the result)",
    )


def _add_run_arguments(mc: argparse._ArgumentGroup) -> None:
    """Where and how the samples run: ``--workers --executor --scheduler --checkpoint
    --checkpoint-interval --chunk-size --memory-budget``."""
    mc.add_argument(
        "--workers",
        type=parse_workers,
        help="worker processes, or auto (default for Monte Carlo: the CPUs free now, i.e. "
        "usable CPUs less those other processes keep busy, rounded; results do not depend on it)",
    )
    mc.add_argument(
        "--executor",
        choices=list(EXECUTOR_CHOICES),
        help="where chunks run: local (in-process), processes (a process pool of --workers), "
        "dask (a Dask LocalCluster of --workers processes, or the cluster at --scheduler); "
        "default: local for 1 worker, else processes",
    )
    mc.add_argument(
        "--scheduler",
        metavar="ADDR",
        help="Dask scheduler address (tcp://host:8786) or scheduler file (*.json); "
        "implies --executor dask",
    )
    mc.add_argument(
        "--checkpoint",
        metavar="PATH",
        help="save the sampling progress to PATH and resume from it when rerun with the "
        "same parameters (one file per question; other parameters are refused)",
    )
    mc.add_argument(
        "--checkpoint-interval",
        type=argtypes.nonnegative_float,
        metavar="SECONDS",
        help="seconds between checkpoint saves (default 60; 0 = after every chunk)",
    )
    mc.add_argument("--chunk-size", type=argtypes.positive_int, help="samples per chunk")
    mc.add_argument(
        "--memory-budget",
        type=argtypes.byte_size,
        metavar="BYTES",
        help="memory a worker may spend on one chunk (e.g. 512M, 2G; default 1G): picks the "
        "chunk size, and refuses a run whose single sample or --chunk-size does not fit",
    )


def _add_engine_arguments(mc: argparse._ArgumentGroup) -> None:
    """The engine's choices and limits: ``--max-seconds --proposal --bound --progress
    --no-cache``."""
    mc.add_argument(
        "--max-seconds",
        type=argtypes.positive_float,
        metavar="SECONDS",
        help="bound the run's estimated time (printed on stderr before every Monte Carlo "
        "run): samples chosen by --precision are cut to fit, down to precision 0.3, and the "
        "precision reached is stated; a run that still does not fit is refused",
    )
    mc.add_argument(
        "--proposal",
        choices=["auto", "plain", "escort"],
        help="what the Monte Carlo engine samples from: plain (the dominating pair), escort "
        "(importance sampling from the order-lam escort, b-min-sep BandMF only; certifies tiny "
        "delta in minutes) or auto (default: escort when plain sampling cannot certify the "
        "target with --samples, and the result says so)",
    )
    mc.add_argument(
        "--bound",
        choices=["betting", "fact42"],
        help="how a certified epsilon is verified: betting (default: a fine epsilon grid, "
        "one failure event, the samples' own spread) or fact42 (the pilot's ladder of "
        "candidates, Fact 4.2's Bernoulli bound with a union bound)",
    )
    mc.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show progress (default: a bar on a terminal; elsewhere a plain line every "
        "tenth of a stage, at least every 30 s, once the stage runs 10 s)",
    )
    mc.add_argument(
        "--no-cache",
        action="store_true",
        help="neither reuse nor store the answer (seeded answers are cached in "
        "$MINSEP_CACHE_DIR/answers, default ~/.cache/minsep/answers, keyed by the question and "
        "the code version)",
    )


def scheme_parameters() -> dict[str, Parameter]:
    """Every command-line settable parameter of the registered schemes, by name."""
    return strategy_options.cli_parameters(schemes)


def add_scheme_arguments(parser: argparse.ArgumentParser) -> None:
    """One flag per command-line settable parameter of the registered schemes, and
    ``--param KEY=VALUE`` (repeatable) for any ``from_rate`` option.

    Flags default to None (not given); booleans get ``--x/--no-x``. ``--cold-start`` is
    kept as the short form of ``--no-warm-start``.
    """
    group = parser.add_argument_group("scheme options (of the registered schemes)")
    # The command's own flags win over a same-named scheme parameter (use --param for it).
    taken = taken_flags(parser)
    for name, parameter in scheme_parameters().items():
        if name in taken or parameter.flag in taken:
            continue
        text = f"{parameter.help} [{strategy_options.users_of(schemes, name)}]".strip()
        add_option_flag(group, parameter, name, text)
    if "warm_start" in scheme_parameters() and "--cold-start" not in taken:
        group.add_argument(
            "--cold-start",
            dest="warm_start",
            action="store_const",
            const=False,
            help="same as --no-warm-start: start cold (Algorithm 1)",
        )
    group.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="any from_rate option of the scheme, e.g. --param min_sep=8 (repeatable)",
    )


def add_pld_arguments(parser: argparse.ArgumentParser) -> None:
    """The exact (PLD) accountant's options: its grid step and memory budget."""
    pld = parser.add_argument_group("exact (PLD)")
    pld.add_argument(
        "--pld-interval",
        type=argtypes.positive_float,
        metavar="STEP",
        help="PLD value discretisation interval (default: the accountant's, 5e-4); coarser is "
        "faster and looser, never optimistic",
    )
    pld.add_argument(
        "--pld-memory-gib",
        type=argtypes.positive_float,
        metavar="GIB",
        help="refuse a PLD whose estimated memory exceeds this (default 1)",
    )
