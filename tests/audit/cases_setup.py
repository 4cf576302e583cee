"""Audit cases of the Python API that builds a question: schemes, strategies, registries and
the trainer's configuration."""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from tests.audit.checks import is_type, predicate
from tests.audit.runner import BOUNDED, CLEAR_ERROR, VALID, Case, Check

HUGE = 10**30


def _scheme(name: str) -> Any:
    from minsep.framework.registries import schemes

    return schemes.get(name)


def _strategy(name: str) -> Any:
    from minsep.framework.registries import strategies

    return strategies.get(name)


def bad(area: str, case_id: str, call: Callable[[], Any], *names: str, **kw: Any) -> Case:
    """An API call that must raise a MinsepError naming one of ``names``."""
    return Case(case_id, area, CLEAR_ERROR, call=call, names=names, **kw)


def good(area: str, case_id: str, call: Callable[[], Any], check: Check | None = None) -> Case:
    """An API call that must succeed (and pass ``check``)."""
    return Case(case_id, area, VALID, call=call, check=check)


def edge(area: str, case_id: str, call: Callable[[], Any], *names: str, **kw: Any) -> Case:
    """An API call that may be refused clearly or answered sanely."""
    return Case(case_id, area, BOUNDED, call=call, names=names, **kw)


def _fields(name: str, **fields: Any) -> Callable[[], Any]:
    return lambda: _scheme(name)(**fields)


def _builds(name: str) -> Check:
    def check(value: Any) -> str | None:
        return None if getattr(value, "name", None) == name else f"built {value!r}"

    return check


