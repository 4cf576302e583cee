"""Argument handling shared by the accounting commands (``epsilon``, ``calibrate``, ``compare``).

:func:`add_setup_arguments` adds the options that describe one accounting question (scheme,
steps, rate, strategy bands, delta, backend, samples, seed, ``--json``). The scheme options are
not written here: they are generated from the registry, one flag per parameter that a registered
scheme declares (``SamplingScheme.parameters()``: ``--min-sep``, ``--warm-start``,
``--max-batch-size``, ...), plus ``--param KEY=VALUE`` for anything else, so a plugin scheme's
own options work without any edit to the CLI. :func:`build_scheme`, :func:`build_strategy` and
:func:`build_accountant` go through :mod:`minsep.framework.setup`, the one setup path.

Only options the user actually gave are forwarded to ``from_rate``, so a family that does not
take an option is only asked about it when the user set it, and then refuses it by name; the
accountant likewise refuses Monte Carlo options it does not take instead of ignoring them.
"""

from __future__ import annotations

import argparse
import logging
import math
import sys
from collections.abc import Callable
from fractions import Fraction
from typing import Any, TypeVar

import attrs

from minsep.framework import setup
from minsep.framework.backend import BACKEND_SPECS
from minsep.framework.cli import accountant_options as accountant_options_of
from minsep.framework.cli import strategy_options
from minsep.framework.errors import ConfigurationError
from minsep.framework.format import fmt, warn
from minsep.framework.interfaces import Accountant, SamplingScheme, Strategy
from minsep.framework.parameters import Parameter
from minsep.framework.registries import accountants, schemes
from minsep.framework.results import DeltaResult, EpsilonResult, Result
from minsep.framework.workers import AUTO, parse_workers

#: A result type of a question (EpsilonResult, DeltaResult, CalibrationResult).
R = TypeVar("R", bound=Result)

__all__ = [
    "accountant_options",
    "add_scheme_arguments",
    "add_setup_arguments",
    "answer",
    "build_accountant",
    "build_scheme",
    "build_strategy",
    "choose_accountant",
    "fmt",
    "given_accountant_options",
    "print_json",
    "provenance_lines",
    "sample_lines",
    "scheme_options",
    "throughput",
    "warn",
]

#: ``--executor`` choices: ``montecarlo.executors.EXECUTOR_KINDS``, spelled out so that the CLI
#: starts without importing the engine (a test keeps the two equal).
EXECUTOR_CHOICES = ("local", "processes", "dask")

#: Exit status of an accounting command whose answer is not certified (e.g. certified epsilon
#: = inf); 0 is a certified answer, 2 an error.
EXIT_UNCERTIFIED = 3

#: ``--memory-budget`` suffixes (binary units).
_SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def real(text: str) -> float:
    """A real number from a decimal (``0.004``, ``1e-3``, ``inf``) or a fraction (``1/256``).

    Raises ValueError (or ZeroDivisionError for ``1/0``) for text that is neither; a fraction
    too large for a float gives ``inf`` (callers refuse non-finite values with their range),
    never an OverflowError.
    """
    stripped = text.strip()
    try:
        return float(stripped)  # decimals and exponents, without building huge integers
    except ValueError:
        if "/" not in stripped:
            raise
    try:
        return float(Fraction(stripped))
    except OverflowError:
        return math.inf if Fraction(stripped) > 0 else -math.inf


def parse_rate(text: str) -> float:
    """A participation rate in (0, 1]: a decimal (``0.004``) or a fraction (``1/256``)."""
    try:
        value = real(text)
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(
            f"rate = {text!r} is invalid: must be a number or fraction in (0, 1], e.g. 1/256"
        ) from None
    if not (0.0 < value <= 1.0):
        raise argparse.ArgumentTypeError(f"rate = {text!r} is invalid: must be in (0, 1]")
    return value


