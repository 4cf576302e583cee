"""Scripts reproducing the paper's experiments; run as ``python -m paper.<name>``."""
