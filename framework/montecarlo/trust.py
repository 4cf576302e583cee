"""Checks a result read back (answer cache, ``Result.from_json``) against its own invariants.

A result that comes back from disk or from another program is data, not a computation: this
module refuses one whose numbers contradict each other, so that a corrupted or hand-edited
file cannot be served as a certificate (README "Trust model"). Every check is a necessary
condition of the routes that produced the result, stated here and in docs/math.md §7:

* every epsilon and delta answer: ``certified >= estimate`` (the routes release
  ``max(bound, estimate)``; deterministic routes release the estimate itself);
* every calibration: ``sigma_estimate <= sigma`` (the certified sigma is the more private);
* plain Monte Carlo verification (``method == "monte_carlo"``, no importance-sampling
  proposal), re-derived from the stated samples ``m``, base delta and failure probability:

  - Fact 4.2 (epsilon by a candidate ladder, delta, Algorithm 5): ``overall_delta(m,
    delta_b, candidates=R) <= delta`` and ``failure = verification_failure(m, delta_b, R)``;
  - betting (docs/math.md §7.2): ``beta = delta 2^(-k/4)`` for an integer ``k`` in
    ``[4, 160]`` and ``delta_u = (delta - beta) / (1 - beta) (1 - 1e-12)`` (the choices of
    :func:`~.betting.choose_failure`), so ``delta_u + beta (1 - delta_u) <= delta``;

* where the result keeps its verification evidence (``evidence``: the candidates or thresholds
  and the verification means, written by :mod:`.evr`), the certified value is recomputed
  from it by the verifier's own rule: the smallest accepted candidate (epsilon), the smallest
  threshold above the observed mean (delta), the KL upper confidence bounds of the curve's
  own estimates; for betting, a released point's observed mean must lie below ``delta_u``
  (by Jensen, ``ln W <= m ln(1 + lam (delta_u - mean))``, so a wealth ``>= 1/beta > 1``
  needs ``mean < delta_u``) and the certificate must be at least that point.

* Algorithm 5 (a calibration keeping ``deltas``, the verification mean of every sweep entry):
  the released sigma is at least the sweep entry down to which every mean is <= base delta.

A stated value may exceed the re-derived one (over-reporting is safe); below it by more than
:data:`RELATIVE` is refused. What this cannot catch: a forger who recomputes every field
consistently (README "Trust model").

An answer read back from the answer cache (:func:`check_stored`) must moreover be of the
current result format and, when it certifies anything by Monte Carlo, carry every piece of
evidence its certificate is re-derived from (:func:`evidence_problems`): without them the
checks above would have nothing to re-derive from, so a hand edit nulling them would pass.
Importance-sampling (escort) certificates keep no evidence these rules re-derive, so they
are never served from the cache.
"""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TypeVar, cast

from minsep.framework.errors import ConfigurationError

R = TypeVar("R")

__all__ = [
    "RELATIVE",
    "check",
    "check_question",
    "check_stored",
    "evidence_problems",
    "others_can_write",
    "problems",
]

#: Relative slack for floats recomputed by the same functions (libm and scipy versions).
RELATIVE = 1e-9


def check(result: Any) -> None:
    """Raise ConfigurationError naming the first invariant ``result`` breaks (module
    docstring)."""
    _raise(result, problems(result))


def check_stored(data: Any, kind: type[R]) -> R:
    """The ``kind`` result of a stored answer's dict form, refused (ConfigurationError) when
    it is of an older result format, breaks an invariant (:func:`check`) or certifies by
    Monte Carlo without the evidence to re-derive its certificate
    (:func:`evidence_problems`)."""
    from minsep.framework.result_format import RESULT_FORMAT, result_format

    found = result_format(data) if isinstance(data, dict) else RESULT_FORMAT
    if found != RESULT_FORMAT:
        raise ConfigurationError(
            f"{kind.__name__}.format = {found!r} is invalid: a stored answer must be of the "
            f"current result format {RESULT_FORMAT} (it would be re-derived from evidence "
            "that older formats do not all keep)",
            parameter="format",
        )
    result: R = cast(Any, kind).from_dict(data)
    _raise(result, evidence_problems(result))
    return result