def int_at_least(minimum: int) -> Callable[[str], int]:
    """An argparse type: an integer ``>= minimum``, with a message naming the range."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = minimum - 1
        if value < minimum:
            raise argparse.ArgumentTypeError(
                f"{text!r} is invalid: must be an integer >= {minimum}"
            )
        return value

    return parse


#: argparse types for counts (>= 1) and seeds (>= 0).
positive_int = int_at_least(1)
nonnegative_int = int_at_least(0)


def _probability(text: str) -> float:
    try:
        value = real(text)
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: must be in (0, 1)") from None
    if not (0.0 < value < 1.0):
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: must be in (0, 1)")
    return value


#: argparse type: a probability in (0, 1) (fractions accepted).
probability = _probability


def positive_float(text: str) -> float:
    """argparse type: a finite number > 0 (fractions accepted)."""
    try:
        value = real(text)
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: must be a number > 0") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: must be a finite number > 0")
    return value


def noise_multiplier(text: str) -> float:
    """argparse type for ``--sigma``: a finite number in [MIN_SIGMA, inf), refused before any
    bound, plan or rate probe runs (a subnormal sigma would overflow the losses)."""
    from minsep.framework.montecarlo.sampling import MIN_SIGMA

    value = positive_float(text)
    if value < MIN_SIGMA:
        raise argparse.ArgumentTypeError(
            f"{text!r} is invalid: must be a finite number in [{MIN_SIGMA:g}, inf)"
        )
    return value


def nonnegative_float(text: str) -> float:
    """argparse type: a finite number >= 0."""
    try:
        value = real(text)
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: must be a number >= 0") from None
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: must be a finite number >= 0")
    return value


def byte_size(text: str) -> int:
    """argparse type: a number of bytes, optionally with a binary suffix (``512M``, ``2G``,
    ``1.5GiB``), at least 1."""
    body = text.strip().lower().removesuffix("ib").removesuffix("b")
    unit = body[-1:] if body[-1:] in _SIZE_UNITS and body[-1:] else ""
    number = body[: len(body) - len(unit)]
    try:
        value = float(number) * _SIZE_UNITS[unit]
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 1):
        raise argparse.ArgumentTypeError(
            f"{text!r} is invalid: must be a size in bytes >= 1, e.g. 1073741824, 512M or 2G"
        )
    return int(value)


def show_plans() -> None:
    """Print the Monte Carlo engine's plans and time estimates (logger ``minsep.plan``) on
    stderr, one ``minsep: plan: ...`` line each, before a run starts."""
    log = logging.getLogger("minsep.plan")
    if not any(isinstance(h, _StderrHandler) for h in log.handlers):
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("minsep: %(message)s"))
        log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False


def hide_plans() -> None:
    """Keep the plan lines off stderr (``--quiet``); the plan's warnings still show."""
    show_plans()
    logging.getLogger("minsep.plan").setLevel(logging.WARNING)


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is at the time of the record (not at creation)."""

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)


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
    setup = parser.add_argument_group("setup")
    setup.add_argument("--scheme", default="b_min_sep", help="registered scheme name")
    setup.add_argument(
        "--steps", type=positive_int, default=1024, help="number of training steps n"
    )
    setup.add_argument(
        "--rate",
        type=parse_rate,
        default=1 / 256,
        help="participation rate p0 = expected batch size / dataset size (default: 1/256)",
    )
    setup.add_argument(
        "--bands",
        type=positive_int,
        default=None,
        help="bands k of the MSE-optimal banded Toeplitz strategy (1 = identity, DP-SGD; the "
        "default), or of a --strategy that takes bands",
    )
    setup.add_argument(
        "--delta", type=_probability, default=1e-3, help="target delta (default 1e-3)"
    )
    mc = parser.add_argument_group("Monte Carlo")
    mc.add_argument(
        "--backend",
        choices=list(BACKEND_SPECS),
        default=None,
        help="array backend, optionally with the kernel set (numpy:array, numpy:numba, ...)",
    )
    mc.add_argument(
        "--samples",
        type=positive_int,
        help="verification samples m per direction (default: epsilon and calibrate choose them "
        "from --delta and --precision and say how many; delta and curve 1,000,000)",
    )
    mc.add_argument(
        "--precision",
        type=positive_float,
        metavar="FRACTION",
        help="without --samples: the relative gap between the certified answer and the "
        "estimate the samples are chosen for (default 0.05; docs/math.md §7.3)",
    )
    mc.add_argument("--pilot-samples", type=positive_int, help="pilot (estimate) samples")
    mc.add_argument(
        "--seed",
        type=nonnegative_int,
        help="seed of the sampling streams (default: fresh entropy, reported in the result)",
    )
    mc.add_argument(
        "--workers",
        type=parse_workers,
        help="worker processes, or auto (default for Monte Carlo: the CPUs free now, i.e. "
        "usable CPUs less the rounded load average; results do not depend on it)",
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
        type=nonnegative_float,
        metavar="SECONDS",
        help="seconds between checkpoint saves (default 60; 0 = after every chunk)",
    )
    mc.add_argument("--chunk-size", type=positive_int, help="samples per chunk")
    mc.add_argument(
        "--memory-budget",
        type=byte_size,
        metavar="BYTES",
        help="memory a worker may spend on one chunk (e.g. 512M, 2G; default 1G): picks the "
        "chunk size, and refuses a run whose single sample or --chunk-size does not fit",
    )
    mc.add_argument(
        "--max-seconds",
        type=positive_float,
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
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="keep stderr silent: no first answer, plan, progress or cache lines (errors and "
        "warnings still show)",
    )
    add_pld_arguments(parser)
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    add_scheme_arguments(parser)
    strategy_options.add_strategy_arguments(parser, _PARSERS)
    accountant_options_of.add_accountant_arguments(parser, _PARSERS)


def _scheme_parameters() -> dict[str, Parameter]:
    """Every command-line settable parameter of the registered schemes, by name."""
    return strategy_options.cli_parameters(schemes)


def _parse_int(text: str) -> int:
    """A strict integer, as for the other integer flags (``2.0`` and ``4/2`` are refused)."""
    try:
        return int(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: must be an integer") from None


def _parse_float(text: str) -> float:
    try:
        return real(text)
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: must be a number") from None


_PARSERS: dict[str, Callable[[str], Any]] = {"int": _parse_int, "float": _parse_float, "str": str}


def add_scheme_arguments(parser: argparse.ArgumentParser) -> None:
    """One flag per command-line settable parameter of the registered schemes, and
    ``--param KEY=VALUE`` (repeatable) for any ``from_rate`` option.

    Flags default to None (not given); booleans get ``--x/--no-x``. ``--cold-start`` is
    kept as the short form of ``--no-warm-start``.
    """
    group = parser.add_argument_group("scheme options (of the registered schemes)")
    # The command's own flags win over a same-named scheme parameter (use --param for it).
    taken = {a.dest for a in parser._actions} | {
        flag for a in parser._actions for flag in a.option_strings
    }
    for name, parameter in _scheme_parameters().items():
        if name in taken or parameter.flag in taken:
            continue
        text = f"{parameter.help} [{strategy_options.users_of(schemes, name)}]".strip()
        if parameter.kind == "bool":
            group.add_argument(
                parameter.flag,
                dest=name,
                action=argparse.BooleanOptionalAction,
                default=None,
                help=text,
            )
        else:
            group.add_argument(
                parameter.flag,
                dest=name,
                type=_PARSERS[parameter.kind],
                default=None,
                metavar=parameter.kind.upper(),
                help=text,
            )
    if "warm_start" in _scheme_parameters() and "--cold-start" not in taken:
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


def _literal(text: str) -> Any:
    """``8`` -> 8, ``0.5``/``1/4`` -> float, ``true``/``false`` -> bool, else the text."""
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return real(text)
    except (ValueError, ZeroDivisionError):
        return text


def add_pld_arguments(parser: argparse.ArgumentParser) -> None:
    """The exact (PLD) accountant's options: its grid step and memory budget."""
    pld = parser.add_argument_group("exact (PLD)")
    pld.add_argument(
        "--pld-interval",
        type=positive_float,
        metavar="STEP",
        help="PLD value discretisation interval (default: the accountant's, 5e-4); coarser is "
        "faster and looser, never optimistic",
    )
    pld.add_argument(
        "--pld-memory-gib",
        type=positive_float,
        metavar="GIB",
        help="refuse a PLD whose estimated memory exceeds this (default 1)",
    )