def scheme_cases() -> list[Case]:
    """Bad fields of every scheme family, through the constructors and ``from_rate``."""
    a = "scheme"
    cases: list[Case] = []
    good_bms = {"n_steps": 8, "rate": 0.25, "min_sep": 2}
    for label, value in [
        ("zero", 0), ("negative", -1), ("float", 1.5), ("string", "8"), ("none", None),
        ("bool", True), ("nan", math.nan), ("inf", math.inf), ("list", [8]),
    ]:  # fmt: skip
        cases.append(
            bad(
                a,
                f"bmin-n-steps-{label}",
                _fields("b_min_sep", **{**good_bms, "n_steps": value}),
                "n_steps",
            )
        )
    for label, value in [
        ("zero", 0.0), ("negative", -0.25), ("above-one", 1.5), ("nan", math.nan),
        ("inf", math.inf), ("string", "0.25"), ("none", None), ("bool", True),
        ("complex", 0.25j), ("array", np.array([0.25, 0.5])),
    ]:  # fmt: skip
        cases.append(
            bad(
                a, f"bmin-rate-{label}", _fields("b_min_sep", **{**good_bms, "rate": value}), "rate"
            )
        )
    for label, value in [
        ("zero", 0),
        ("negative", -2),
        ("float", 2.5),
        ("bool", True),
        ("none", None),
        ("string", "2"),
    ]:
        cases.append(
            bad(
                a,
                f"bmin-min-sep-{label}",
                _fields("b_min_sep", **{**good_bms, "min_sep": value}),
                "min_sep",
            )
        )
    cases += [
        bad(
            a,
            "bmin-rate-above-one-over-b",
            _fields("b_min_sep", n_steps=8, rate=0.3, min_sep=4),
            "rate",
        ),
        bad(
            a,
            "bmin-warm-start-string",
            _fields("b_min_sep", **good_bms, warm_start="yes"),
            "warm_start",
        ),
        bad(
            a,
            "bmin-from-rate-missing-min-sep",
            lambda: _scheme("b_min_sep").from_rate(256, 1 / 64),
            "min_sep",
        ),
        bad(
            a,
            "bmin-from-rate-unknown-option",
            lambda: _scheme("b_min_sep").from_rate(8, 0.25, min_sep=2, bands=2),
            "bands",
        ),
        bad(
            a,
            "bmin-from-rate-swapped-arguments",
            lambda: _scheme("b_min_sep").from_rate(0.25, 8, min_sep=2),
            "n_steps",
            "rate",
        ),
        good(
            a,
            "bmin-numpy-scalars",
            _fields("b_min_sep", n_steps=np.int64(8), rate=np.float64(0.25), min_sep=np.int32(2)),
            _builds("b_min_sep"),
        ),
        good(
            a,
            "bmin-rate-exactly-one-over-b",
            _fields("b_min_sep", n_steps=8, rate=1 / 3, min_sep=3),
            _builds("b_min_sep"),
        ),
        good(
            a,
            "bmin-min-sep-above-steps",
            _fields("b_min_sep", n_steps=4, rate=0.01, min_sep=100),
            _builds("b_min_sep"),
        ),
        edge(
            a,
            "bmin-rate-fraction",
            _fields("b_min_sep", n_steps=8, rate=Fraction(1, 4), min_sep=2),
            "rate",
            check=_builds("b_min_sep"),
        ),
        edge(
            a,
            "bmin-warm-start-numpy-bool",
            _fields("b_min_sep", **good_bms, warm_start=np.bool_(False)),
            "warm_start",
            check=_builds("b_min_sep"),
        ),
        edge(
            a,
            "bmin-rate-subnormal",
            _fields("b_min_sep", n_steps=8, rate=1e-320, min_sep=2),
            "rate",
            check=_builds("b_min_sep"),
        ),
        edge(
            a,
            "bmin-n-steps-huge",
            _fields("b_min_sep", n_steps=HUGE, rate=0.25, min_sep=2),
            "n_steps",
            check=_builds("b_min_sep"),
        ),
        # poisson, cyclic Poisson, balls-in-bins
        bad(a, "poisson-rate-above-one", _fields("poisson", n_steps=8, rate=1 + 1e-12), "rate"),
        bad(
            a,
            "poisson-from-rate-min-sep",
            lambda: _scheme("poisson").from_rate(8, 0.25, min_sep=2),
            "min_sep",
        ),
        bad(a, "poisson-n-steps-none", _fields("poisson", n_steps=None, rate=0.25), "n_steps"),
        good(a, "poisson-rate-one", _fields("poisson", n_steps=8, rate=1.0), _builds("poisson")),
        bad(
            a,
            "cyclic-partition-unknown",
            _fields("cyclic_poisson", n_steps=8, rate=0.25, min_sep=2, partition="fair"),
            "partition",
        ),
        bad(
            a,
            "cyclic-rate-above-one-over-b",
            _fields("cyclic_poisson", n_steps=8, rate=0.6, min_sep=2),
            "rate",
        ),
        bad(
            a,
            "cyclic-from-rate-missing-min-sep",
            lambda: _scheme("cyclic_poisson").from_rate(8, 0.25),
            "min_sep",
        ),
        bad(
            a,
            "balls-cycle-length-zero",
            _fields("balls_in_bins", n_steps=8, cycle_length=0),
            "cycle_length",
        ),
        bad(
            a,
            "balls-cycle-length-float",
            _fields("balls_in_bins", n_steps=8, cycle_length=2.5),
            "cycle_length",
        ),
        bad(
            a,
            "balls-from-rate-non-integral",
            lambda: _scheme("balls_in_bins").from_rate(8, 2 / 7),
            "rate",
        ),
        bad(a, "balls-from-rate-zero", lambda: _scheme("balls_in_bins").from_rate(8, 0.0), "rate"),
        bad(
            a,
            "balls-from-rate-nan",
            lambda: _scheme("balls_in_bins").from_rate(8, math.nan),
            "rate",
        ),
        bad(
            a,
            "balls-from-rate-subnormal",
            lambda: _scheme("balls_in_bins").from_rate(8, 1e-320),
            "rate",
        ),
        bad(
            a,
            "balls-from-rate-string",
            lambda: _scheme("balls_in_bins").from_rate(8, "1/4"),
            "rate",
        ),
    ]
    # multi-attribution (Algorithms 3 and 4)
    ma = {"rate": 0.05, "probability": 0.1, "min_sep": 2, "max_user_examples": 2}

    def ma_from_rate(name: str = "multi_attribution", **change: Any) -> Callable[[], Any]:
        options = {k: v for k, v in {**ma, **change}.items() if v is not _DROP}
        rate = options.pop("rate")
        return lambda: _scheme(name).from_rate(10, rate, **options)

    cases += [
        bad(
            a,
            "multi-missing-max-user-examples",
            ma_from_rate(max_user_examples=_DROP),
            "max_user_examples",
        ),
        bad(a, "multi-missing-min-sep", ma_from_rate(min_sep=_DROP), "min_sep"),
        bad(
            a,
            "multi-missing-probability-and-graph",
            ma_from_rate(probability=_DROP),
            "probability",
            "graph",
        ),
        bad(
            a,
            "multi-probability-and-graph",
            lambda: _scheme("multi_attribution").from_rate(
                10, 0.05, probability=0.1, min_sep=2, max_user_examples=2, graph=_graph([[0], [1]])
            ),
            "probability",
            "graph",
        ),
        bad(a, "multi-probability-zero", ma_from_rate(probability=0.0), "probability"),
        bad(a, "multi-probability-nan", ma_from_rate(probability=math.nan), "probability"),
        bad(a, "multi-rate-above-probability", ma_from_rate(rate=0.2), "rate"),
        bad(
            a,
            "multi-max-user-examples-zero",
            ma_from_rate(max_user_examples=0),
            "max_user_examples",
        ),
        bad(
            a,
            "multi-max-user-examples-float",
            ma_from_rate(max_user_examples=2.5),
            "max_user_examples",
        ),
        bad(a, "multi-burn-in-negative", ma_from_rate(burn_in=-1), "burn_in"),
        bad(
            a,
            "multi-graph-string",
            lambda: _scheme("multi_attribution").from_rate(
                10, 0.05, min_sep=2, max_user_examples=2, graph="abc"
            ),
            "graph",
        ),
        bad(a, "multi-graph-negative-user", lambda: _graph([[0], [-1]]), "indices", "user"),
        bad(a, "multi-graph-from-csr-dense", lambda: _graph_csr(np.eye(3)), "matrix"),
        bad(
            a,
            "multi-participation-missing-min-sep",
            ma_from_rate("multi_attribution_participation", min_sep=_DROP),
            "min_sep",
        ),
        bad(
            a,
            "multi-participation-rate-nan",
            ma_from_rate("multi_attribution_participation", rate=math.nan),
            "rate",
        ),
        good(a, "multi-valid", ma_from_rate(), _builds("multi_attribution")),
        bad(
            a,
            "multi-batches-user-too-many-examples",
            lambda: next(
                iter(
                    _scheme("multi_attribution")
                    .from_rate(10, 0.05, **{k: v for k, v in ma.items() if k != "rate"})
                    .batches(_graph([[0], [0], [0]]), np.random.default_rng(0))
                )
            ),
            "max_user_examples",
        ),
    ]
    # truncated
    trunc = {"min_sep": 2, "max_batch_size": 40, "dataset_size": 100}

    def trunc_from_rate(**change: Any) -> Callable[[], Any]:
        options = {k: v for k, v in {**trunc, **change}.items() if v is not _DROP}
        return lambda: _scheme("truncated").from_rate(8, 0.25, **options)

    cases += [
        bad(
            a,
            "truncated-no-options",
            lambda: _scheme("truncated").from_rate(8, 0.25),
            "max_batch_size",
            "dataset_size",
        ),
        bad(a, "truncated-missing-min-sep", trunc_from_rate(min_sep=_DROP), "min_sep"),
        bad(a, "truncated-unknown-base", trunc_from_rate(base="bminsep"), "base", "scheme"),
        bad(a, "truncated-base-not-a-name", trunc_from_rate(base=5), "base"),
        bad(
            a,
            "truncated-base-truncated",
            trunc_from_rate(base="truncated"),
            "base",
            "max_batch_size",
        ),
        bad(a, "truncated-bmax-zero", trunc_from_rate(max_batch_size=0), "max_batch_size"),
        bad(
            a, "truncated-bmax-above-dataset", trunc_from_rate(max_batch_size=200), "max_batch_size"
        ),
        bad(a, "truncated-dataset-zero", trunc_from_rate(dataset_size=0), "dataset_size"),
        bad(a, "truncated-dataset-float", trunc_from_rate(dataset_size=100.5), "dataset_size"),
        bad(
            a,
            "truncated-base-as-name-in-constructor",
            lambda: _scheme("truncated")(base="b_min_sep", max_batch_size=10, dataset_size=100),
            "base",
        ),
        good(a, "truncated-valid", trunc_from_rate(), _builds("truncated")),
        bad(
            a,
            "truncated-batches-wrong-population",
            lambda: next(iter(trunc_from_rate()().batches(50, np.random.default_rng(0)))),
            "dataset_size",
            "population",
        ),
    ]
    # sampling
    bms = _fields("b_min_sep", **good_bms)
    cases += [
        bad(
            a,
            "batches-population-zero",
            lambda: next(iter(bms().batches(0, _rng()))),
            "population",
            "dataset",
        ),
        bad(
            a,
            "batches-population-negative",
            lambda: next(iter(bms().batches(-5, _rng()))),
            "population",
            "dataset",
        ),
        bad(
            a,
            "batches-population-none",
            lambda: next(iter(bms().batches(None, _rng()))),
            "population",
            "dataset",
        ),
        bad(
            a,
            "batches-population-float",
            lambda: next(iter(bms().batches(10.5, _rng()))),
            "population",
            "dataset",
        ),
        bad(a, "batches-rng-int", lambda: next(iter(bms().batches(10, 42))), "rng"),
        bad(
            a,
            "batches-rng-legacy-randomstate",
            lambda: next(iter(bms().batches(10, np.random.RandomState(0)))),
            "rng",
        ),
        good(
            a,
            "batches-population-numpy-int",
            lambda: list(bms().batches(np.int64(16), _rng())),
            predicate("8 batches", lambda v: len(v) == 8),
        ),
        good(
            a,
            "batches-population-one",
            lambda: list(bms().batches(1, _rng())),
            predicate("8 batches", lambda v: len(v) == 8),
        ),
    ]
    return cases


