"""Audit cases of the accounting API: accountants, the Monte Carlo engine functions, backends,
results and checkpoints."""

from __future__ import annotations

import functools
import importlib
import json
import math
import os
import tempfile
from collections.abc import Callable
from typing import Any

import numpy as np

from minsep.accountants.monte_carlo import CalibrationSweep, RunSettings
from tests.audit.cases_setup import bad, edge, good
from tests.audit.checks import (
    finite_positive,
    predicate,
    probability_value,
    true_gaussian_delta,
    within,
)
from tests.audit.runner import Case, default_check

#: Tiny Monte Carlo accountant settings (fractions of a second per question).
MC_OPTIONS = {"samples": 5000, "seed": 0, "chunk_size": 4096, "progress": False}


def _registry(kind: str) -> Any:
    """A registry, untyped: the cases build concrete classes and pass ill-typed values."""
    from minsep.framework import registries

    return getattr(registries, kind)


def accountant(name: str, **options: Any) -> Any:
    """The accountant ``name`` from flat options (those of its option records included)."""
    from minsep.framework.option_groups import grouped

    cls = _registry("accountants").get(name)
    return cls(**grouped(cls, options))


def mc(**options: Any) -> Any:
    return accountant("monte_carlo", **{**MC_OPTIONS, **options})


def bms() -> Any:
    return _registry("schemes").get("b_min_sep")(n_steps=8, rate=0.25, min_sep=2)


def poisson() -> Any:
    return _registry("schemes").get("poisson")(n_steps=8, rate=0.25)


def identity() -> Any:
    return _registry("strategies").get("identity")()


def banded(*c: float) -> Any:
    return _registry("strategies").get("banded_toeplitz")(c)


def mc_constructor_cases() -> list[Case]:
    a = "accountant"
    cases = []
    table: dict[str, list[tuple[str, Any]]] = {
        "samples": [("zero", 0), ("below-100", 99), ("float", 2.5), ("string", "1000"),
                    ("none", None), ("bool", True), ("nan", math.nan)],
        "pilot_samples": [("ten", 10), ("string", "1000")],
        "seed": [("negative", -1), ("float", 1.5), ("string", "0")],
        "backend": [("unknown", "tpu"), ("none", None)],
        "chunk_size": [("zero", 0), ("above-limit", 1 << 25), ("float", 4096.5)],
        "workers": [("zero", 0), ("huge", 100_000), ("string", "2")],
        "executor": [("unknown", "mpi")],
        "scheduler": [("garbage", "not an address"), ("missing-file", "/nonexistent/s.json")],
        "checkpoint": [("missing-folder", "/nonexistent/x.ckpt"), ("folder", "/tmp"),
                       ("empty", ""), ("unwritable", "/proc/minsep-audit.ckpt")],
        "checkpoint_interval": [("negative", -1.0), ("nan", math.nan)],
        "sweep_ratio": [("one", 1.0), ("three", 3.0)],
        "sweep_size": [("one", 1)],
        "sigma_low": [("zero", 0.0), ("inf", math.inf)],
    }  # fmt: skip
    for field, values in table.items():
        for label, value in values:
            options = {**MC_OPTIONS, field: value}
            cases.append(
                bad(
                    a,
                    f"mc-{field.replace('_', '-')}-{label}",
                    functools.partial(accountant, "monte_carlo", **options),
                    field,
                )
            )
    cases += [
        bad(
            a,
            "mc-sigma-high-below-low",
            lambda: mc(sweep=CalibrationSweep(sigma_low=2.0, sigma_high=1.0)),
            "sigma_high",
        ),
        bad(
            a,
            "mc-local-with-two-workers",
            lambda: mc(run=RunSettings(executor="local", workers=2)),
            "workers",
        ),
        bad(
            a,
            "mc-scheduler-with-processes",
            lambda: mc(run=RunSettings(executor="processes", scheduler="tcp://127.0.0.1:9")),
            "scheduler",
        ),
        good(
            a,
            "mc-numpy-seed-end-to-end",
            lambda: mc(seed=np.int64(0)).epsilon(bms(), identity(), 1.0, 1e-2),
            within("certified_epsilon", 0.1, 20.0),
        ),
        good(
            a,
            "mc-numpy-samples-end-to-end",
            lambda: mc(samples=np.int64(5000)).epsilon(bms(), identity(), 1.0, 1e-2),
            within("certified_epsilon", 0.1, 20.0),
        ),
        good(
            a,
            "mc-seed-2pow64",
            lambda: mc(seed=2**64).epsilon(bms(), identity(), 1.0, 1e-2),
            within("certified_epsilon", 0.1, 20.0),
        ),
        bad(
            a,
            "pld-interval-zero",
            lambda: accountant("pld", value_discretization_interval=0.0),
            "value_discretization_interval",
        ),
        bad(
            a,
            "pld-interval-string",
            lambda: accountant("pld", value_discretization_interval="0.001"),
            "value_discretization_interval",
        ),
        bad(
            a,
            "pld-interval-one",
            lambda: accountant("pld", value_discretization_interval=1.0),
            "value_discretization_interval",
        ),
        bad(a, "pld-sigma-rtol-nan", lambda: accountant("pld", sigma_rtol=math.nan), "sigma_rtol"),
    ]
    return cases