def scheme_options(args: argparse.Namespace) -> dict[str, Any]:
    """The scheme options the user gave (flags and ``--param``), as ``from_rate`` keywords."""
    options: dict[str, Any] = {}
    for name in _scheme_parameters():
        value = getattr(args, name, None)
        if value is not None:
            options[name] = value
    for item in getattr(args, "param", None) or []:
        key, sep, text = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key.isidentifier():
            raise ConfigurationError(
                f"--param {item!r} is invalid: must be KEY=VALUE, e.g. --param min_sep=8"
            )
        if key in options:
            raise ConfigurationError(
                f"--param {item!r} is invalid: option {key!r} is already given"
            )
        options[key] = _literal(text)
    return options


def build_scheme(args: argparse.Namespace, name: str | None = None) -> SamplingScheme:
    """The scheme ``name`` (default ``--scheme``) at ``--steps`` and ``--rate`` with the
    options given."""
    return setup.build_scheme(name or args.scheme, args.steps, args.rate, scheme_options(args))


def build_strategy(args: argparse.Namespace) -> Strategy:
    """``--strategy`` with its options, else the identity for ``--bands 1`` (the default) and
    the MSE-optimal banded Toeplitz with k bands for ``--bands k``
    (:mod:`~minsep.framework.cli.strategy_options`)."""
    return strategy_options.build_strategy(args)


