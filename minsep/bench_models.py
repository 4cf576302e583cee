"""The loss models the bench times (:mod:`minsep.bench`): its two sizes and every registered
scheme's Monte Carlo model at them, found through the registries."""

from __future__ import annotations

import math
import warnings
from typing import Any

import attrs

from minsep.framework.errors import ConfigurationError, NotAccountableError
from minsep.framework.interfaces import PrivacyLossModel, SamplingScheme
from minsep.schemes.losses import BMinSepLossModel


@attrs.frozen
class Case:
    """One benchmark size: n steps, k = b bands, rate p0, samples per repetition."""

    name: str
    n_steps: int
    bands: int
    samples: int
    engine_samples: int
    chunk_size: int

    @property
    def rate(self) -> float:
        """p0 = 1 / (2 b): half the largest rate b-min-sep allows."""
        return 1.0 / (2 * self.bands)


FULL = (
    Case("n=1024, k=b=8", 1024, 8, samples=16384, engine_samples=131072, chunk_size=8192),
    Case("n=7200, k=b=256", 7200, 256, samples=2048, engine_samples=16384, chunk_size=2048),
)
QUICK = (
    Case("n=1024, k=b=8", 1024, 8, samples=1024, engine_samples=8192, chunk_size=1024),
    Case("n=7200, k=b=256", 7200, 256, samples=128, engine_samples=1024, chunk_size=128),
)


def catalan_coefficients(bands: int) -> tuple[float, ...]:
    """``C(2j, j) / 4^j`` normalised to unit l2 norm (the usual BandMF starting point)."""
    values = [1.0]
    for j in range(1, bands):
        values.append(values[-1] * (2 * j - 1) / (2 * j))
    norm = math.sqrt(sum(v * v for v in values))
    return tuple(v / norm for v in values)


def build_model(case: Case) -> BMinSepLossModel:
    """Warm-start b-min-sep with b = k at rate p0 = 1/(2b) (the reference of the shares)."""
    b, p0 = case.bands, case.rate
    return BMinSepLossModel(
        coefficients=catalan_coefficients(case.bands),
        n_steps=case.n_steps,
        min_sep=b,
        probability=p0 / (1.0 - p0 * (b - 1)),
        warm_start=True,
    )


#: The name of the reference model (its rate is the denominator of ``share_of_b_min_sep``).
REFERENCE = "b_min_sep"
#: Expected batch size of the truncated models' public dataset (|D| = BATCH / p0).
BATCH = 64


def option_values(case: Case) -> dict[str, Any]:
    """The bench value of every scheme option ``compare`` does not fill, by option name: b = k,
    k_u = 4 examples per user with holding-set probability p0, |D| = 64 / p0 (expected batch
    64) truncated at B_max = 80 (about two standard deviations above it)."""
    return {
        "min_sep": case.bands,
        "max_user_examples": 4,
        "probability": case.rate,
        "dataset_size": round(BATCH / case.rate),
        "max_batch_size": BATCH + 16,
        "warm_start": True,
    }


@attrs.frozen
class Entry:
    """A loss model to time (``model``), or a registered scheme skipped with ``reason``."""

    label: str
    model: PrivacyLossModel | None
    reason: str = ""


def _declared(cls: type[SamplingScheme]) -> set[str]:
    """The options ``cls.from_rate`` takes: its own and, for a wrapper with a ``base`` option,
    those of the default base."""
    from minsep.framework.registries import schemes

    names = {p.name for p in cls.parameters()}
    for parameter in cls.parameters():
        if parameter.name == "base" and isinstance(parameter.default, str):
            names |= {p.name for p in schemes.get(parameter.default).parameters()}
    return names


def _option_sets(cls: type[SamplingScheme], case: Case) -> list[tuple[str, dict[str, Any]]]:
    """``(label, options)`` to try for one registered scheme at ``case``: its Monte Carlo rows
    of ``compare`` at the case's bands, else the bench values of the options it declares."""
    from minsep.framework.parameters import CompareContext

    name = cls.registered_name()
    context = CompareContext(
        n_steps=case.n_steps,
        rate=case.rate,
        bands=(case.bands,),
        min_seps={case.bands: (case.bands,)},
    )
    rows = [
        (variant.family or name, dict(variant.options))
        for variant in cls.compare_variants(context)
        if variant.bands == case.bands and variant.accountant in (None, "monte_carlo")
    ]
    if rows:
        return rows
    values = option_values(case)
    return [(name, {k: v for k, v in values.items() if k in _declared(cls)})]


def _loss_model(scheme: SamplingScheme, strategy: Any) -> PrivacyLossModel:
    """``scheme.loss_model(strategy)``, silencing only the warning of conjectured models (not
    through :mod:`minsep.testing`, which needs pytest: the bench runs on a user's install)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*conjecture", category=UserWarning)
        return scheme.loss_model(strategy)


#: The methods that make a loss model what it is: two models sharing all of them are benched once
#: (the families on the one loss-model base share ``draw`` and ``log_ratio``).
_MODEL_HOOKS = ("draw", "log_ratio", "participation_draw", "ratio")


def bench_models(case: Case) -> list[Entry]:
    """Every registered scheme's loss model at ``case`` (banded Toeplitz strategy with
    :func:`catalan_coefficients`), one per distinct set of :data:`_MODEL_HOOKS`, in registry
    order; schemes without one at this size come back with the reason."""
    from minsep.framework.registries import schemes, strategies

    banded: Any = strategies.get("banded_toeplitz")
    strategy = banded(coefficients=catalan_coefficients(case.bands))
    entries: list[Entry] = []
    seen: set[tuple[Any, ...]] = set()
    for name in schemes.names():
        cls = schemes.get(name)
        for label, options in _option_sets(cls, case):
            try:
                scheme = cls.from_rate(case.n_steps, case.rate, **options)
                model = _loss_model(scheme, strategy)
            except (ConfigurationError, NotAccountableError) as exc:
                entries.append(Entry(label, None, str(exc).splitlines()[0]))
                continue
            key = tuple(getattr(type(model), hook, None) for hook in _MODEL_HOOKS)
            if key in seen:
                continue
            seen.add(key)
            entries.append(Entry(label, model))
    return entries


__all__ = [
    "BATCH",
    "FULL",
    "QUICK",
    "REFERENCE",
    "Case",
    "Entry",
    "bench_models",
    "build_model",
    "catalan_coefficients",
    "option_values",
]
