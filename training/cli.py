"""``minsep train``: calibrate σ for (ε, δ), then train with DP-SGD / BandMF.

Example::

    minsep train --scheme b_min_sep --min-sep 8 --bands 8 --epsilon 4 --delta 1e-5 \\
        --steps 500 --seed 0

prints a first answer at once (the smallest σ the deterministic bounds certify, e.g. the
unamplified Gaussian), the Monte Carlo samples chosen (``--precision``, ``--samples``,
``--max-seconds``), the plan and progress, then the calibrated σ (and what its certificate
means), the train and test accuracy, and writes a JSON record (``--output``, default
``runs/train-<timestamp>.json``). A seeded calibration is cached: the same question with the
same code is answered at once the next time (``--no-cache`` to recompute).
``--repeats K`` trains K seeds (seed, seed+1, ...) at the same σ and reports the mean with a
95% Student-t interval; ``--non-private`` trains the same batches without clipping or noise.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from pathlib import Path
from typing import Any

import attrs

from minsep.framework.cli.command import Command
from minsep.framework.cli.common import (
    add_setup_arguments,
    build_scheme,
    build_strategy,
    given_accountant_options,
    nonnegative_float,
    positive_float,
    positive_int,
    show_plans,
)
from minsep.framework.cli.first_answer import first_answer
from minsep.framework.cli.sample_choice import choose_samples
from minsep.framework.environment import environment
from minsep.framework.errors import ConfigurationError, MinsepError
from minsep.framework.interfaces import Accountant
from minsep.framework.montecarlo.cache import AnswerCache, describe_hit, question_key
from minsep.framework.registries import accountants
from minsep.framework.results import CalibrationResult
from minsep.framework.setup import (
    AUTO,
    accountant_fields,
    build_accountant,
    preference,
    select_accountant,
    strategy_label,
)
from minsep.training.data import Dataset, load_digits, synthetic
from minsep.training.models import MODEL_NAMES
from minsep.training.private import PrivateRun
from minsep.training.report import certificate_text, default_output, summarise, write_json
from minsep.training.trainer import TrainingConfig, TrainingRecord, train

#: Defaults that differ from the accounting commands' (a digits-sized training run).
TRAIN_DEFAULTS: dict[str, Any] = {"steps": 500, "rate": 1 / 16, "delta": 1e-5}

#: Options of the accounting commands that the training run uses too.
TRAINING_SHARED = ("seed", "progress")

#: Without ``--samples`` or ``--precision``, Monte Carlo calibrates for this relative precision
#: of sigma (docs/math.md §7.3): base delta delta**1.2, e.g. delta / 10 at delta = 1e-5 (about
#: 2.3 million samples); the accounting commands' 0.05 would need 15 million there.
TRAIN_PRECISION = 0.2


def default_samples(delta: float) -> int:
    """The Monte Carlo samples ``train`` calibrates with at ``delta`` when none are given
    (:data:`TRAIN_PRECISION`; about 2.3 million at δ = 1e-5, 27 thousand at δ = 1e-3)."""
    from minsep.framework.montecarlo.precision import samples_for_precision

    return samples_for_precision(delta, TRAIN_PRECISION)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The shared setup options plus privacy target, data, model and optimiser options."""
    add_setup_arguments(parser)
    parser.set_defaults(**TRAIN_DEFAULTS)
    privacy = parser.add_argument_group("privacy")
    privacy.add_argument("--epsilon", type=nonnegative_float, help="target epsilon")
    privacy.add_argument(
        "--accountant",
        default="auto",
        help=f"accountant calibrating sigma: auto (first of {', '.join(preference())} that "
        "supports the scheme and strategy) or a registered name",
    )
    privacy.add_argument(
        "--non-private",
        action="store_true",
        help="baseline: same batches, no clipping, no noise (sigma = 0)",
    )
    privacy.add_argument(
        "--clip", type=positive_float, default=1.0, help="per-example clip norm C (default 1)"
    )
    data = parser.add_argument_group("data and model")
    data.add_argument("--data", choices=["digits", "synthetic"], default="digits")
    data.add_argument("--data-seed", type=int, default=0, help="seed of the train/test split")
    data.add_argument(
        "--scaling",
        choices=["range", "standard"],
        default="range",
        help="digits features: public pixel range (default) or train-set standardisation "
        "(not covered by the DP guarantee)",
    )
    data.add_argument("--model", choices=list(MODEL_NAMES), default="softmax")
    data.add_argument("--hidden", type=positive_int, default=32, help="MLP hidden width")
    opt = parser.add_argument_group("optimiser")
    opt.add_argument("--lr", type=positive_float, default=2.0, help="base learning rate")
    opt.add_argument("--momentum", type=nonnegative_float, default=0.9)
    opt.add_argument(
        "--final-lr-factor",
        type=positive_float,
        default=0.05,
        help="linear decay to lr * factor over steps n/4 .. 3n/4 (default 1/20)",
    )
    runs = parser.add_argument_group("runs")
    runs.add_argument(
        "--repeats", type=positive_int, default=1, help="train K seeds; report mean and 95%% CI"
    )
    runs.add_argument("--output", help="JSON record path (default runs/train-<timestamp>.json)")