def _query(name: str, method: str, *args: Any, scheme: Callable[[], Any] = poisson,
           strategy: Callable[[], Any] = identity) -> Callable[[], Any]:  # fmt: skip
    def call() -> Any:
        acc = mc() if name == "monte_carlo" else accountant(name)
        return getattr(acc, method)(scheme(), strategy(), *args)

    return call


def query_cases() -> list[Case]:
    """Bad arguments of epsilon / delta / calibrate on every accountant."""
    a = "accountant"
    cases: list[Case] = []
    bad_sigmas = [("zero", 0.0), ("negative", -1.0), ("nan", math.nan), ("inf", math.inf),
                  ("string", "1"), ("none", None), ("bool", True)]  # fmt: skip
    bad_deltas = [("zero", 0.0), ("one", 1.0), ("five", 5.0), ("nan", math.nan),
                  ("string", "0.01"), ("none", None), ("negative", -0.1)]  # fmt: skip
    bad_epsilons = [("negative", -1.0), ("nan", math.nan), ("string", "1"), ("none", None)]
    for name, scheme in [("monte_carlo", bms), ("pld", poisson), ("gaussian", poisson)]:
        short = {"monte_carlo": "mc", "pld": "pld", "gaussian": "gauss"}[name]
        for label, value in bad_sigmas:
            cases.append(
                bad(
                    a,
                    f"{short}-epsilon-sigma-{label}",
                    _query(name, "epsilon", value, 1e-2, scheme=scheme),
                    "sigma",
                )
            )
        for label, value in bad_deltas:
            cases.append(
                bad(
                    a,
                    f"{short}-epsilon-delta-{label}",
                    _query(name, "epsilon", 1.0, value, scheme=scheme),
                    "delta",
                )
            )
        for label, value in bad_epsilons:
            cases.append(
                bad(
                    a,
                    f"{short}-delta-epsilon-{label}",
                    _query(name, "delta", 1.0, value, scheme=scheme),
                    "epsilon",
                )
            )
            cases.append(
                bad(
                    a,
                    f"{short}-calibrate-epsilon-{label}",
                    _query(name, "calibrate", value, 1e-2, scheme=scheme),
                    "epsilon",
                )
            )
        cases.append(
            bad(
                a,
                f"{short}-calibrate-delta-zero",
                _query(name, "calibrate", 2.0, 0.0, scheme=scheme),
                "delta",
            )
        )
        cases.append(
            bad(
                a,
                f"{short}-scheme-none",
                _query(name, "epsilon", 1.0, 1e-2, scheme=lambda: None),
                "scheme",
            )
        )
        cases.append(
            bad(
                a,
                f"{short}-scheme-strategy-swapped",
                _query(name, "epsilon", 1.0, 1e-2, scheme=identity, strategy=scheme),
                "scheme",
                "strategy",
            )
        )
    cases += [
        bad(
            a,
            "mc-bands-above-min-sep",
            _query(
                "monte_carlo",
                "epsilon",
                1.0,
                1e-2,
                scheme=bms,
                strategy=lambda: banded(1, 0.5, 0.25),
            ),
            "bands",
        ),
        bad(
            a,
            "pld-on-b-min-sep-names-others",
            _query("pld", "epsilon", 1.0, 1e-2, scheme=bms),
            "monte_carlo",
        ),
        bad(
            a,
            "mc-too-few-samples-for-delta",
            # plain sampling: proposal "auto" would take the escort here (docs/rdp-escort.md §8)
            lambda: mc(proposal="plain").epsilon(bms(), identity(), 1.0, 1e-5),
            "samples",
            "m =",
        ),
        edge(
            a,
            "mc-delta-1e-320",
            _query("monte_carlo", "epsilon", 1.0, 1e-320, scheme=bms),
            "delta",
            "samples",
            contains=("1e-320",),  # the user's value, not an internal delta_b = 0.0
        ),
        edge(
            a,
            "mc-sigma-1e308",
            _query("monte_carlo", "epsilon", 1e308, 1e-2, scheme=bms),
            "sigma",
            check=within("certified_epsilon", 0.0, 1.0),
        ),
        edge(
            a,
            "mc-sigma-1e-320",
            _query("monte_carlo", "epsilon", 1e-320, 1e-2, scheme=bms),
            "sigma",
        ),
        edge(
            a,
            "mc-multi-attribution-ku-1e6",
            lambda: mc().epsilon(_multi(10**6), identity(), 1.0, 1e-2),
            "max_user_examples",
            "memory",
        ),
        edge(
            a,
            "mc-steps-1e7",
            lambda: mc().epsilon(_bms_steps(10**7), identity(), 1.0, 1e-2),
            "n_steps",
            "memory",
            "chunk",
        ),
        edge(
            a,
            "mc-chunk-size-4e6",
            lambda: mc(run=RunSettings(chunk_size=4_000_000)).epsilon(bms(), identity(), 1.0, 1e-2),
            "chunk_size",
            "memory",
        ),
        edge(
            a,
            "mc-samples-1e18",
            lambda: mc(samples=10**18).epsilon(bms(), identity(), 1.0, 1e-2),
            "samples",
        ),
        edge(a, "pld-sigma-1e-3", _query("pld", "epsilon", 1e-3, 1e-3), "sigma"),
        edge(a, "pld-sigma-0p02", _query("pld", "epsilon", 0.02, 1e-3), "sigma"),
        edge(a, "pld-calibrate-epsilon-1e6", _query("pld", "calibrate", 1e6, 1e-3), "epsilon"),
        edge(
            a,
            "gauss-calibrate-epsilon-1e308",
            _query("gaussian", "calibrate", 1e308, 1e-3),
            "epsilon",
            check=within("sigma", 0.0, 1.0),
        ),
        good(
            a,
            "gauss-delta-sigma-1e16-not-pure",
            lambda: accountant("gaussian").delta(poisson(), identity(), 1e16, 0.0),
            _delta_matches_truth(1e16 / math.sqrt(8), 0.0),
        ),
        good(
            a,
            "gauss-calibrate-epsilon-zero-tiny-delta",
            lambda: accountant("gaussian").calibrate(poisson(), identity(), 0.0, 1e-15),
            _sigma_meets(1e-15, 0.0),
        ),
        good(
            a,
            "gauss-epsilon-delta-1e-300",
            _query("gaussian", "epsilon", 1.0, 1e-300),
            within("epsilon", 10.0, 1e4),
        ),
        edge(
            a,
            "gauss-epsilon-delta-1e-320",
            _query("gaussian", "epsilon", 1.0, 1e-320),
            "delta",
            check=within("epsilon", 10.0, 1e4),
        ),
        good(
            a,
            "gauss-sigma-1e308",
            _query("gaussian", "epsilon", 1e308, 1e-3),
            within("epsilon", 0.0, 1e-6),
        ),
        good(
            a,
            "gauss-multi-attribution-grows-with-ku",
            _gaussian_ku_monotone,
            predicate("epsilon(k_u=16) > epsilon(k_u=1)", lambda v: v[1] > v[0] * 1.5),
        ),
        good(
            a,
            "gauss-truncated-not-below-pld",
            _gaussian_vs_pld_truncated,
            predicate("gaussian epsilon >= exact PLD epsilon", lambda v: v[0] >= v[1]),
        ),
        good(
            a,
            "pld-below-gaussian-poisson",
            _pld_vs_gaussian_poisson,
            predicate("exact PLD epsilon <= gaussian epsilon", lambda v: v[1] <= v[0]),
        ),
        good(
            a,
            "pld-calibrate-epsilon-zero",
            _query("pld", "calibrate", 0.0, 1e-3),
            within("sigma", 1.0, 1e6),
        ),
        good(
            a,
            "mc-calibrate-tiny",
            lambda: mc(sweep=CalibrationSweep(sweep_size=4)).calibrate(
                bms(), identity(), 4.0, 1e-2
            ),
            within("sigma", 0.05, 300.0),
        ),
        good(
            a,
            "mc-delta-tiny",
            _query("monte_carlo", "delta", 1.0, 2.0, scheme=bms),
            within("certified_delta", 0.0, 0.5),
        ),
        good(
            a,
            "mc-multi-attribution-valid",
            lambda: mc().epsilon(_multi(2), identity(), 1.0, 1e-2),
            within("certified_epsilon", 0.0, 30.0),
        ),
        good(
            a,
            "pld-truncated-valid",
            _query("pld", "epsilon", 2.0, 1e-3, scheme=_truncated_poisson),
            within("epsilon", 0.1, 30.0),
        ),
    ]
    return cases


