"""How an accounting command answers its question (:func:`answer`), and the pieces the
commands share, gathered under one name.

The pieces live in small modules, each with one job, and are re-exported here so that a
command imports ``common`` alone:

- :mod:`.argtypes`: argparse value types (rates, fractions, ranges, sizes);
- :mod:`.setup_arguments`: the options of one accounting setup (:func:`add_setup_arguments`);
- :mod:`.building`: the scheme, strategy and accountant built from the parsed options;
- :mod:`.output`: result lines, JSON and the ``minsep:`` lines on stderr;
- :mod:`.option_flags` (used by the setup's options): one flag per declared scheme, strategy or
  accountant option.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from minsep.framework.cli.argtypes import (
    byte_size,
    int_at_least,
    noise_multiplier,
    nonnegative_float,
    nonnegative_int,
    parse_rate,
    positive_float,
    positive_int,
    probability,
    real,
)
from minsep.framework.cli.building import (
    accountant_options,
    build_accountant,
    build_scheme,
    build_strategy,
    choose_accountant,
    default_workers,
    given_accountant_options,
    scheme_options,
    skipped_names,
)
from minsep.framework.cli.output import (
    closing_lines,
    hide_plans,
    print_json,
    provenance_lines,
    quiet,
    sample_lines,
    say,
    show_plans,
    show_plans_unless_quiet,
    throughput,
)
from minsep.framework.cli.setup_arguments import (
    EXECUTOR_CHOICES,
    add_accountant_argument,
    add_epsilon_argument,
    add_pld_arguments,
    add_scheme_arguments,
    add_setup_arguments,
    add_sigma_argument,
)
from minsep.framework.errors import ConfigurationError
from minsep.framework.format import fmt, warn
from minsep.framework.interfaces import Accountant, SamplingScheme, Strategy
from minsep.framework.results import Result

if TYPE_CHECKING:
    from minsep.framework.cli.first_answer import FirstAnswer

#: A result type of a question (EpsilonResult, DeltaResult, CalibrationResult).
R = TypeVar("R", bound=Result)

__all__ = [
    "EXECUTOR_CHOICES",
    "EXIT_UNCERTIFIED",
    "QUESTION_NUMBERS",
    "accountant_options",
    "add_accountant_argument",
    "add_epsilon_argument",
    "add_pld_arguments",
    "add_scheme_arguments",
    "add_setup_arguments",
    "add_sigma_argument",
    "answer",
    "build_accountant",
    "build_scheme",
    "build_strategy",
    "byte_size",
    "choose_accountant",
    "closing_lines",
    "default_workers",
    "fmt",
    "given_accountant_options",
    "hide_plans",
    "int_at_least",
    "noise_multiplier",
    "nonnegative_float",
    "nonnegative_int",
    "parse_rate",
    "positive_float",
    "positive_int",
    "print_json",
    "probability",
    "provenance_lines",
    "quiet",
    "real",
    "sample_lines",
    "say",
    "scheme_options",
    "show_plans",
    "show_plans_unless_quiet",
    "skipped_names",
    "throughput",
    "warn",
]

#: Exit status of an accounting command whose answer is not certified (e.g. certified epsilon
#: = inf); 0 is a certified answer, 2 an error.
EXIT_UNCERTIFIED = 3

#: The numbers each question is asked at: the ``args`` attributes that :func:`answer` passes
#: as the question's ``numbers``, in this order.
QUESTION_NUMBERS: dict[str, tuple[str, ...]] = {
    "epsilon": ("sigma", "delta"),
    "delta": ("sigma", "epsilon"),
    "calibrate": ("epsilon", "delta"),
}


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


def _prepare(
    args: argparse.Namespace,
    accountant: Accountant,
    scheme: SamplingScheme,
    strategy: Strategy,
    question: str,
    numbers: dict[str, float] | None,
) -> tuple[Accountant, str | None, FirstAnswer | None, str | None]:
    """``(accountant with its samples chosen, answer cache key, first answer, the line stating
    the samples)`` for ``question``; the first answer and that line are printed on stderr
    (unless ``--quiet``), and worker processes start unless the cache holds the answer."""
    from minsep.framework.cli.first_answer import first_answer
    from minsep.framework.cli.sample_choice import choose_samples

    try:
        accountant, stated = choose_samples(
            args, accountant, scheme, strategy, question, dict(numbers or {})
        )
    except ConfigurationError as refused:
        if refused.parameter == "max_seconds":  # the first answer is still worth having
            early = first_answer(question, scheme, strategy, dict(numbers or {}), accountant)
            if early is not None:
                say(args, early.line())
        raise  # a bad option: one line, before any work
    key = _cache_key(args, question, numbers, accountant, scheme, strategy)
    if not _cache_holds(key):
        _start_workers(accountant, scheme, strategy, numbers)
    early = first_answer(question, scheme, strategy, dict(numbers or {}), accountant)
    if early is not None:
        say(args, early.line())
    if stated is not None:
        say(args, f"plan: {stated}")
    return accountant, key, early, stated


def _method(
    question: str, numbers: tuple[float, ...]
) -> Callable[[Accountant, SamplingScheme, Strategy], Any]:
    """Ask an accountant its method named ``question`` at ``numbers`` (in the method's order)."""

    def ask(accountant: Accountant, scheme: SamplingScheme, strategy: Strategy) -> Any:
        return getattr(accountant, question)(scheme, strategy, *numbers)

    return ask


def answer(
    args: argparse.Namespace,
    question: str,
    lines: Callable[[R], list[str]],
    certified: Callable[[R], bool] | None = None,
    *,
    ask: Callable[[Accountant, SamplingScheme, Strategy], R] | None = None,
    numbers: dict[str, float] | None = None,
) -> int:
    """Build the question's objects from ``args``, ask it, print the result (``--json`` or
    ``lines``) and return the exit status: 0, or :data:`EXIT_UNCERTIFIED` when ``certified``
    says the answer is not certified.

    ``question`` (``"epsilon"``, ``"delta"``, ``"calibrate"``) is asked at its ``numbers``
    (default: the ``args`` its :data:`QUESTION_NUMBERS` name), by ``ask`` (default: the
    accountant's method of that name, ``accountant.epsilon(scheme, strategy, sigma, delta)``
    and so on, with the numbers in that order). The
    quick deterministic bound (:mod:`.first_answer`) is printed on stderr before the run
    (unless ``--quiet``) and stored in the result's ``first_answer``, and the Monte Carlo
    samples are chosen from the question (:mod:`.sample_choice`); the result's notes say
    which accountant answered (with ``auto``) and how its samples were chosen. An accountant
    with worker processes starts them before the first answer (unless the answer cache holds
    the answer), so that their start-up overlaps it.
    """
    if numbers is None:
        numbers = {name: getattr(args, name) for name in QUESTION_NUMBERS[question]}
    ask = ask or _method(question, tuple(numbers.values()))
    scheme = build_scheme(args)
    strategy = build_strategy(args)
    show_plans_unless_quiet(args)  # first: building the accountant logs --workers auto
    accountant, chosen = choose_accountant(args, scheme, strategy)
    notes = [] if chosen is None else [chosen]
    accountant, key, early, stated = _prepare(args, accountant, scheme, strategy, question, numbers)
    if stated is not None:
        notes.append(f"{stated}.")
    result, cached = _cached(key, accountant, scheme, strategy, ask, numbers)
    if cached is not None:
        notes.append(f"{cached}.")
        say(args, cached)
    result = attrs.evolve(result, notes=(*result.notes, *notes))
    if early is not None:
        result = attrs.evolve(result, first_answer=early.to_dict())
    if args.json:
        print_json(result)
    else:
        print("\n".join(lines(result)))
    if certified is not None and not certified(result):
        warn(f"{question} NOT CERTIFIED (see the note for why); exit status {EXIT_UNCERTIFIED}")
        return EXIT_UNCERTIFIED
    return 0
