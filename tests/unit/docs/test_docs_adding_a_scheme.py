"""Run the code of docs/adding-a-scheme.md and check the scheme it builds."""

from __future__ import annotations

import inspect
import re
import shlex
from collections.abc import Iterator
from typing import Any

import attrs
import numpy as np
import pytest

from minsep.framework.backend import numpy_backend
from minsep.framework.cli.main import main
from minsep.framework.errors import ConfigurationError, InfeasibleError, NotAccountableError
from minsep.framework.interfaces import Direction
from minsep.framework.registries import schemes
from minsep.schemes.kernels.jit import NUMBA_AVAILABLE
from minsep.testing import LossModelContract, assert_loss_model_matches_bruteforce
from tests.contracts.base import SchemeContract
from tests.unit.docs.doc_pages import DOCS, executed, python_blocks

DOC = DOCS / "adding-a-scheme.md"
NAME = "random_reshuffling"


@pytest.fixture
def walkthrough() -> Iterator[dict[str, Any]]:
    """The namespace after executing every Python block of the page, in order."""
    with executed(DOC, "docs_adding_a_scheme", lambda: schemes.unregister(NAME)) as namespace:
        yield namespace


def test_page_has_the_walkthrough_blocks() -> None:
    blocks = python_blocks(DOC)
    assert len(blocks) == 6
    assert "@schemes.register" in blocks[0] and "class TestRandomReshuffling" in blocks[1]
    assert "class ReshufflingLossModel" in blocks[3]
    assert "assert_mc_agrees_with_exact(" in blocks[4]
    assert "class PoissonLossModel(BlockLossModel)" in blocks[5]


def test_a_kernel_table_gives_the_compiled_path(walkthrough: dict[str, Any]) -> None:
    """The page's kernel-table model: its numba entry runs on the numba set and gives the array
    code's losses from the same stream; without numba it runs the array code with a note."""
    model = walkthrough["PoissonLossModel"](n_steps=12, probability=0.3)
    array = numpy_backend("array")
    assert model.kernel_set(array) == "array" and model.kernel_notes(array)
    y = np.random.default_rng(2).normal(0.4, 1.2, size=(9, 12))
    exact = np.sum(np.log(0.7 + 0.3 * np.exp((y - 0.5) / 0.8**2)), axis=1)
    np.testing.assert_allclose(model.log_ratio_at(y, 0.8, np, kernels="array"), exact)
    if not NUMBA_AVAILABLE:
        return
    fast = numpy_backend("numba")
    assert model.kernel_set(fast) == "numba" and model.kernel_notes(fast) == ()
    np.testing.assert_allclose(model.log_ratio_at(y, 0.8, np, kernels="numba"), exact)
    for direction in Direction:
        slow = model.privacy_losses(300, direction, array.rng(np.random.SeedSequence(1)), array,
                                    (0.7, 2.0))  # fmt: skip
        quick = model.privacy_losses(300, direction, fast.rng(np.random.SeedSequence(1)), fast,
                                     (0.7, 2.0))  # fmt: skip
        np.testing.assert_allclose(quick, slow, rtol=1e-12, atol=1e-12)


def test_scheme_is_registered_by_name(walkthrough: dict[str, Any]) -> None:
    cls = walkthrough["RandomReshuffling"]
    assert schemes.get(NAME) is cls
    assert NAME in schemes.names()


def test_scheme_passes_the_contract(walkthrough: dict[str, Any]) -> None:
    contract = walkthrough["TestRandomReshuffling"]()
    assert isinstance(contract, SchemeContract)
    scheme = walkthrough["RandomReshuffling"].example()
    checks = [name for name in dir(SchemeContract) if name.startswith("test_")]
    assert len(checks) >= 5
    for name in checks:
        getattr(contract, name)(scheme)


def test_from_rate_and_construction_errors(walkthrough: dict[str, Any]) -> None:
    cls = walkthrough["RandomReshuffling"]
    assert cls.from_rate(12, 1 / 3).epoch_length == 3
    with pytest.raises(InfeasibleError, match=r"rate = 0\.3 is infeasible"):
        cls.from_rate(12, 0.3)
    with pytest.raises(ConfigurationError, match="min_sep"):
        cls.from_rate(12, 0.25, min_sep=2)
    with pytest.raises(ConfigurationError, match="epoch_length"):
        cls(n_steps=3, epoch_length=0)