def _multi(k_u: int) -> Any:
    from minsep.framework.registries import schemes

    return schemes.get("multi_attribution").from_rate(
        8, 0.05, probability=0.1, min_sep=2, max_user_examples=k_u
    )


def _bms_steps(n: int) -> Any:
    return _registry("schemes").get("b_min_sep")(n_steps=n, rate=0.25, min_sep=2)


def _truncated_poisson() -> Any:
    from minsep.framework.registries import schemes

    return schemes.get("truncated").from_rate(
        8, 0.5, base="poisson", dataset_size=100, max_batch_size=40
    )


def _gaussian_ku_monotone() -> tuple[float, float]:
    acc = accountant("gaussian")
    strategy = banded(1.0, 0.5)
    values = [
        acc.epsilon(
            __import__("minsep.framework.registries", fromlist=["schemes"])
            .schemes.get("multi_attribution")
            .from_rate(64, 0.01, probability=0.05, min_sep=4, max_user_examples=k),
            strategy,
            2.0,
            1e-3,
        ).epsilon
        for k in (1, 16)
    ]
    return values[0], values[1]


def _gaussian_vs_pld_truncated() -> tuple[float, float]:
    scheme = _truncated_poisson()
    gauss = accountant("gaussian").epsilon(scheme, identity(), 2.0, 1e-3).epsilon
    exact = accountant("pld").epsilon(scheme, identity(), 2.0, 1e-3).epsilon
    return gauss, exact


