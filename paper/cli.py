"""``minsep paper <experiment> [--quick]``: run one of the paper scripts from the CLI.

Each experiment is a module of this package exposing ``SCRIPT``, its
:class:`~minsep.paper.script.Script` (``add_arguments(parser)``, ``run(args) -> int``);
``minsep paper X ...`` is the same as ``python -m paper.X ...``.
"""

from __future__ import annotations

import argparse
import importlib

from minsep.framework.cli.command import Command

#: experiment name -> (module, one-line help).
EXPERIMENTS: dict[str, tuple[str, str]] = {
    "mse_comparison": (
        "minsep.paper.mse_comparison",
        "§7.1: best-MSE ratios b-min-sep / cyclic Poisson and / balls-in-bins (Fig. 2, 3)",
    ),
    "production": (
        "minsep.paper.production",
        "§7.4: production setting (n = 7200, 256-BandMF, epsilon = 10): PLD sigmas, Monte "
        "Carlo estimates, certification cost",
    ),
    "multi_attribution": (
        "minsep.paper.multi_attribution",
        "§7.3 analogue: user-level DP-SGD vs b-min-sep vs unamplified BandMF on a synthetic "
        "co-authorship graph",
    ),
}


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="experiment", metavar="EXPERIMENT", required=True)
    for name, (module, text) in EXPERIMENTS.items():
        child = sub.add_parser(name, help=text, description=text)
        importlib.import_module(module).SCRIPT.add_arguments(child)


def _run(args: argparse.Namespace) -> int:
    module = importlib.import_module(EXPERIMENTS[args.experiment][0])
    return int(module.SCRIPT.run(args))


command = Command(
    "paper",
    "reproduce the paper's experiments (mse_comparison, production, multi_attribution)",
    _add_arguments,
    _run,
    examples=(
        "minsep paper mse_comparison --quick",
        "minsep paper production --quick --output paper/outputs   # overwrite the committed",
    ),
)

__all__ = ["EXPERIMENTS", "command"]
