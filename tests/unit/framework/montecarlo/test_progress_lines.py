"""Plain progress lines for non-terminal stderr (framework/montecarlo/progress.py)."""

from __future__ import annotations

import io

from minsep.framework.montecarlo import EngineConfig, sample
from minsep.framework.montecarlo.progress import LineProgress, progress_bar
from tests.unit.montecarlo_toys import GaussianToy


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _run(steps: list[tuple[float, int]], **options: float) -> list[str]:
    clock, out = FakeClock(), io.StringIO()
    with LineProgress(1000, "verify", stream=out, clock=clock, **options) as bar:
        for now, amount in steps:
            clock.now = now
            bar.update(amount)
    return out.getvalue().splitlines()


def test_a_line_per_tenth_then_a_closing_line() -> None:
    lines = _run([(10.0 * i, 100) for i in range(1, 11)])
    assert len(lines) == 10  # 10%..90% and the closing line
    assert lines[0] == ("minsep: verify: 10% 100/1,000 samples, 10/s, 10 s elapsed, ETA 1.5 min")
    assert lines[-1].endswith("1.67 min elapsed, done")
    assert all("\r" not in line for line in lines)


def test_lines_are_rate_limited_but_never_silent_for_long() -> None:
    # ten tenths within one second: one line (min_interval 5 s), then the closing one
    assert len(_run([(0.1 * i, 100) for i in range(1, 11)])) == 2
    # one slow tenth: a line every max_interval seconds even without progress
    lines = _run([(31.0, 1), (62.0, 1), (93.0, 1)])
    assert [line.split(": ")[2].split()[0] for line in lines] == ["0%"] * 4  # and the closing line


def test_delay_keeps_short_stages_silent() -> None:
    assert _run([(1.0, 500), (2.0, 500)], delay=10.0) == []
    assert len(_run([(11.0, 500), (12.0, 500)], delay=10.0)) == 2


def test_engine_prints_lines_when_asked_on_a_pipe(capsys) -> None:  # type: ignore[no-untyped-def]
    model = GaussianToy()
    sample(model, [1.0], n_samples=4096, seed=3, config=EngineConfig(chunk_size=512, progress=True))
    err = capsys.readouterr().err
    assert "minsep: sampling:" in err and err.rstrip().endswith("done")
    assert "\r" not in err
    sample(
        model, [1.0], n_samples=4096, seed=3, config=EngineConfig(chunk_size=512, progress=False)
    )
    assert capsys.readouterr().err == ""


def test_default_is_silent_for_quick_stages_off_a_terminal(capsys) -> None:  # type: ignore[no-untyped-def]
    bar = progress_bar(10, None, "pilot")
    assert isinstance(bar, LineProgress) and bar.delay > 0
    model = GaussianToy()
    sample(model, [1.0], n_samples=2048, seed=3, config=EngineConfig(chunk_size=512))
    assert capsys.readouterr().err == ""