def _pld_vs_gaussian_poisson() -> tuple[float, float]:
    gauss = accountant("gaussian").epsilon(poisson(), identity(), 1.0, 1e-3).epsilon
    exact = accountant("pld").epsilon(poisson(), identity(), 1.0, 1e-3).epsilon
    return gauss, exact


def _delta_matches_truth(unit_sigma: float, epsilon: float) -> Callable[[Any], str | None]:
    def check(result: Any) -> str | None:
        truth = true_gaussian_delta(unit_sigma, epsilon)
        got = result.delta
        if not (got >= truth * (1 - 1e-6)):
            return f"delta = {got!r} below the true {truth!r} (claims more privacy than holds)"
        return default_check(result)

    return check


def _sigma_meets(delta: float, epsilon: float) -> Callable[[Any], str | None]:
    def check(result: Any) -> str | None:
        sens = math.sqrt(8)  # identity strategy, 8 steps of Poisson sampling
        truth = true_gaussian_delta(result.sigma / sens, epsilon)
        if truth > delta:
            return f"sigma = {result.sigma!r} gives true delta {truth!r} > target {delta!r}"
        return default_check(result)

    return check


def engine_cases() -> list[Case]:
    """The Monte Carlo engine functions of ``minsep.framework.montecarlo``."""
    a = "engine"
    m: Any = importlib.import_module("minsep.framework.montecarlo")

    def model() -> Any:
        return bms().loss_model(identity())

    def certify(**change: Any) -> Callable[[], Any]:
        args = {"sigma": 1.0, "delta": 1e-2, "samples": 5000, "pilot_samples": 1000, "seed": 0}
        args.update(change)
        sigma, delta = args.pop("sigma"), args.pop("delta")
        return lambda: m.certify_epsilon(model(), sigma, delta, **args)

    return [
        bad(a, "certify-sigma-zero", certify(sigma=0.0), "sigma"),
        bad(a, "certify-sigma-string", certify(sigma="1"), "sigma"),
        bad(a, "certify-delta-zero", certify(delta=0.0), "delta"),
        bad(a, "certify-delta-string", certify(delta="0.01"), "delta"),
        bad(a, "certify-samples-one", certify(samples=1), "samples"),
        bad(a, "certify-pilot-one", certify(pilot_samples=1), "pilot_samples"),
        bad(a, "certify-seed-negative", certify(seed=-1), "seed"),
        bad(a, "certify-ladder-empty", certify(ladder=()), "ladder"),
        bad(a, "certify-ladder-above-one", certify(ladder=(2.0,)), "ladder"),
        bad(a, "certify-config-wrong-type", certify(config="fast"), "config"),
        good(
            a,
            "certify-numpy-seed",
            certify(seed=np.int64(0)),
            predicate("a verified certificate", lambda c: c.verified and c.certified > 0),
        ),
        bad(a, "certify-delta-too-small-for-m", certify(delta=1e-6), "samples", "m ="),
        bad(a, "engine-config-chunk-zero", lambda: m.EngineConfig(chunk_size=0), "chunk_size"),
        bad(
            a, "engine-config-chunk-huge", lambda: m.EngineConfig(chunk_size=1 << 29), "chunk_size"
        ),
        bad(a, "engine-config-backend-unknown", lambda: m.EngineConfig(backend="tpu"), "backend"),
        bad(
            a, "engine-config-executor-string", lambda: m.EngineConfig(executor="local"), "executor"
        ),
        bad(a, "bins-bits-negative", lambda: m.BinSpec(bin_bits=-1), "bin_bits"),
        bad(a, "bins-max-loss-nan", lambda: m.BinSpec(max_loss=math.nan), "max_loss"),
        bad(a, "sample-no-sigmas", lambda: m.sample(model(), [], n_samples=100, seed=0), "sigmas"),
        bad(
            a,
            "sample-sigma-nan",
            lambda: m.sample(model(), [math.nan], n_samples=100, seed=0),
            "sigma",
        ),
        bad(a, "sample-n-zero", lambda: m.sample(model(), [1.0], n_samples=0, seed=0), "n_samples"),
        bad(
            a,
            "sample-direction-unknown",
            lambda: m.sample(model(), [1.0], n_samples=100, seed=0, directions=("up",)),
            "directions",
        ),
        bad(a, "base-delta-m-zero", lambda: m.base_delta(0, 1e-3), "m"),
        bad(a, "base-delta-too-few", lambda: m.base_delta(10, 1e-3), "m"),
        bad(a, "base-delta-delta-zero", lambda: m.base_delta(1000, 0.0), "delta"),
        bad(a, "base-delta-delta-nan", lambda: m.base_delta(1000, math.nan), "delta"),
        edge(
            a,
            "base-delta-delta-1e-320",
            lambda: m.base_delta(10**6, 1e-320),
            "delta",
            "m",
            contains=("1e-320",),
            check=finite_positive,
        ),
        edge(
            a,
            "min-samples-delta-1e-300",
            lambda: m.min_samples(1e-301, 1e-300),
            "delta",
            "samples",
            check=finite_positive,
        ),
        bad(a, "min-samples-base-above-delta", lambda: m.min_samples(1e-2, 1e-3), "delta_b"),
        bad(a, "overall-delta-m-zero", lambda: m.overall_delta(0, 1e-3), "m"),
        bad(
            a,
            "overall-delta-candidates-zero",
            lambda: m.overall_delta(1000, 1e-3, candidates=0),
            "candidates",
        ),
        good(a, "overall-delta-valid", lambda: m.overall_delta(10**6, 1e-4), probability_value),
        bad(a, "kl-bernoulli-above-one", lambda: m.kl_bernoulli(2.0, 0.5), "a"),
        bad(a, "kl-upper-mean-negative", lambda: m.kl_upper_confidence(-1.0, 100, 1.0), "mean"),
        bad(a, "sweep-start-zero", lambda: m.geometric_sweep(0.0, 1.1, 3), "start"),
        bad(a, "sweep-ratio-one", lambda: m.geometric_sweep(1.0, 1.0, 3), "ratio"),
        bad(a, "sweep-count-zero", lambda: m.geometric_sweep(1.0, 1.1, 0), "count"),
        bad(
            a,
            "calibrate-sweep-increasing",
            lambda: m.calibrate_sweep(model(), [1.0, 2.0], 2.0, 1e-2, samples=5000, seed=0),
            "sweep",
        ),
        bad(
            a,
            "calibrate-sweep-empty",
            lambda: m.calibrate_sweep(model(), [], 2.0, 1e-2, samples=5000, seed=0),
            "sweep",
        ),
        bad(a, "executor-workers-zero", lambda: m.get_executor(0), "workers"),
        bad(a, "executor-unknown-kind", lambda: m.get_executor(1, "mpi"), "kind"),
        bad(a, "executor-local-two", lambda: m.get_executor(2, "local"), "workers"),
        bad(
            a, "executor-scheduler-garbage", lambda: m.get_executor(1, None, "garbage"), "scheduler"
        ),
        bad(a, "chunk-seed-negative", lambda: m.chunk_seed(-1, 0, 0, _remove()), "seed"),
        bad(a, "checkpoint-missing-folder", lambda: m.Checkpoint("/nonexistent/x.ckpt"), "path"),
        bad(a, "checkpoint-folder", lambda: m.Checkpoint("/tmp"), "path"),
        bad(
            a,
            "checkpoint-every-seconds-negative",
            lambda: m.Checkpoint(
                os.path.join(tempfile.gettempdir(), "audit.ckpt"), every_seconds=-1.0
            ),
            "every_seconds",
        ),
    ]


