"""σ for a target (ε, δ) by the project's certified route, saying what it does on stderr.

1. The first answer: the best σ the quick deterministic bounds certify (Rényi-DP, the
   unamplified Gaussian; :mod:`minsep.framework.cli.first_answer`), printed at once.
2. The certified σ of the accountant asked for. ``"auto"`` tries the registered accountants in
   the project's order (exact PLD, Monte Carlo, Rényi DP, unamplified Gaussian) and moves on,
   saying why in one line, when one cannot account the pair or cannot answer (e.g. a Monte Carlo
   calibration whose proposal cannot run at these parameters). Landing on the unamplified
   Gaussian bound is said too: it is certified but credits no amplification by sampling.

Every σ returned is certified for (ε, δ) by the accountant named in the result; nothing falls
back silently.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any

from minsep.framework.cli.first_answer import first_answer
from minsep.framework.errors import MinsepError, NotAccountableError
from minsep.framework.interfaces import Accountant, SamplingScheme, Strategy
from minsep.framework.results import CalibrationResult
from minsep.framework.setup import AUTO, build_accountant, preference
from minsep.training.report import certificate_text

__all__ = ["UNAMPLIFIED", "calibrate", "stderr_lines"]

#: The accountant that credits no amplification (said aloud when ``auto`` lands on it).
UNAMPLIFIED = "gaussian"

#: Where progress lines go (one line each).
Say = Callable[[str], None]


def stderr_lines(text: str) -> None:
    """Print one ``minsep:`` line on stderr at once."""
    print(f"minsep: {text}", file=sys.stderr, flush=True)


def _candidates(name: str, options: Mapping[str, Any] | None) -> list[tuple[str, Accountant]]:
    names = list(preference()) if name == AUTO else [name]
    return [(n, build_accountant(n, options, strict=name != AUTO)) for n in names]


def calibrate(
    scheme: SamplingScheme,
    strategy: Strategy,
    *,
    epsilon: float,
    delta: float,
    accountant: str = AUTO,
    options: Mapping[str, Any] | None = None,
    say: Say = stderr_lines,
) -> CalibrationResult:
    """The certified σ for (ε, δ); raises the last accountant's error when none can answer."""
    candidates = _candidates(accountant, options)
    usable = []
    reasons = []
    for name, candidate in candidates:
        why = candidate.why_not(scheme, strategy)
        if why is None:
            usable.append((name, candidate))
        else:
            reasons.append(f"{name}: {why}")
    if not usable:
        raise NotAccountableError(
            f"no accountant can calibrate scheme {scheme.name!r} with strategy "
            f"{strategy.strategy_name!r} (" + "; ".join(reasons) + ")"
        )
    target = {"epsilon": epsilon, "delta": delta}
    early = first_answer("calibrate", scheme, strategy, target, usable[0][1])
    if early is not None:
        say(early.line())
    failure: MinsepError | None = None
    for position, (name, candidate) in enumerate(usable):
        if name == UNAMPLIFIED:
            say(
                "accountant 'gaussian': unamplified bound (no amplification by sampling is "
                "credited; sigma is certified but larger than an amplified accountant's)"
            )
        say(f"calibrating sigma for (epsilon={epsilon:g}, delta={delta:g}) with {name!r} ...")
        try:
            result = candidate.calibrate(scheme, strategy, epsilon, delta)
        except MinsepError as exc:
            failure = exc
            following = usable[position + 1][0] if position + 1 < len(usable) else None
            say(
                f"accountant {name!r} could not calibrate: {_first_line(exc)}"
                + (f"; trying {following!r}" if following else "")
            )
            continue
        say(certificate_text(result))
        return result
    assert failure is not None
    raise failure


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