class _Drop:
    def __repr__(self) -> str:
        return "<drop>"


_DROP: Any = _Drop()


def _rng() -> np.random.Generator:
    return np.random.default_rng(0)


def _graph(lists: list[list[int]]) -> Any:
    from minsep.schemes.attribution import AttributionGraph

    return AttributionGraph.from_lists(lists)


def _graph_csr(matrix: Any) -> Any:
    from minsep.schemes.attribution import AttributionGraph

    return AttributionGraph.from_csr(matrix)


def strategy_cases() -> list[Case]:
    """Bad strategy parameters and calls."""
    a = "strategy"

    def banded(n: Any = 8, **options: Any) -> Callable[[], Any]:
        return lambda: _strategy("banded_toeplitz").for_steps(n, **options)

    def coefficients(values: Any) -> Callable[[], Any]:
        return lambda: _strategy("banded_toeplitz")(values)

    def unit_equal(value: Any) -> str | None:
        c = np.asarray(value.coefficients, dtype=float)
        equal = c.shape == (2,) and np.all(np.isfinite(c)) and abs(c[0] - c[1]) < 1e-12
        if equal and abs(float(np.linalg.norm(c)) - 1.0) < 1e-12:
            return None
        return f"coefficients {c!r}, expected two equal entries of unit norm"

    cases: list[Case] = []
    for label, value in [
        ("zero", 0), ("negative", -1), ("above-steps", 9), ("float", 2.5), ("string", "4"),
        ("none", None), ("bool", True), ("nan", math.nan),
    ]:  # fmt: skip
        cases.append(bad(a, f"banded-bands-{label}", banded(bands=value), "bands"))
    for label, value in [("zero", 0), ("negative", -8), ("float", 8.5), ("none", None)]:
        cases.append(bad(a, f"banded-n-steps-{label}", banded(value, bands=2), "n_steps"))
    cases += [
        bad(a, "banded-missing-bands", banded(), "bands"),
        bad(a, "banded-unknown-objective", banded(bands=2, objective="median"), "objective"),
        bad(a, "banded-unknown-option", banded(bands=2, band=2), "band"),
        bad(
            a,
            "banded-bands-and-coefficients",
            banded(bands=2, coefficients=(1.0, 0.5)),
            "coefficients",
        ),
        good(
            a,
            "banded-bands-numpy-int",
            banded(bands=np.int64(2)),
            predicate("2 bands", lambda v: v.bands == 2),
        ),
        edge(a, "banded-steps-huge", banded(10**9, bands=4), "n_steps"),
        bad(a, "coefficients-empty", coefficients(()), "coefficients"),
        bad(a, "coefficients-leading-zero", coefficients((0.0, 1.0)), "coefficients"),
        bad(a, "coefficients-negative", coefficients((1.0, -1.0)), "coefficients"),
        bad(a, "coefficients-nan", coefficients((math.nan,)), "coefficients"),
        bad(a, "coefficients-inf", coefficients((1.0, math.inf)), "coefficients"),
        bad(a, "coefficients-string", coefficients("abc"), "coefficients"),
        bad(a, "coefficients-none-entry", coefficients([1.0, None]), "coefficients"),
        bad(a, "coefficients-none", coefficients(None), "coefficients"),
        bad(a, "coefficients-matrix", coefficients([[1.0, 0.5]]), "coefficients"),
        edge(
            a, "coefficients-1e308", coefficients((1e308, 1e308)), "coefficients", check=unit_equal
        ),
        edge(
            a,
            "coefficients-subnormal",
            coefficients((1e-320, 1e-320)),
            "coefficients",
            check=unit_equal,
        ),
        good(a, "coefficients-numpy-array", coefficients(np.array([2.0, 2.0])), unit_equal),
        bad(
            a, "identity-given-bands", lambda: _strategy("identity").for_steps(8, bands=2), "bands"
        ),
        bad(a, "identity-n-steps-zero", lambda: _strategy("identity")().prefix_mse(0), "n_steps"),
        bad(
            a,
            "prefix-mse-negative-steps",
            lambda: coefficients((1.0, 0.5))().prefix_mse(-1),
            "n_steps",
        ),
        bad(
            a,
            "sensitivity-min-sep-zero",
            lambda: coefficients((1.0, 0.5))().sensitivity(8, 0, 1),
            "min_sep",
        ),
        bad(
            a,
            "sensitivity-participations-zero",
            lambda: coefficients((1.0, 0.5))().sensitivity(8, 2, 0),
            "max_participations",
        ),
        bad(
            a,
            "sensitivity-steps-zero",
            lambda: coefficients((1.0, 0.5))().sensitivity(0, 2, 1),
            "n_steps",
        ),
        bad(a, "matrix-steps-string", lambda: coefficients((1.0, 0.5))().matrix("8"), "n_steps"),
        good(
            a,
            "sensitivity-identity-dp-sgd",
            lambda: _strategy("identity")().sensitivity(8, 2, 4),
            predicate("sensitivity 2", lambda v: abs(v - 2.0) < 1e-12),
        ),
    ]
    return cases


