"""The version of a result's dict/JSON form, and the upgrade of older forms.

``"format"`` 1 (no tag): the Monte Carlo fields flat on the result (``samples``, ``seed``,
``base_delta``, ``evidence``, ...); 2: grouped in ``monte_carlo``
(:class:`~minsep.framework.evidence.MonteCarloEvidence`). :func:`upgrade` reads both; the
answer cache serves only the current one (:func:`~minsep.framework.montecarlo.trust.check_stored`).
"""

from __future__ import annotations

from typing import Any

from minsep.framework.errors import ConfigurationError
from minsep.framework.evidence import MONTE_CARLO_FIELDS

__all__ = ["RESULT_FORMAT", "result_format", "upgrade"]

#: The version of the dict/JSON form written now.
RESULT_FORMAT = 2


def result_format(data: dict[str, Any]) -> int:
    """The format version of a result's dict form (1 when untagged); ConfigurationError for
    a tag that is not a known version."""
    found = data.get("format", 1)
    if isinstance(found, bool) or not isinstance(found, int) or not 1 <= found <= RESULT_FORMAT:
        raise ConfigurationError(
            f"Result.format = {found!r} is invalid: must be an integer in [1, "
            f"{RESULT_FORMAT}] (a result written by a newer minsep?)",
            parameter="format",
        )
    return found


def upgrade(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` in the current format, without its ``format`` tag: format 1 held the Monte
    Carlo fields flat (``evidence`` for ``verification``); they move into ``monte_carlo``."""
    if result_format(data) == RESULT_FORMAT:
        data.pop("format", None)
        return data
    old = {name: name for name in MONTE_CARLO_FIELDS if name != "verification"}
    old["evidence"] = "verification"
    flat = {old[k]: data.pop(k) for k in list(data) if k in old}
    given = {k: value for k, value in flat.items() if value is not None}
    if given:
        data["monte_carlo"] = given
    return data
