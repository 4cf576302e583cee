"""The route and samples of a Monte Carlo question, chosen from the question (``--precision``).

For ``epsilon`` and ``calibrate`` with an accountant that can choose its own route (a
``route`` method: the Monte Carlo accountant, docs/rdp-escort.md §8), the samples are those
the cheaper sound route needs for the target precision: plain sampling, or importance sampling
from the escort where the model has one, the add direction needs no sampling and the escort's
estimated time (at its own measured rate) is lower. ``--proposal plain|escort`` fixes the
route; ``--max-seconds`` cuts the samples to fit, and a route that cannot fit is refused with
its estimate. When the route is plain (or the accountant has no ``route``) the plain choice of
:mod:`.sample_choice` applies, cut to ``--max-seconds`` as before.
"""

from __future__ import annotations

import argparse
import logging

from minsep.framework.errors import ConfigurationError
from minsep.framework.interfaces import Accountant, SamplingScheme, Strategy

__all__ = ["ROUTED_QUESTIONS", "choose_route"]

#: The questions whose route is chosen (those with a target delta).
ROUTED_QUESTIONS = ("epsilon", "calibrate")


def choose_route(
    args: argparse.Namespace,
    accountant: Accountant,
    scheme: SamplingScheme,
    strategy: Strategy,
    question: str,
    numbers: dict[str, float],
    precision: float,
) -> tuple[Accountant | None, str]:
    """``(accountant set to the escort route and its samples, the line stating them)``, or
    ``(None, why plain sampling)`` when the route is plain (the why is empty when the
    accountant does not choose routes, plain was asked for or the question has no target
    delta): :mod:`.sample_choice` then chooses the plain samples."""
    route_of = getattr(accountant, "route", None)
    if route_of is None or question not in ROUTED_QUESTIONS:
        return None, ""
    if getattr(accountant, "proposal", None) == "plain":
        return None, ""
    limit = getattr(args, "max_seconds", None)
    chosen, route = route_of(scheme, strategy, question, numbers, precision, limit)
    if route.proposal == "plain" and not route.refused:
        logging.getLogger("minsep.plan").info("plan: route: %s", route.reason)
        return None, route.reason
    if route.refused:
        raise ConfigurationError(
            f"--max-seconds = {limit:g} is too small: {route.reason} (or use more workers, or "
            "an exact or deterministic accountant)",
            parameter="max_seconds",
        )
    delta = float(numbers["delta"])
    estimate = "" if route.seconds is None else f", estimated {route.seconds:.3g} s"
    return chosen, (
        f"samples: {route.samples:,} per direction, chosen for delta = {delta:g} at "
        f"{precision:.3g} precision by the {route.proposal} route{estimate} ({route.reason}; "
        "--precision, --samples, --proposal)"
    )