def evidence_problems(result: Any) -> Iterator[tuple[str, str]]:
    """``(field, why)`` when ``result`` certifies something by Monte Carlo without the
    evidence its certificate is re-derived from (module docstring): the record, the level,
    the bound, and the verification evidence of the rule that certified it."""
    if result.method != "monte_carlo" or not _claims(result):
        return
    if result.monte_carlo is None:
        yield "monte_carlo", "a certified Monte Carlo answer must carry its evidence record"
        return
    if result.proposal is not None:
        yield "proposal", "an importance-sampling certificate keeps no re-derivable evidence"
        return
    for name in _NEEDED[result.kind]:
        if getattr(result, name) is None:
            yield name, "a certified Monte Carlo answer must state it (it is re-derived from it)"
            return
    rule = (result.evidence or {}).get("rule")
    wanted = _RULES[result.kind](result)
    if rule != wanted:
        yield "evidence", f"a certificate of rule {wanted!r} must keep that rule's evidence"
        return
    missing = [k for k in _EVIDENCE_KEYS[result.kind, wanted] if result.evidence.get(k) is None]
    if missing:
        yield "evidence", f"the {wanted!r} evidence must hold {missing}"


def _claims(result: Any) -> bool:
    """Whether ``result`` certifies anything (an uncertified answer claims nothing)."""
    if result.kind == "epsilon":
        return bool(math.isfinite(result.certified_epsilon))
    if result.kind == "delta":
        return bool(result.certified_delta < 1.0)
    if result.kind == "calibration":
        return bool(result.certified)
    return bool(result.kind == "curve" and min(result.certified_delta, default=1.0) < 1.0)


#: The evidence-record fields a certified plain Monte Carlo answer of each kind must state.
_NEEDED = {
    "epsilon": ("base_delta", "bound", "evidence"),
    "delta": ("base_delta", "evidence"),
    "calibration": ("base_delta", "evidence"),
    "curve": ("evidence",),
}
#: The rule whose evidence each kind's certificate is re-derived from.
_RULES: dict[str, Callable[[Any], str]] = {
    "epsilon": lambda result: str(result.bound),
    "delta": lambda result: "fact42",
    "calibration": lambda result: "algorithm5",
    "curve": lambda result: "kl",
}
#: The keys the evidence of each (kind, rule) must hold (not null).
_EVIDENCE_KEYS = {
    ("epsilon", "betting"): ("released", "verification_mean"),
    ("epsilon", "fact42"): ("declared", "candidates", "verification_means"),
    ("delta", "fact42"): ("thresholds", "verification_mean"),
    ("calibration", "algorithm5"): ("deltas",),
    ("curve", "kl"): (),
}


def check_question(result: Any, asked: Mapping[str, Any]) -> None:
    """Raise ConfigurationError when ``result`` answers another question than ``asked``, a
    mapping of result fields to the asked values (e.g. ``{"sigma": 1.0, "delta": 1e-3}``)."""
    _raise(
        result,
        (
            (name, f"the question asked {name} = {value!r}; this answer is for another")
            for name, value in asked.items()
            if getattr(result, name, None) != value
        ),
    )


def problems(result: Any) -> Iterator[tuple[str, str]]:
    """``(field, why)`` for every invariant ``result`` breaks (module docstring); evidence
    that cannot be read (missing keys, wrong types) is one of them."""
    try:
        yield from _CHECKS.get(result.kind, _nothing)(result)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        yield "evidence", f"cannot be read ({type(exc).__name__}: {exc})"


def _raise(result: Any, found: Iterable[tuple[str, str]]) -> None:
    for name, why in found:
        raise ConfigurationError(
            f"{type(result).__name__}.{name} = {getattr(result, name, None)!r} is invalid: {why}",
            parameter=name,
        )


def others_can_write(path: str | os.PathLike[str], what: str, fix: str = "") -> str | None:
    """None when only this user can write ``path`` (a folder or a file), else why another
    can, with the command that fixes it. Like ssh refusing a loose key file: whoever can
    write what is read back can plant ``what`` there (README "Trust model"). Not checked
    where there are no POSIX owners (Windows)."""
    if not hasattr(os, "getuid"):  # pragma: no cover - Windows
        return None
    try:
        info = os.stat(path)
    except OSError as exc:
        return f"cannot inspect {path}: {exc.strerror or exc}"
    mode, private = stat.S_IMODE(info.st_mode), 0o700 if stat.S_ISDIR(info.st_mode) else 0o600
    instead = f" ({fix})" if fix else ""
    if info.st_uid != os.getuid():
        return (
            f"{path} is owned by uid {info.st_uid}, not by you (uid {os.getuid()}), who could "
            f"plant {what} there: use one of your own{instead}"
        )
    loose = [who for who, bit in (("group", stat.S_IWGRP), ("others", stat.S_IWOTH)) if mode & bit]
    if loose:
        return (
            f"{path} is writable by {' and '.join(loose)} (mode {mode:04o}), who could plant "
            f"{what} there: run `chmod {private:o} {path}`"
        )
    return None