def registry_cases() -> list[Case]:
    """Lookups by name."""
    registries: Any = importlib.import_module("minsep.framework.registries")

    a = "registry"

    def get(kind: str, name: Any) -> Callable[[], Any]:
        return lambda: getattr(registries, kind).get(name)

    return [
        bad(
            a,
            "scheme-typo-did-you-mean",
            get("schemes", "bminsep"),
            "scheme",
            contains=("did you mean", "b_min_sep"),
        ),
        bad(
            a,
            "strategy-typo-did-you-mean",
            get("strategies", "banded"),
            "strategy",
            contains=("did you mean", "banded_toeplitz"),
        ),
        bad(
            a,
            "accountant-typo-did-you-mean",
            get("accountants", "montecarlo"),
            "accountant",
            contains=("did you mean", "monte_carlo"),
        ),
        bad(a, "scheme-empty-name", get("schemes", ""), "scheme"),
        bad(a, "scheme-none-name", get("schemes", None), "scheme"),
        bad(a, "scheme-int-name", get("schemes", 5), "scheme"),
        bad(a, "accountant-class-instead-of-name", get("accountants", object), "accountant"),
        good(a, "accountant-dash-spelling", get("accountants", "monte-carlo"), is_type(type)),
        good(a, "scheme-upper-case", get("schemes", "POISSON"), is_type(type)),
        bad(
            a,
            "register-bad-name",
            lambda: registries.schemes.register("no spaces")(_scheme("poisson")),
            "name",
        ),
        bad(
            a,
            "register-not-a-scheme",
            lambda: registries.schemes.register("audit_dummy")(int),
            "audit_dummy",
            "scheme",
        ),
    ]