def test_each_epoch_is_a_fresh_partition(walkthrough: dict[str, Any]) -> None:
    scheme = walkthrough["RandomReshuffling"](n_steps=9, epoch_length=3)
    batches = list(scheme.batches(30, np.random.default_rng(1)))
    epochs = [np.sort(np.concatenate(batches[i : i + 3])) for i in (0, 3, 6)]
    for epoch in epochs:
        np.testing.assert_array_equal(epoch, np.arange(30))
    assert not np.array_equal(batches[0], batches[3])
    assert scheme.max_participations == 3 and scheme.min_separation == 1


def test_dp_event_refuses_banded_strategies(walkthrough: dict[str, Any]) -> None:
    @attrs.frozen
    class TwoBands:
        bands: int = 2

    scheme = walkthrough["RandomReshuffling"].example()
    with pytest.raises(NotAccountableError, match="one band"):
        scheme.dp_event(TwoBands(), 1.0)


def shell_commands() -> list[list[str]]:
    """The ``minsep ...`` lines of the page's bash blocks, as argument lists."""
    blocks = re.findall(r"```bash\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.DOTALL)
    lines = [line.strip() for block in blocks for line in block.splitlines()]
    return [shlex.split(line)[1:] for line in lines if line.startswith("minsep ")]


def test_the_cli_and_compare_work_with_no_other_edit(
    walkthrough: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    commands = shell_commands()
    assert [c[0] for c in commands] == ["list", "epsilon", "calibrate", "compare"]
    outputs = {}
    for argv in commands:
        assert main(argv) == 0, argv
        outputs[argv[0]] = capsys.readouterr().out
    assert NAME in outputs["list"]
    assert "accountant           pld (exact)" in outputs["epsilon"]
    assert "sigma (certified)" in outputs["calibrate"]
    rows = [line for line in outputs["compare"].splitlines() if line.startswith(NAME)]
    assert len(rows) == 2  # one band (exact PLD) and two bands (unamplified Gaussian)
    assert rows[0].split()[-1] == "pld" and rows[1].split()[-1] == "gaussian"


def test_an_option_the_accountant_does_not_take_is_refused(
    walkthrough: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [*shell_commands()[1], "--samples", "100"]
    assert main(argv) == 2
    assert "does not take the option(s) --samples" in capsys.readouterr().err


def test_the_loss_model_passes_the_contract(walkthrough: dict[str, Any]) -> None:
    contract = walkthrough["TestReshufflingLossModel"]()
    assert isinstance(contract, LossModelContract)
    model = walkthrough["RandomReshuffling"].example().loss_model(walkthrough["identity"])
    checks = [name for name in dir(LossModelContract) if name.startswith("test_")]
    assert len(checks) >= 4
    fixtures = {"loss_model": model, "zero_out_oracle": None}  # the page gives no oracle
    for name in checks:
        check = getattr(contract, name)
        try:
            check(**{key: fixtures[key] for key in inspect.signature(check).parameters})
        except pytest.skip.Exception:
            assert name == "test_log_ratio_matches_the_zero_out_oracle"


def test_the_brute_force_check_catches_a_wrong_model(walkthrough: dict[str, Any]) -> None:
    cls, oracle = walkthrough["RandomReshuffling"], walkthrough["enumerated_log_ratio"]
    transcript = walkthrough["ReshufflingTranscript"]
    model = cls(n_steps=6, epoch_length=4).loss_model(walkthrough["identity"])
    wrong = cls(n_steps=6, epoch_length=3)  # another epoch length: another mixture
    outputs = np.random.default_rng(1).normal(0.0, 1.0, size=(5, 6))
    with pytest.raises(AssertionError, match="ln P/Q"):
        assert_loss_model_matches_bruteforce(
            lambda y, s: model.log_ratio(transcript(Direction.ADD, None, y / s), s),
            lambda row, s: oracle(wrong, row, s),
            outputs,
            sigmas=(1.0,),
        )


def test_the_loss_model_refuses_bands(walkthrough: dict[str, Any]) -> None:
    @attrs.frozen
    class TwoBands:
        bands: int = 2

    with pytest.raises(NotAccountableError, match="one band"):
        walkthrough["RandomReshuffling"].example().loss_model(TwoBands())
