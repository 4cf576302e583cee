"""One row of a scheme comparison: a (scheme, strategy, min-sep) combination and its
accounting (:class:`ComparisonRow`)."""

from __future__ import annotations

from typing import Any

import attrs


@attrs.frozen(kw_only=True)
class ComparisonRow:
    """One (scheme, bands, min-sep) combination and its accounting.

    ``sigma``, ``epsilon``, ``mse`` and ``mse_ratio`` are None when the row could not be
    certified (``note`` says why). ``epsilon`` is the certified epsilon: the exact epsilon at
    ``sigma`` for exact accountants, the calibration target for Monte Carlo calibration (which
    holds except with ``failure_probability``, folded into delta by Algorithm 5).

    What each row was accounted at: ``delta`` is the target; ``base_delta`` is the delta a
    Monte Carlo row was actually verified at (docs/math.md §7: base delta < delta, the rest
    pays for the verification failure), with ``samples`` verification draws per direction;
    both are None for exact rows, which are accounted at ``delta`` itself.

    ``sigma_low`` (calibrated rows) is the lower end of the uncertainty of ``sigma``: the
    smallest noise multiplier meeting the target lies in ``[sigma_low, sigma]`` to what the
    accountant resolved. Exact accountants: the last sigma their search found failing the
    target (bisection bracket, width ``sigma_rtol``). Monte Carlo: the sigma the point estimate
    alone would select (``CalibrationResult.sigma_estimate``), so the gap is the price of
    certifying with ``samples`` draws at ``base_delta`` and shrinks as samples grow. ``mse_low``
    is the MSE at ``sigma_low``; two rows whose ``[mse_low, mse]`` intervals overlap are not
    ranked reliably at this sample count.
    """

    family: str
    label: str
    scheme: str
    bands: int | None
    min_sep: int
    accountant: str
    method: str
    delta: float
    sigma: float | None
    epsilon: float | None
    mse: float | None
    mse_ratio: float | None = None
    failure_probability: float = 0.0
    seconds: float = 0.0
    note: str = ""
    strategy: str = ""
    base_delta: float | None = None
    samples: int | None = None
    sigma_low: float | None = None
    mse_low: float | None = None

    @property
    def accounted_delta(self) -> float:
        """The delta this row was accounted at: the base delta of a Monte Carlo row, else
        the target delta."""
        return self.delta if self.base_delta is None else self.base_delta

    def to_dict(self) -> dict[str, Any]:
        """Plain data (JSON/CSV ready), with ``accounted_delta``."""
        return {**attrs.asdict(self), "accounted_delta": self.accounted_delta}
