"""The Monte Carlo estimate-verify-release (EVR) engine (MATH.md §7, paper App. A)."""
