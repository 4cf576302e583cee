"""A minimal DP trainer with BandMF noise and any scheme's sampler."""
