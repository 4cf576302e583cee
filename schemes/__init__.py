"""Sampling schemes: one module per family, each with its batch sampler and accounting hook.

Importing this package imports every scheme module, which registers it in
:data:`minsep.framework.registries.schemes`.
"""

from minsep.framework.registries import schemes as registry

__all__ = ["registry"]