def given_accountant_options(args: argparse.Namespace) -> dict[str, Any]:
    """The accountant options the user gave, as accountant field names (the dests and fields
    the accountants declare, :mod:`~minsep.framework.cli.accountant_options`)."""
    options = accountant_options_of.given_options(args)
    if quiet(args) and "progress" not in options:
        options["progress"] = False
    return options


def accountant_options(cls: type[Accountant], args: argparse.Namespace) -> dict[str, Any]:
    """The Monte Carlo options the user gave that ``cls`` takes."""
    fields = set(setup.accountant_fields(cls))
    return {k: v for k, v in given_accountant_options(args).items() if k in fields}


def build_accountant(
    args: argparse.Namespace, name: str | None = None, *, strict: bool = True
) -> Accountant:
    """The accountant ``name`` (default ``--accountant``, else ``monte_carlo``) configured from
    the Monte Carlo options given; with ``strict`` an option it does not take is refused."""
    chosen = name if name is not None else getattr(args, "accountant", None)
    if chosen is None:
        chosen = "monte_carlo"  # an empty --accountant "" is looked up (and refused), not replaced
    options = given_accountant_options(args)
    if chosen in accountants.names():
        cls = accountants.get(chosen)
        if getattr(args, "progress", None) is None and "progress" not in set(
            setup.accountant_fields(cls)
        ):
            options.pop("progress", None)  # implied by --quiet, not given: nothing to refuse
        options = default_workers(options, cls)
    return setup.build_accountant(chosen, options, strict=strict)


def default_workers(options: dict[str, Any], cls: type[Accountant]) -> dict[str, Any]:
    """``options`` with ``workers = "auto"`` added when ``cls`` takes workers and the user set
    none of ``--workers``, ``--scheduler`` (a remote cluster sizes itself) or ``--executor
    local`` (one process by definition). See :mod:`minsep.framework.workers` for why the CLI
    defaults to auto while the API defaults to 1."""
    if "workers" in options or "scheduler" in options or options.get("executor") == "local":
        return options
    if "workers" not in setup.accountant_fields(cls):
        return options
    return {**options, "workers": AUTO}


def print_json(result: Result) -> None:
    """Print ``result`` as indented JSON on stdout."""
    print(result.to_json(indent=2))


def sample_lines(
    samples: int | None, pilot: int | None, seconds: float, n_steps: int | None = None
) -> list[str]:
    """Samples, seconds and throughput lines of a result (Monte Carlo figures when given)."""
    lines = []
    if samples is not None:
        text = f"{samples:,} verification"
        if pilot:
            text += f" + {pilot:,} pilot"
        lines.append(f"samples              {text} per direction")
    lines.append(f"seconds              {seconds:.3f}")
    if samples is not None and seconds > 0:
        drawn = 2 * (samples + (pilot or 0))
        text = throughput(drawn, seconds, n_steps, "both directions, pilot included")
        lines.append(f"throughput           {text}")
    return lines


def throughput(samples: int, seconds: float, n_steps: int | None, detail: str = "") -> str:
    """``samples`` loss samples of ``n_steps`` steps in ``seconds``, in the one unit every
    command reports: sample·steps/s (samples/s when the step count is unknown); ``detail``
    is appended inside the parentheses."""
    rate = samples / seconds
    extra = f", {detail}" if detail else ""
    if n_steps:
        per = f"{samples:,} loss samples of {n_steps} steps{extra}"
        return f"{rate * n_steps:.3g} sample·steps/s ({per})"
    return f"{rate:.3g} samples/s ({samples:,} loss samples{extra})"


