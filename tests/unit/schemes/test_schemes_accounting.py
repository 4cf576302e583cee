"""The accounting hooks of the schemes: exact PLD routes, loss-model routes and refusals."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
import pytest
from dp_accounting import dp_event as ev

from minsep.framework.errors import ConfigurationError, NotAccountableError
from minsep.schemes import (
    BallsInBins,
    BMinSep,
    ConjectureWarning,
    CyclicPoisson,
    MultiAttribution,
    MultiAttributionParticipation,
    Poisson,
    Truncated,
    losses,
)


@attrs.frozen
class Coefficients:
    """Stand-in strategy: the hooks only read ``is_banded``, ``coefficients`` and ``bands``."""

    values: tuple[float, ...]

    @property
    def is_banded(self) -> bool:
        return True

    @property
    def coefficients(self) -> np.ndarray:
        return np.asarray(self.values)

    @property
    def bands(self) -> int:
        return len(self.values)


ONE = Coefficients((1.0,))
TWO = Coefficients((0.8, 0.6))
FOUR = Coefficients((0.5, 0.5, 0.5, 0.5))


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    """Replace each family's loss-model class by a recorder of (class name, constructor kwargs)."""
    calls: list[tuple[str, dict[str, Any]]] = []

    def model(name: str) -> Any:
        def build(**kwargs: Any) -> tuple[str, dict[str, Any]]:
            calls.append((name, kwargs))
            return (name, kwargs)

        return build

    homes = {
        "BMinSepLossModel": "b_min_sep",
        "BallsInBinsLossModel": "balls_in_bins",
        "MultiAttributionLossModel": "multi_attribution",
        "ConjecturedMultiAttributionLossModel": "multi_attribution",
        "TruncatedBMinSepLossModel": "truncated",
    }
    for name, family in homes.items():  # the hooks import the class from its module when called
        monkeypatch.setattr(f"minsep.schemes.{family}.loss.{name}", model(name))
    return calls


# -- exact PLD events --------------------------------------------------------------------------


def test_poisson_event() -> None:
    event = Poisson(n_steps=50, rate=0.01).dp_event(ONE, 1.3)  # type: ignore[arg-type]
    assert event == ev.SelfComposedDpEvent(
        ev.PoissonSampledDpEvent(0.01, ev.GaussianDpEvent(1.3)), 50
    )


def test_poisson_event_needs_one_band_and_positive_sigma() -> None:
    with pytest.raises(NotAccountableError, match="bands <= 1"):
        Poisson(n_steps=5, rate=0.1).dp_event(TWO, 1.0)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="sigma"):
        Poisson(n_steps=5, rate=0.1).dp_event(ONE, 0.0)  # type: ignore[arg-type]


def test_cyclic_poisson_event() -> None:
    scheme = CyclicPoisson(n_steps=10, rate=0.05, min_sep=4)
    event = scheme.dp_event(FOUR, 0.9)  # type: ignore[arg-type]
    assert event == ev.SelfComposedDpEvent(
        ev.PoissonSampledDpEvent(0.2, ev.GaussianDpEvent(0.9)), 3
    )
    with pytest.raises(NotAccountableError, match="min_sep = 2"):
        CyclicPoisson(n_steps=10, rate=0.05, min_sep=2).dp_event(FOUR, 1.0)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "scheme",
    [
        BMinSep(n_steps=10, rate=0.1, min_sep=2),
        BallsInBins(n_steps=10, cycle_length=4),
        MultiAttribution.example(),
    ],
)
def test_no_exact_event_elsewhere(scheme: Any) -> None:
    with pytest.raises(NotAccountableError):
        scheme.dp_event(ONE, 1.0)


def test_truncated_poisson_event() -> None:
    scheme = Truncated(base=Poisson(n_steps=20, rate=0.01), max_batch_size=15, dataset_size=1000)
    assert scheme.dp_event(ONE, 1.1) == ev.SelfComposedDpEvent(  # type: ignore[arg-type]
        ev.TruncatedSubsampledGaussianDpEvent(
            dataset_size=1000,
            sampling_probability=0.01,
            truncated_batch_size=15,
            noise_multiplier=1.1,
        ),
        20,
    )


def test_truncated_cyclic_poisson_event_uses_one_group() -> None:
    base = CyclicPoisson(n_steps=9, rate=0.01, min_sep=4)
    scheme = Truncated(base=base, max_batch_size=20, dataset_size=1000)
    assert scheme.dp_event(TWO, 0.8) == ev.SelfComposedDpEvent(  # type: ignore[arg-type]
        ev.TruncatedSubsampledGaussianDpEvent(
            dataset_size=250,
            sampling_probability=0.04,
            truncated_batch_size=20,
            noise_multiplier=0.8,
        ),
        3,
    )


def test_truncated_cyclic_poisson_needs_equal_groups() -> None:
    base = CyclicPoisson(n_steps=9, rate=0.01, min_sep=4)
    with pytest.raises(NotAccountableError, match="divisible by 4"):
        Truncated(base=base, max_batch_size=20, dataset_size=1001).dp_event(ONE, 1.0)  # type: ignore[arg-type]
    random = attrs.evolve(base, partition="random")
    with pytest.raises(NotAccountableError, match="partition"):
        Truncated(base=random, max_batch_size=20, dataset_size=1000).dp_event(ONE, 1.0)  # type: ignore[arg-type]