def _remove() -> Any:
    from minsep.framework.interfaces import Direction

    return Direction.REMOVE


def backend_cases() -> list[Case]:
    a = "backend"
    b: Any = importlib.import_module("minsep.framework.backend")

    return [
        bad(a, "backend-unknown", lambda: b.get_backend("tpu"), "backend"),
        bad(a, "backend-none", lambda: b.get_backend(None), "backend"),
        bad(a, "backend-int", lambda: b.get_backend(5), "backend"),
        edge(a, "backend-cupy", lambda: b.get_backend("cupy"), "cupy"),
        edge(a, "backend-upper-case", lambda: b.get_backend("NUMPY"), "backend"),
        good(
            a,
            "backend-auto",
            lambda: b.get_backend("auto"),
            predicate("a backend", lambda v: v.name in ("numpy", "cupy")),
        ),
    ]


# -- results and checkpoints ----------------------------------------------------------------------


def _eps_json(**change: Any) -> str:
    data: dict[str, Any] = {
        "kind": "epsilon", "accountant": "pld", "method": "exact", "scheme": {}, "strategy": {},
        "seconds": 0.1, "notes": [], "epsilon": 1.0, "certified_epsilon": 1.0, "delta": 1e-3,
        "sigma": 1.0,
    }  # fmt: skip
    for key, value in change.items():
        if value is _REMOVE:
            data.pop(key, None)
        else:
            data[key] = value
    return json.dumps(data)