def trainer_cases() -> list[Case]:
    """The trainer's configuration object."""
    a = "trainer"

    def config(**fields: Any) -> Callable[[], Any]:
        def build() -> Any:
            from minsep.training.trainer import TrainingConfig

            return TrainingConfig(**fields)

        return build

    return [
        bad(a, "config-model-unknown", config(model="cnn"), "model"),
        bad(a, "config-learning-rate-zero", config(learning_rate=0.0), "learning_rate"),
        bad(a, "config-learning-rate-nan", config(learning_rate=math.nan), "learning_rate"),
        bad(a, "config-learning-rate-string", config(learning_rate="2.0"), "learning_rate"),
        bad(a, "config-momentum-one", config(momentum=1.0), "momentum"),
        bad(
            a, "config-decay-end-before-start", config(decay_start=0.5, decay_end=0.25), "decay_end"
        ),
        bad(a, "config-seed-negative", config(seed=-1), "seed"),
        bad(a, "config-eval-points-negative", config(eval_points=-1), "eval_points"),
        bad(a, "config-backend-unknown", config(backend="tpu"), "backend"),
        bad(a, "config-hidden-zero", config(hidden=0), "hidden"),
        good(
            a,
            "config-numpy-seed",
            config(seed=np.int64(3)),
            predicate("a config", lambda v: int(v.seed) == 3),
        ),
    ]