def provenance_lines(result: EpsilonResult | DeltaResult) -> list[str]:
    """The lines every point answer ends with: samples and throughput, seed, accountant,
    notes."""
    n_steps = result.scheme.get("n_steps")
    lines = sample_lines(
        result.samples,
        result.pilot_samples,
        result.seconds,
        n_steps if isinstance(n_steps, int) else None,
    )
    if result.seed is not None:
        lines.append(f"seed                 {result.seed}")
    lines.append(f"accountant           {result.accountant} ({result.method})")
    lines.extend(f"note: {note}" for note in result.notes)
    return lines


def choose_accountant(
    args: argparse.Namespace, scheme: SamplingScheme, strategy: Strategy
) -> tuple[Accountant, str | None]:
    """The accountant of ``--accountant`` for the pair, and for ``auto`` a note saying which
    was chosen and why.

    ``auto`` (the default) takes the first of :func:`~minsep.framework.setup.preference`
    that supports the pair (exact PLD where the scheme has an exact event, else Monte Carlo),
    through :func:`~minsep.framework.setup.select_accountant`; the options given apply to it
    when it takes them, and those it does not take are named in a warning. A named accountant
    refuses options it does not take (:func:`build_accountant`).
    """
    name = getattr(args, "accountant", None)
    if name is None:
        name = setup.AUTO  # an empty --accountant "" is looked up (and refused), not replaced
    if name != setup.AUTO:
        accountant = build_accountant(args, name)
        accountant.require(scheme, strategy)
        return accountant, None
    given = given_accountant_options(args)
    accountant = setup.select_accountant(
        setup.AUTO,
        scheme,
        strategy,
        # the CLI's --workers auto default applies to whichever accountant auto picks
        factory=lambda n: setup.build_accountant(
            n, default_workers(given, accountants.get(n)), strict=False
        ),
    )
    chosen = str(accountant.registry_name)
    order = setup.preference()
    skipped = [
        f"{n}: {reason}"
        for n in order[: order.index(chosen)]
        if n in accountants
        and (reason := setup.build_accountant(n, strict=False).why_not(scheme, strategy))
    ]
    typed = {k for k in given if k != "progress" or getattr(args, "progress", None) is not None}
    ignored = sorted(typed - set(setup.accountant_fields(type(accountant))))
    if ignored:
        flags = ", ".join("--" + o.replace("_", "-") for o in ignored)
        warn(f"accountant auto chose {chosen!r}, which does not take {flags}: ignored")
    if "monte_carlo" in skipped_names(skipped):
        warn(
            f"accountant auto chose {chosen!r}: Monte Carlo cannot account this pair, so the "
            "bound is deterministic (looser); see the note, or name --accountant"
        )
    why = f" ({'; '.join(skipped)})" if skipped else ""
    return accountant, f"accountant {chosen!r} chosen by --accountant auto{why}."


def skipped_names(reasons: list[str]) -> set[str]:
    """The accountant names of ``name: reason`` entries."""
    return {reason.partition(":")[0] for reason in reasons}


def quiet(args: argparse.Namespace) -> bool:
    """True when ``--quiet`` asks for a silent stderr (errors and warnings excepted)."""
    return bool(getattr(args, "quiet", False))


def _cache_key(
    args: argparse.Namespace,
    question: str | None,
    numbers: dict[str, float] | None,
    accountant: Accountant,
    scheme: SamplingScheme,
    strategy: Strategy,
) -> str | None:
    """The answer cache's key of the question, or None when the cache is not consulted
    (``--no-cache``, ``--checkpoint``: resumed by its own rules, or no ``question``)."""
    from minsep.framework.montecarlo.cache import question_key

    resumable = getattr(args, "checkpoint", None) is not None
    if question is None or getattr(args, "no_cache", False) or resumable:
        return None
    return question_key(question, scheme, strategy, dict(numbers or {}), accountant)


def _cache_holds(key: str | None) -> bool:
    """True when the answer cache holds an answer under ``key`` (it will answer)."""
    from minsep.framework.montecarlo.cache import AnswerCache

    return key is not None and AnswerCache().path(key).exists()


def _start_workers(
    accountant: Accountant,
    scheme: SamplingScheme,
    strategy: Strategy,
    numbers: dict[str, float] | None,
) -> None:
    """Have an accountant with worker processes start them now, warming up at the question's
    sigma (1 without one), so that their start-up overlaps the first answer."""
    accountant.start_workers(scheme, strategy, float((numbers or {}).get("sigma", 1.0)))