def load_data(args: argparse.Namespace) -> Dataset:
    """The dataset named by ``--data`` with its split seed."""
    if args.data == "synthetic":
        return synthetic(seed=args.data_seed)
    return load_digits(seed=args.data_seed, scaling=args.scaling)


def stderr_note(args: argparse.Namespace) -> Any:
    """Where the first answer, the plan and the cache lines go: one ``minsep:`` line each on
    stderr, nothing with ``--quiet`` (the results stay on stdout)."""

    def note(text: str) -> None:
        if not getattr(args, "quiet", False):
            print(f"minsep: {text}", file=sys.stderr, flush=True)

    return note


def build_run(
    args: argparse.Namespace, data: Dataset, say: Any = print, note: Any = None
) -> PrivateRun:
    """Scheme, strategy and (unless ``--non-private``) the calibrated σ, in one PrivateRun.

    ``say`` prints results (σ and its certificate), ``note`` the first answer, the samples
    chosen, the plan and cache lines (default: stderr, see :func:`stderr_note`)."""
    note = note or stderr_note(args)
    if args.max_batch_size is not None and args.dataset_size is None:
        # truncation needs the public dataset size: it is the training set's
        args = argparse.Namespace(**{**vars(args), "dataset_size": data.train_size})
    scheme = build_scheme(args)
    strategy = build_strategy(args)
    if args.non_private:
        return PrivateRun.non_private(scheme, strategy, dataset_size=data.train_size)
    if args.epsilon is None:
        raise ConfigurationError(
            "train: --epsilon is required (a number >= 0) unless --non-private is given"
        )
    # A named accountant refuses Monte Carlo options it does not take; with "auto" they apply
    # to whichever accountant takes them. --seed and --progress also drive the training run,
    # so they are never refused.
    given = given_accountant_options(args)
    shared = {k: given.pop(k) for k in TRAINING_SHARED if k in given}

    def factory(name: str) -> Accountant:
        fields = accountant_fields(accountants.get(name))
        options = {**given, **{k: v for k, v in shared.items() if k in fields}}
        return build_accountant(name, options, strict=args.accountant != AUTO)

    accountant = select_accountant(args.accountant, scheme, strategy, factory=factory)
    target = {"epsilon": args.epsilon, "delta": args.delta}
    early = first_answer("calibrate", scheme, strategy, target, accountant)
    if early is not None:
        note(early.line())
    started = time.perf_counter()
    candidates = [accountant]
    if args.accountant == AUTO:  # the rest of the auto order, should one not answer
        candidates += _auto_after(accountant, scheme, strategy, factory)
    calibration = _calibrate_first(args, candidates, scheme, strategy, note)
    run = PrivateRun(
        scheme,
        strategy,
        float(calibration.sigma),
        data.train_size,
        clip_norm=args.clip,
        calibration=calibration,  # checked against the scheme and strategy
    )
    assert run.calibration is not None
    say(f"sigma = {run.sigma:.6g}  ({time.perf_counter() - started:.1f} s)")
    say(f"  {certificate_text(run.calibration)}")
    for remark in run.calibration.notes:
        say(f"  note: {remark}")
    return run


def _auto_after(first: Accountant, scheme: Any, strategy: Any, factory: Any) -> list[Accountant]:
    """The accountants after ``first`` in the ``auto`` order that support the pair."""
    names = list(preference())
    later = names[names.index(first.registry_name) + 1 :] if first.registry_name in names else []
    built = [factory(name) for name in later]
    return [a for a in built if a.why_not(scheme, strategy) is None]