_REMOVE = object()


def _from_json(text: Any) -> Callable[[], Any]:
    def call() -> Any:
        from minsep.framework.results import Result

        return Result.from_json(text)

    return call


def result_cases() -> list[Case]:
    a = "results"
    nan = {"__float__": "nan"}
    cases = [
        bad(a, "json-not-json", _from_json("not json"), "json"),
        bad(a, "json-list", _from_json("[]"), "json", "result"),
        bad(a, "json-empty-object", _from_json("{}"), "kind"),
        bad(a, "json-none", _from_json(None), "json"),
        bad(a, "json-unknown-kind", _from_json(_eps_json(kind="sigma")), "kind"),
        bad(a, "json-missing-epsilon", _from_json(_eps_json(epsilon=_REMOVE)), "epsilon"),
        bad(a, "json-unknown-field", _from_json(_eps_json(foo=1)), "foo"),
        bad(
            a,
            "json-certified-nan",
            _from_json(_eps_json(certified_epsilon=nan)),
            "certified_epsilon",
        ),
        bad(
            a,
            "json-certified-negative",
            _from_json(_eps_json(certified_epsilon=-1.0)),
            "certified_epsilon",
        ),
        bad(
            a,
            "json-certified-string",
            _from_json(_eps_json(certified_epsilon="1.0")),
            "certified_epsilon",
        ),
        bad(
            a,
            "json-certified-below-estimate",
            _from_json(_eps_json(certified_epsilon=0.5)),
            "certified_epsilon",
        ),
        bad(a, "json-delta-five", _from_json(_eps_json(delta=5.0)), "delta"),
        bad(a, "json-sigma-zero", _from_json(_eps_json(sigma=0.0)), "sigma"),
        bad(
            a,
            "json-failure-probability-two",
            _from_json(_eps_json(failure_probability=2.0)),
            "failure_probability",
        ),
        bad(a, "json-samples-negative", _from_json(_eps_json(samples=-1)), "samples"),
        bad(a, "json-samples-string", _from_json(_eps_json(samples="many")), "samples"),
        bad(a, "json-notes-not-list", _from_json(_eps_json(notes=5)), "notes"),
        bad(
            a,
            "json-float-tag-garbage",
            _from_json(_eps_json(epsilon={"__float__": "x"})),
            "epsilon",
        ),
        bad(a, "json-epsilon-result-of-calibration", lambda: _epsilon_from_calibration(), "kind"),
        bad(
            a,
            "json-calibration-candidates-strings",
            _from_json(
                json.dumps(
                    {
                        "kind": "calibration",
                        "accountant": "pld",
                        "method": "exact",
                        "sigma": 1.0,
                        "epsilon": 1.0,
                        "delta": 1e-3,
                        "candidates": ["a"],
                    }
                )
            ),
            "candidates",
        ),
        bad(
            a,
            "json-delta-result-certified-above-one",
            _from_json(
                json.dumps(
                    {
                        "kind": "delta",
                        "accountant": "pld",
                        "method": "exact",
                        "delta": 0.1,
                        "certified_delta": 1.5,
                        "epsilon": 1.0,
                        "sigma": 1.0,
                    }
                )
            ),
            "certified_delta",
        ),
        bad(
            a,
            "constructor-certified-nan",
            lambda: _epsilon_result(certified_epsilon=math.nan),
            "certified_epsilon",
        ),
        bad(a, "constructor-delta-negative", lambda: _epsilon_result(delta=-0.1), "delta"),
        good(
            a,
            "json-round-trip-uncertified-inf",
            lambda: _round_trip(certified_epsilon=math.inf),
            predicate("inf certified epsilon", lambda r: math.isinf(r.certified_epsilon)),
        ),
        good(
            a,
            "json-round-trip-real-result",
            lambda: _round_trip_real(),
            predicate("an equal result", lambda v: v[0] == v[1]),
        ),
    ]
    return cases


