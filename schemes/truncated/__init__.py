"""The truncated family: fixed-size batches padded with :data:`PADDING` (:mod:`.scheme`) and the
Monte Carlo loss model with public counts (:mod:`.loss`, imported by the hooks when called)."""

from minsep.schemes.truncated.scheme import PADDING, Truncated

__all__ = ["PADDING", "Truncated"]