def _calibrate_first(
    args: argparse.Namespace,
    candidates: list[Accountant],
    scheme: Any,
    strategy: Any,
    note: Any,
) -> CalibrationResult:
    """The first candidate's certified σ; with ``--accountant auto`` a candidate that cannot
    answer (e.g. a Monte Carlo proposal that cannot run here, or samples over --max-seconds)
    hands over to the next, saying why (issue 30, friction 1); the last one's error stands."""
    target = {"epsilon": args.epsilon, "delta": args.delta}
    for position, candidate in enumerate(candidates):
        name = candidate.registry_name
        try:
            accountant, stated = choose_samples(
                args, candidate, scheme, strategy, "calibrate", target, TRAIN_PRECISION
            )
            detail = f" ({stated}; --workers)" if stated else ""
            if name == "gaussian" and position > 0:
                note("accountant 'gaussian': unamplified (no amplification by sampling credited)")
            note(
                f"calibrating sigma for (epsilon={args.epsilon:g}, delta={args.delta:g}) with "
                f"accountant {name!r}{detail} ..."
            )
            if not args.quiet:
                show_plans()
            key = (
                None
                if args.no_cache
                else question_key("calibrate", scheme, strategy, target, accountant)
            )
            calibration, when = AnswerCache().answer(
                key,
                CalibrationResult,
                functools.partial(accountant.calibrate, scheme, strategy, args.epsilon, args.delta),
                target,
            )
        except MinsepError as exc:
            if position + 1 == len(candidates):
                raise
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            following = candidates[position + 1].registry_name
            note(f"accountant {name!r} could not calibrate: {reason}; trying {following!r}")
            continue
        if when is not None:
            note(describe_hit(when, calibration))
        return calibration
    raise AssertionError("no candidate accountant")  # candidates is never empty


def training_config(args: argparse.Namespace, seed: int) -> TrainingConfig:
    """The optimiser settings from the command line."""
    return TrainingConfig(
        model=args.model,
        hidden=args.hidden,
        learning_rate=args.lr,
        momentum=args.momentum,
        final_lr_factor=args.final_lr_factor,
        seed=seed,
        backend=args.backend or "numpy",
    )


def _describe(run: PrivateRun, data: Dataset) -> str:
    scheme = run.scheme
    return (
        f"scheme {scheme.name} (n={scheme.n_steps}, p0={scheme.rate:.4g}, "
        f"min-sep {scheme.min_separation}), strategy {strategy_label(run.strategy)}, "
        f"{data.name} ({data.train_size} train / {data.x_test.shape[0]} test), "
        f"expected batch size {run.expected_batch_size:.1f}"
    )


def run(args: argparse.Namespace) -> int:
    """Execute ``minsep train``; returns the exit status."""
    out = sys.stderr if args.json else sys.stdout

    def say(text: str) -> None:
        print(text, file=out, flush=True)

    if args.output is not None and Path(args.output).is_dir():
        raise ConfigurationError(
            f"--output {args.output!r} is invalid: it is a folder; give the path of the JSON "
            f"record, e.g. {str(Path(args.output) / 'train.json')!r}"
        )
    started = time.perf_counter()
    data = load_data(args)
    private_run = build_run(args, data, say)
    say(
        _describe(private_run, data)
        + ("  [non-private baseline]" if not private_run.private else "")
    )
    first_seed = 0 if args.seed is None else args.seed
    records: list[TrainingRecord] = []
    for k in range(args.repeats):
        config = training_config(args, first_seed + k)
        record = train(config, data, private_run, progress=args.progress)
        records.append(record)
        say(
            f"seed {config.seed}: train accuracy {record.train_accuracy:.4f}  "
            f"test accuracy {record.test_accuracy:.4f}  ({record.seconds:.1f} s)"
        )
    summary = summarise([r.train_accuracy for r in records], [r.test_accuracy for r in records])
    if args.repeats > 1:
        for name in ("train_accuracy", "test_accuracy"):
            s = summary[name]
            say(
                f"{name.replace('_', ' ')}: mean {s['mean']:.4f}, 95% CI "
                f"[{s['low']:.4f}, {s['high']:.4f}] over {args.repeats} seeds"
            )
    document = {
        "kind": "training",
        "arguments": {k: v for k, v in vars(args).items() if not k.startswith("_")},
        "seconds": time.perf_counter() - started,
        "data": data.summary(),
        "run": private_run.describe(),
        "config": attrs.asdict(training_config(args, first_seed)),
        "summary": summary,
        "records": [r.to_dict() for r in records],
        "environment": environment(),
    }
    path = write_json(document, args.output or default_output())
    say(f"record written to {path}")
    if args.json:
        import json

        print(json.dumps(document, indent=2))
    return 0


command = Command(
    "train",
    "train a small model with DP-SGD / BandMF noise at a calibrated sigma",
    add_arguments,
    run,
    examples=(
        "minsep train --scheme b_min_sep --min-sep 8 --bands 8 --epsilon 8 --delta 1e-5 "
        "--steps 500",
    ),
)