def _epsilon_result(**change: Any) -> Any:
    from minsep.framework.results import EpsilonResult

    data = json.loads(_eps_json(**change))
    data.pop("kind")
    return EpsilonResult(**data)


def _round_trip(**change: Any) -> Any:
    from minsep.framework.results import Result

    return Result.from_json(_epsilon_result(**change).to_json())


def _round_trip_real() -> tuple[Any, Any]:
    from minsep.framework.results import Result

    result = accountant("pld").epsilon(poisson(), identity(), 1.0, 1e-3)
    return result, Result.from_json(result.to_json())


def _epsilon_from_calibration() -> Any:
    from minsep.framework.results import CalibrationResult, EpsilonResult

    text = CalibrationResult(
        accountant="pld", method="exact", sigma=1.0, epsilon=1.0, delta=1e-3
    ).to_json()
    return EpsilonResult.from_json(text)


def _with_checkpoint(content: str | bytes | None, second_sigma: float | None = None) -> Any:
    folder = tempfile.mkdtemp(prefix="minsep-audit-")
    path = os.path.join(folder, "run.ckpt")
    if content is not None:
        with open(path, "wb") as handle:
            handle.write(content.encode() if isinstance(content, str) else content)
    acc = mc(run=RunSettings(checkpoint=path, checkpoint_interval=0.0))
    first = acc.epsilon(bms(), identity(), 1.0, 1e-2)
    if second_sigma is None:
        return first
    return first, acc.epsilon(bms(), identity(), second_sigma, 1e-2)