def test_truncated_without_route() -> None:
    scheme = Truncated(base=BallsInBins(n_steps=4, cycle_length=2), max_batch_size=5,
                       dataset_size=10)  # fmt: skip
    with pytest.raises(NotAccountableError, match="truncation"):
        scheme.dp_event(ONE, 1.0)  # type: ignore[arg-type]
    with pytest.raises(NotAccountableError, match="truncation"):
        scheme.loss_model(ONE)  # type: ignore[arg-type]


# -- Monte Carlo loss models -------------------------------------------------------------------


def test_b_min_sep_loss_model_arguments(recorded: list[tuple[str, dict[str, Any]]]) -> None:
    scheme = BMinSep(n_steps=30, rate=0.1, min_sep=2, warm_start=False)
    scheme.loss_model(TWO)  # type: ignore[arg-type]
    assert recorded == [
        (
            "BMinSepLossModel",
            {
                "coefficients": (0.8, 0.6),
                "n_steps": 30,
                "min_sep": 2,
                "probability": scheme.probability,
                "warm_start": False,
            },
        )
    ]
    with pytest.raises(NotAccountableError, match=r"4-band.*min_sep = 2"):
        scheme.loss_model(FOUR)  # type: ignore[arg-type]


def test_poisson_loss_model_is_b_equals_one(recorded: list[tuple[str, dict[str, Any]]]) -> None:
    Poisson(n_steps=7, rate=0.2).loss_model(ONE)  # type: ignore[arg-type]
    assert recorded[0][1] == {
        "coefficients": (1.0,),
        "n_steps": 7,
        "min_sep": 1,
        "probability": 0.2,
        "warm_start": False,
    }
    with pytest.raises(NotAccountableError):
        Poisson(n_steps=7, rate=0.2).loss_model(TWO)  # type: ignore[arg-type]


def test_balls_in_bins_loss_model_any_bands(recorded: list[tuple[str, dict[str, Any]]]) -> None:
    BallsInBins(n_steps=8, cycle_length=2).loss_model(FOUR)  # type: ignore[arg-type]
    assert recorded[0] == (
        "BallsInBinsLossModel",
        {"coefficients": (0.5, 0.5, 0.5, 0.5), "n_steps": 8, "cycle_length": 2},
    )


def test_cyclic_poisson_has_no_loss_model() -> None:
    with pytest.raises(NotAccountableError):
        CyclicPoisson(n_steps=8, rate=0.1, min_sep=2).loss_model(ONE)  # type: ignore[arg-type]


def test_multi_attribution_loss_models(recorded: list[tuple[str, dict[str, Any]]]) -> None:
    args = {"n_steps": 9, "rate": 0.05, "probability": 0.1, "min_sep": 2, "max_user_examples": 3}
    MultiAttribution(**args, burn_in=5).loss_model(TWO)  # type: ignore[arg-type]
    with pytest.warns(ConjectureWarning, match="conjecture"):
        MultiAttributionParticipation(**args).loss_model(TWO)  # type: ignore[arg-type]
    expected = {
        "coefficients": (0.8, 0.6),
        "n_steps": 9,
        "min_sep": 2,
        "probability": 0.1,
        "max_user_examples": 3,
    }
    assert recorded == [
        ("MultiAttributionLossModel", expected),
        ("ConjecturedMultiAttributionLossModel", expected),
    ]
    with pytest.raises(NotAccountableError, match="bands"):
        MultiAttribution(**args).loss_model(FOUR)  # type: ignore[arg-type]


def test_conjectured_flags() -> None:
    assert MultiAttributionParticipation.conjectured is True
    assert MultiAttribution.conjectured is False
    assert BMinSep.conjectured is False
    conj = MultiAttributionParticipation.example()
    assert Truncated(base=conj, max_batch_size=5, dataset_size=200).conjectured is True
    assert "CONJECTURED" in (MultiAttributionParticipation.__doc__ or "")


def test_truncated_b_min_sep_loss_model(recorded: list[tuple[str, dict[str, Any]]]) -> None:
    base = BMinSep(n_steps=12, rate=0.05, min_sep=3)
    Truncated(base=base, max_batch_size=40, dataset_size=1000).loss_model(TWO)  # type: ignore[arg-type]
    assert recorded[0] == (
        "TruncatedBMinSepLossModel",
        {
            "coefficients": (0.8, 0.6),
            "n_steps": 12,
            "min_sep": 3,
            "probability": base.probability,
            "warm_start": True,
            "dataset_size": 1000,
            "max_batch_size": 40,
        },
    )


def test_real_loss_models_are_built() -> None:
    model = BMinSep(n_steps=6, rate=0.1, min_sep=2).loss_model(TWO)  # type: ignore[arg-type]
    assert isinstance(model, losses.BMinSepLossModel)
    assert model.n_steps == 6
    bins = BallsInBins(n_steps=6, cycle_length=3).loss_model(TWO)  # type: ignore[arg-type]
    assert isinstance(bins, losses.BallsInBinsLossModel)
