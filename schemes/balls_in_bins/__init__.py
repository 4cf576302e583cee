"""The balls-in-bins family: sampler (:mod:`.scheme`) and Monte Carlo loss model (:mod:`.loss`,
imported by the accounting hook when it is called)."""

from minsep.schemes.balls_in_bins.scheme import BallsInBins

__all__ = ["BallsInBins"]