def _nothing(result: Any) -> Iterator[tuple[str, str]]:
    return iter(())


def _below(stated: float, floor: float) -> bool:
    """True when ``stated`` is below ``floor`` by more than the relative slack."""
    return stated < floor and (math.isinf(floor) or floor - stated > RELATIVE * abs(floor))


def _differs(stated: float, expected: float) -> bool:
    return abs(stated - expected) > RELATIVE * max(abs(expected), abs(stated))


def _plain_monte_carlo(result: Any) -> bool:
    return bool(result.method == "monte_carlo" and result.proposal is None and result.samples)


# -- epsilon --------------------------------------------------------------------------------


def _epsilon(result: Any) -> Iterator[tuple[str, str]]:
    if _below(result.certified_epsilon, result.epsilon):
        yield "certified_epsilon", f"must be >= the estimate epsilon = {result.epsilon!r}"
    if not _plain_monte_carlo(result) or result.base_delta is None or result.bound is None:
        return  # nothing stated to re-derive from (results written before these fields)
    rule = _EPSILON_RULES.get(result.bound)
    if rule is None:
        yield "bound", f"must be one of {sorted(_EPSILON_RULES)}"
        return
    yield from rule(result, result.evidence or {})


def _epsilon_fact42(result: Any, evidence: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """Fact 4.2 on a ladder of ``R`` candidates (:func:`~.evr.certify_epsilon`)."""
    declared = int(evidence.get("declared", 1))
    yield from _fact42_level(result, result.base_delta, result.delta, declared)
    if "candidates" not in evidence:
        return
    candidates = [float(c) for c in evidence["candidates"]]
    means = [float(x) for x in evidence["verification_means"]]
    if len(candidates) != len(means) or len(candidates) > declared:
        yield "evidence", f"needs one verification mean per candidate, at most {declared}"
        return
    accepted = [c for c, x in zip(candidates, means, strict=True) if x <= result.base_delta]
    released = max(accepted[0], result.epsilon) if accepted else math.inf
    if _below(result.certified_epsilon, released):
        yield (
            "certified_epsilon",
            (
                f"its own verification evidence releases {released!r} (the smallest candidate "
                f"whose verification mean is <= base delta {result.base_delta!r})"
            ),
        )


def _epsilon_betting(result: Any, evidence: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """The betting walk (:func:`~.evr.certify_epsilon` with ``bound="betting"``)."""
    beta, delta, level = result.failure_probability, result.delta, result.base_delta
    k = -4.0 * math.log2(beta / delta) if 0.0 < beta < delta else math.nan
    if not (4 - 1e-6 <= k <= 160 + 1e-6 and abs(k - round(k)) < 1e-6):
        yield (
            "failure_probability",
            (
                f"the betting bound uses beta = delta 2^(-k/4) for an integer k in [4, 160] "
                f"(delta = {delta!r})"
            ),
        )
        return
    if _differs(level, (delta - beta) / (1.0 - beta) * (1.0 - 1e-12)):
        yield (
            "base_delta",
            (
                f"the betting level is (delta - beta) / (1 - beta) (1 - 1e-12) with delta = "
                f"{delta!r} and beta = {beta!r}"
            ),
        )
    point = evidence.get("released")
    if point is None:
        return
    mean = float(evidence.get("verification_mean", math.inf))
    if not mean < level:
        yield (
            "evidence",
            (f"a released point needs a verification mean below the level {level!r}, got {mean!r}"),
        )
    if _below(result.certified_epsilon, float(point)):
        yield (
            "certified_epsilon",
            (f"its own verification evidence released the grid point {float(point)!r}"),
        )


_EPSILON_RULES: dict[str, Callable[[Any, Mapping[str, Any]], Iterator[tuple[str, str]]]] = {
    "fact42": _epsilon_fact42,
    "betting": _epsilon_betting,
}


def _fact42_level(
    result: Any, delta_b: float, delta: float, candidates: int
) -> Iterator[tuple[str, str]]:
    """``overall_delta(m, delta_b, R) <= delta`` and the stated failure probability equal to
    ``verification_failure(m, delta_b, R)`` (docs/math.md §7)."""
    from minsep.framework.montecarlo.bounds import (
        MIN_BASE_DELTA,
        overall_delta,
        verification_failure,
    )

    m = int(result.samples)
    if not MIN_BASE_DELTA <= delta_b < delta:
        yield "base_delta", f"must lie in [{MIN_BASE_DELTA!r}, delta = {delta!r})"
        return
    overall = overall_delta(m, delta_b, candidates=candidates)
    if _below(delta, overall):
        yield (
            "base_delta",
            (
                f"verifying at it with {m} samples and {candidates} candidate(s) certifies only "
                f"delta = {overall!r} > {delta!r} (Fact 4.2)"
            ),
        )
    failure = verification_failure(m, delta_b, candidates=candidates)
    if _differs(result.failure_probability, failure):
        yield (
            "failure_probability",
            (
                f"Fact 4.2 gives {failure!r} for {m} samples at base delta {delta_b!r} and "
                f"{candidates} candidate(s)"
            ),
        )


# -- delta ----------------------------------------------------------------------------------


def _delta(result: Any) -> Iterator[tuple[str, str]]:
    if _below(result.certified_delta, result.delta):
        yield "certified_delta", f"must be >= the estimate delta = {result.delta!r}"
    evidence = result.evidence or {}
    if not _plain_monte_carlo(result) or "thresholds" not in evidence:
        return
    from minsep.framework.montecarlo.bounds import overall_delta, verification_failure

    thresholds = sorted(float(t) for t in evidence["thresholds"])
    observed = float(evidence["verification_mean"])
    accepted = [t for t in thresholds if observed <= t]
    m, count = int(result.samples), len(thresholds)
    if not accepted:
        released, failure, base = 1.0, 0.0, None
    else:
        base = accepted[0]
        released = min(max(overall_delta(m, base, candidates=count), result.delta), 1.0)
        failure = verification_failure(m, base, candidates=count) if base < 1.0 else 0.0
    if _below(result.certified_delta, released):
        yield (
            "certified_delta",
            (
                f"its own verification evidence (mean {observed!r} against thresholds "
                f"{thresholds!r}, {m} samples) releases {released!r}"
            ),
        )
    if base != result.base_delta:
        yield "base_delta", f"its own verification evidence accepts threshold {base!r}"
    if _differs(result.failure_probability, failure):
        yield "failure_probability", f"Fact 4.2 gives {failure!r} at threshold {base!r}"


# -- calibration ----------------------------------------------------------------------------


def _calibration(result: Any) -> Iterator[tuple[str, str]]:
    if result.sigma_estimate is not None and _below(result.sigma, result.sigma_estimate):
        yield "sigma", f"must be >= the estimate sigma_estimate = {result.sigma_estimate!r}"
    if not _plain_monte_carlo(result) or not result.certified or result.base_delta is None:
        return
    yield from _fact42_level(result, result.base_delta, result.delta, 1)  # Algorithm 5: R = 1
    deltas = (result.evidence or {}).get("deltas")
    if deltas is None:
        return
    means, sweep = [float(d) for d in deltas], result.candidates
    if len(means) != len(sweep):
        yield "evidence", f"needs one verification mean per sweep entry ({len(sweep)})"
        return
    index = -1
    for i, observed in enumerate(means):
        if not observed <= result.base_delta:
            break
        index = i
    released = sweep[index] if index >= 0 else math.inf
    if _below(result.sigma, released):
        yield (
            "sigma",
            (
                f"its own verification evidence releases {released!r} (the sweep entry down to "
                f"which every verification mean is <= base delta {result.base_delta!r})"
            ),
        )


# -- curve ----------------------------------------------------------------------------------


def _curve(result: Any) -> Iterator[tuple[str, str]]:
    for g, (hat, upper) in enumerate(zip(result.delta, result.certified_delta, strict=True)):
        if _below(upper, hat):
            yield "certified_delta", f"entry {g} must be >= its estimate {hat!r}"
            return
    if (result.evidence or {}).get("rule") != "kl" or not result.samples:
        return
    from minsep.framework.montecarlo.bounds import kl_upper_confidence

    level = math.log(2 * len(result.epsilons) / result.failure_probability)
    floor = 1.0
    for g, (hat, upper) in enumerate(zip(result.delta, result.certified_delta, strict=True)):
        floor = min(floor, kl_upper_confidence(min(hat, 1.0), int(result.samples), level))
        if _below(upper, floor):
            yield (
                "certified_delta",
                (
                    f"entry {g} (epsilon {result.epsilons[g]!r}) is below {floor!r}, the KL upper "
                    f"confidence bound of its own estimate on {result.samples} samples at failure "
                    f"probability {result.failure_probability!r}"
                ),
            )
            return


_CHECKS: dict[str, Callable[[Any], Iterator[tuple[str, str]]]] = {
    "epsilon": _epsilon,
    "delta": _delta,
    "calibration": _calibration,
    "curve": _curve,
}
