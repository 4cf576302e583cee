"""minsep: privacy amplification for DP training with correlated noise (BandMF).

The subpackages map to the repository's top-level folders: ``minsep.framework``,
``minsep.schemes``, ``minsep.strategies``, ``minsep.accountants``, ``minsep.training`` and
``minsep.paper``. ``minsep.testing`` (under ``minsep/``) holds the contract test bases that
plugins inherit.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("minsep")
except PackageNotFoundError:  # pragma: no cover - running from an uninstalled tree
    __version__ = "0+unknown"

__all__ = ["__version__"]
