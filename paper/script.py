"""Running one paper script: its clock and progress lines, its entry points (``python -m
paper.<name>`` and ``minsep paper <name>``) and the run record it writes beside its tables."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Generic, TypeVar

import attrs

from minsep.paper.options import EngineOptions, add_common_arguments, engine_options
from minsep.paper.output import fresh_output_dir, write_csv, write_metadata, write_text


@attrs.define
class Stopwatch:
    """Wall and CPU (this process) seconds since construction."""

    wall0: float = attrs.field(factory=time.perf_counter)
    cpu0: float = attrs.field(factory=time.process_time)

    @property
    def wall(self) -> float:
        """Wall seconds elapsed."""
        return time.perf_counter() - self.wall0

    @property
    def cpu(self) -> float:
        """CPU seconds of this process elapsed (worker processes not included)."""
        return time.process_time() - self.cpu0


@attrs.define
class Reporter:
    """One line on stderr per unit of work (only when enabled: default, a terminal)."""

    name: str
    enabled: bool
    clock: Stopwatch = attrs.field(factory=Stopwatch)

    def __call__(self, message: str) -> None:
        if self.enabled:
            print(f"[{self.name} {self.clock.wall:7.1f}s] {message}", file=sys.stderr, flush=True)


def run_script(
    args: argparse.Namespace,
    settings_from_args: Callable[[argparse.Namespace], tuple[Any, str]],
    run_experiment: Callable[..., dict[str, Path]],
    name: str = "run",
) -> int:
    """Run one script from parsed arguments; print its markdown tables and what it wrote
    (into ``--output-dir``, else a :func:`fresh_output_dir` named after ``name``)."""
    settings, mode = settings_from_args(args)
    output = args.output_dir
    if output is None:
        output = fresh_output_dir(name)
    written = run_experiment(
        settings, engine_options(args), output, plots=not args.no_plot, mode=mode
    )
    print(written["markdown"].read_text(encoding="utf-8"))
    print("wrote " + ", ".join(str(p) for p in written.values()))
    return 0


def script_main(
    name: str,
    doc: str | None,
    add_arguments: Callable[[argparse.ArgumentParser], None],
    run: Callable[[argparse.Namespace], int],
    argv: Sequence[str] | None,
) -> int:
    """``python -m paper.<name>``: parse ``argv`` with the script's options and run it."""
    parser = argparse.ArgumentParser(
        prog=f"python -m paper.{name}",
        description=doc,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))


@attrs.frozen
class ScriptRun:
    """One run of a script: where it writes (``<output_dir>/<name>*``), what it wrote so far
    (by key, in order), its engine options, mode, clock and progress lines."""

    name: str
    output_dir: Path
    engine: EngineOptions
    mode: str
    plots: bool
    clock: Stopwatch
    report: Reporter
    written: dict[str, Path] = attrs.field(factory=dict)

    def csv(self, key: str, columns: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> Path:
        """Write ``<name>_<key>.csv`` (:func:`~minsep.paper.output.write_csv`)."""
        path = write_csv(self.output_dir / f"{self.name}_{key}.csv", columns, rows)
        self.written[key] = path
        return path

    def markdown(self, text: str) -> Path:
        """Write the tables ``<name>.md`` (what the command line prints)."""
        path = write_text(self.output_dir / f"{self.name}.md", text)
        self.written["markdown"] = path
        return path

    def figure(self, draw: Callable[[Path], Path | None]) -> None:
        """Draw ``<name>.png`` by ``draw(path)`` unless figures are off; kept unless skipped
        (None: matplotlib is missing)."""
        if not self.plots:
            return
        figure = draw(self.output_dir / f"{self.name}.png")
        if figure is not None:
            self.written["figure"] = figure

    def record(self, settings: Any, *, facts: Mapping[str, Any], timing: Mapping[str, Any]) -> Path:
        """Write ``<name>.json`` (:func:`~minsep.paper.output.write_metadata`): the mode, the
        settings, the engine's deterministic part and ``facts``; the wall and CPU seconds so
        far and ``timing``."""
        path = write_metadata(
            self.output_dir / f"{self.name}.json",
            {"mode": self.mode, "settings": settings, "engine": self.engine.record(), **facts},
            {"wall_s": self.clock.wall, "cpu_s_main_process": self.clock.cpu, **timing},
        )
        self.written["metadata"] = path
        return path


S = TypeVar("S")


@attrs.frozen
class Script(Generic[S]):
    """One paper script from its parts: ``settings_from_args`` (the settings and the mode's
    name), ``experiment`` (computes and writes through a :class:`ScriptRun`) and
    ``grid_arguments`` (its own options besides the common ones, seeded by
    ``default_seed``); gives its ``run_experiment`` and its entry points."""

    name: str
    doc: str | None
    default_seed: int
    settings_from_args: Callable[[argparse.Namespace], tuple[S, str]]
    experiment: Callable[[S, ScriptRun], None]
    grid_arguments: Callable[[argparse.ArgumentParser], None] | None = None

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """The common options (:func:`~minsep.paper.options.add_common_arguments`), then the
        script's own."""
        add_common_arguments(parser, self.default_seed)
        if self.grid_arguments is not None:
            self.grid_arguments(parser)

    def run_experiment(
        self,
        settings: S,
        engine: EngineOptions,
        output_dir: Path,
        *,
        plots: bool = True,
        mode: str = "custom",
    ) -> dict[str, Path]:
        """Run the experiment with ``settings``, writing into ``output_dir`` (the figure only
        with ``plots``; ``mode`` is recorded); returns the paths written, by key."""
        clock = Stopwatch()
        job = ScriptRun(
            self.name,
            output_dir,
            engine,
            mode,
            plots,
            clock,
            Reporter(self.name, engine.progress, clock),
        )
        self.experiment(settings, job)
        return job.written

    def run(self, args: argparse.Namespace) -> int:
        """Run from parsed arguments; prints the markdown tables."""
        return run_script(args, self.settings_from_args, self.run_experiment, self.name)

    def main(self, argv: Sequence[str] | None = None) -> int:
        """``python -m paper.<name>``."""
        return script_main(self.name, self.doc, self.add_arguments, self.run, argv)


def mean_seconds(seconds: Sequence[float]) -> float:
    """The mean of ``seconds`` (NaN when empty: nothing of that kind ran)."""
    return sum(seconds) / len(seconds) if seconds else float("nan")


__all__ = [
    "Reporter",
    "Script",
    "ScriptRun",
    "Stopwatch",
    "mean_seconds",
    "run_script",
    "script_main",
]