def _cached(
    key: str | None,
    accountant: Accountant,
    scheme: SamplingScheme,
    strategy: Strategy,
    ask: Callable[[Accountant, SamplingScheme, Strategy], R],
    numbers: dict[str, float] | None = None,
) -> tuple[R, str | None]:
    """The answer under the cache ``key`` (with the line saying so; it must answer
    ``numbers``), else computed and stored; no key (``--no-cache``, ``--checkpoint``: resumed
    by its own rules, or no question) computes without the cache."""
    from minsep.framework.montecarlo.cache import AnswerCache, describe_hit

    if key is None:
        return ask(accountant, scheme, strategy), None
    result, when = AnswerCache(report=warn).answer(
        key,
        Result,
        lambda: ask(accountant, scheme, strategy),
        numbers,
    )
    return result, None if when is None else describe_hit(when, result)  # type: ignore[return-value]


def answer(
    args: argparse.Namespace,
    ask: Callable[[Accountant, SamplingScheme, Strategy], R],
    lines: Callable[[R], list[str]],
    certified: Callable[[R], bool] | None = None,
    what: str = "answer",
    *,
    question: str | None = None,
    numbers: dict[str, float] | None = None,
) -> int:
    """Build the question's objects from ``args``, ask it, print the result (``--json`` or
    ``lines``) and return the exit status: 0, or :data:`EXIT_UNCERTIFIED` when ``certified``
    says the answer is not certified.

    With ``question`` (``"epsilon"``, ``"delta"``, ``"calibrate"``) and its ``numbers``, the
    quick deterministic bound (:mod:`.first_answer`) is printed on stderr before the run
    (unless ``--quiet``) and stored in the result's ``first_answer``, and the Monte Carlo
    samples are chosen from the question (:mod:`.sample_choice`); the result's notes say
    which accountant answered (with ``auto``) and how its samples were chosen. An accountant
    with worker processes starts them before the first answer (unless the answer cache holds
    the answer), so that their start-up overlaps it.
    """
    from minsep.framework.cli.first_answer import first_answer
    from minsep.framework.cli.sample_choice import choose_samples

    scheme = build_scheme(args)
    strategy = build_strategy(args)
    # plans first: building the accountant logs the choice of --workers auto
    if quiet(args):
        hide_plans()
    else:
        show_plans()
    accountant, chosen = choose_accountant(args, scheme, strategy)
    notes = [] if chosen is None else [chosen]
    early = None
    key = None  # no question: no answer cache
    if question is not None:
        try:
            accountant, stated = choose_samples(
                args, accountant, scheme, strategy, question, dict(numbers or {})
            )
        except ConfigurationError as refused:
            if refused.parameter != "max_seconds":
                raise  # a bad option: one line, before any work
            # refused over --max-seconds: the first answer is still worth having
            early = first_answer(question, scheme, strategy, dict(numbers or {}), accountant)
            if early is not None and not quiet(args):
                print(f"minsep: {early.line()}", file=sys.stderr, flush=True)
            raise
        key = _cache_key(args, question, numbers, accountant, scheme, strategy)
        if not _cache_holds(key):
            _start_workers(accountant, scheme, strategy, numbers)
        early = first_answer(question, scheme, strategy, dict(numbers or {}), accountant)
        if early is not None and not quiet(args):
            print(f"minsep: {early.line()}", file=sys.stderr, flush=True)
        if stated is not None:
            notes.append(f"{stated}.")
            if not quiet(args):
                print(f"minsep: plan: {stated}", file=sys.stderr, flush=True)
    result, cached = _cached(key, accountant, scheme, strategy, ask, numbers)
    if cached is not None:
        notes.append(f"{cached}.")
        if not quiet(args):
            print(f"minsep: {cached}", file=sys.stderr, flush=True)
    result = attrs.evolve(result, notes=(*result.notes, *notes))
    if early is not None:
        result = attrs.evolve(result, first_answer=early.to_dict())
    if args.json:
        print_json(result)
    else:
        print("\n".join(lines(result)))
    if certified is not None and not certified(result):
        warn(f"{what} NOT CERTIFIED (see the note for why); exit status {EXIT_UNCERTIFIED}")
        return EXIT_UNCERTIFIED
    return 0
