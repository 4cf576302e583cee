"""Which registered accountants can account a scheme, asked through the accountants' hooks.

``minsep list`` shows it beside each scheme. A scheme is probed at its own ``example()``
instance with two strategies: the identity (DP-SGD, 1 band) and the MSE-optimal banded
Toeplitz with as many bands as the example's min-sep allows (amplified BandMF needs bands <=
b). Each accountant, built with its defaults, answers through ``supports`` (its ``why_not``
hook); nothing here names a scheme or an accountant.
"""

from __future__ import annotations

from minsep.framework.interfaces import SamplingScheme
from minsep.framework.registries import accountants, schemes
from minsep.framework.setup import build_strategy

__all__ = ["coverage", "describe_coverage"]


def _bands(scheme: SamplingScheme) -> tuple[int, ...]:
    banded = min(scheme.min_separation, scheme.n_steps)
    return (1,) if banded <= 1 else (1, banded)


def coverage(scheme_name: str) -> dict[str, tuple[int, ...]]:
    """``{accountant: bands values it accounts}`` for the registered scheme's example, in the
    accountants' registration order; accountants that account neither strategy are left out.
    """
    scheme = schemes.get(scheme_name).example()
    probes = {k: build_strategy(scheme.n_steps, k) for k in _bands(scheme)}
    out: dict[str, tuple[int, ...]] = {}
    for entry in accountants.entries():
        accountant = entry.cls()
        able = tuple(k for k, strategy in probes.items() if accountant.supports(scheme, strategy))
        if able:
            out[entry.name] = able
    return out


def describe_coverage(scheme_name: str) -> str:
    """One line: the accountants of :func:`coverage`, qualified where they account only some
    strategies (e.g. ``pld (identity only)``)."""
    found = coverage(scheme_name)
    scheme = schemes.get(scheme_name).example()
    everything = _bands(scheme)
    parts = []
    for name, able in found.items():
        if able == everything:
            parts.append(name)
        elif able == (1,):
            parts.append(f"{name} (identity only)")
        else:
            parts.append(f"{name} (banded only)")
    return ", ".join(parts) if parts else "none registered"