def compare_cases() -> list[Case]:
    """The comparison library's setup object and a tiny comparison."""
    a = "compare"

    def setup(**fields: Any) -> Callable[[], Any]:
        def build() -> Any:
            from minsep.framework.compare import ComparisonSetup

            return ComparisonSetup(**{"n_steps": 8, "rate": 0.25, "sigma": 1.0, **fields})

        return build

    def tiny() -> Any:
        from minsep.framework.compare import ComparisonSetup, compare

        rows = compare(
            ComparisonSetup(
                n_steps=8,
                rate=0.25,
                sigma=1.0,
                bands=(1,),
                families=("poisson", "unamplified"),
            )
        )
        return rows

    def rows_sane(rows: Any) -> str | None:
        if not rows:
            return "no rows"
        for row in rows:
            eps = getattr(row, "epsilon", None)
            if eps is not None and not (eps >= 0 and math.isfinite(eps)):
                return f"row {row!r} has epsilon {eps!r}"
        return None

    return [
        bad(a, "setup-n-steps-zero", setup(n_steps=0), "n_steps"),
        bad(a, "setup-rate-nan", setup(rate=math.nan), "rate"),
        bad(a, "setup-delta-one", setup(delta=1.0), "delta"),
        bad(a, "setup-epsilon-and-sigma", setup(epsilon=2.0), "epsilon", "sigma"),
        bad(a, "setup-neither-epsilon-nor-sigma", setup(sigma=None), "epsilon", "sigma"),
        bad(a, "setup-bands-empty", setup(bands=()), "bands"),
        bad(a, "setup-bands-string", setup(bands="1,4"), "bands"),
        bad(a, "setup-bands-bool", setup(bands=(True,)), "bands"),
        bad(a, "setup-min-seps-zero", setup(min_seps=(0,)), "min_seps"),
        bad(a, "setup-families-empty", setup(families=()), "families"),
        bad(a, "setup-families-unknown", setup(families=("dp_sgd",)), "families"),
        bad(a, "setup-families-string", setup(families="poisson"), "families"),
        bad(a, "setup-sigma-negative", setup(sigma=-1.0), "sigma"),
        bad(a, "setup-accountant-options-unknown", lambda: _compare_with(samples=-5), "samples"),
        good(a, "compare-tiny-exact", tiny, rows_sane),
    ]


def _compare_with(**options: Any) -> Any:
    from minsep.framework.compare import ComparisonSetup, compare

    return compare(
        ComparisonSetup(
            n_steps=8,
            rate=0.25,
            sigma=1.0,
            bands=(1,),
            families=("b_min_sep",),
            min_seps=(2,),
            accountant_options=options,
        )
    )