def checkpoint_cases() -> list[Case]:
    a = "checkpoint"
    return [
        bad(a, "ckpt-garbage", lambda: _with_checkpoint("garbage"), "checkpoint"),
        bad(
            a, "ckpt-truncated-json", lambda: _with_checkpoint('{"version": 1, "stag'), "checkpoint"
        ),
        bad(a, "ckpt-json-list", lambda: _with_checkpoint("[]"), "checkpoint"),
        bad(a, "ckpt-json-empty-object", lambda: _with_checkpoint("{}"), "checkpoint"),
        bad(a, "ckpt-binary", lambda: _with_checkpoint(b"\x00\xff\xfe" * 10), "checkpoint"),
        bad(
            a,
            "ckpt-other-question",
            lambda: _with_checkpoint(None, second_sigma=2.0),
            "sigma",
            "checkpoint",
        ),
        edge(
            a,
            "ckpt-empty-file",
            lambda: _with_checkpoint(""),
            "checkpoint",
            check=within("certified_epsilon", 0.1, 20.0),
        ),
        good(
            a,
            "ckpt-resume-identical",
            lambda: _with_checkpoint(None, second_sigma=1.0),
            predicate(
                "identical results", lambda v: v[0].certified_epsilon == v[1].certified_epsilon
            ),
        ),
    ]


def accounting_cases() -> list[Case]:
    """Every accounting-side API case."""
    return all_of_lists(
        mc_constructor_cases(), query_cases(), engine_cases(), backend_cases(), result_cases(),
        checkpoint_cases(),
    )  # fmt: skip


def all_of_lists(*groups: list[Case]) -> list[Case]:
    return [case for group in groups for case in group]
