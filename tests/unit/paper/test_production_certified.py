"""paper/production_certified.py: the report assembles part 4 and the cost rows."""

from __future__ import annotations

from minsep.paper import production_certified as pc


def test_markdown_reports_the_certified_sigma_next_to_cyclic_poisson() -> None:
    part4 = {
        "result": {
            "sigma": 0.41,
            "proposal": {"order": 2, "support": 1.7e-5},
            "base_delta": 5e-9,
            "failure_probability": 1e-10,
            "samples": 100_000,
            "pilot_samples": 4_000,
            "candidates": [0.47, 0.43, 0.42, 0.41],
        },
        "wall_s": 600.0,
        "workers": 2,
    }
    cost = [
        {
            "setting": "production DP-SGD",
            "exact_epsilon": 10.0,
            "order": 2,
            "support_over_delta": 850.0,
            "plain_samples": 4.8e10,
            "plain_hours_projected": 4e4,
            "escort_samples": 60_000,
            "escort_wall_s": 90.0,
            "escort_certified": 10.15,
            "escort_within_2pct": True,
        }
    ]
    text = pc.markdown(part4, cost)
    assert "0.41" in text and "0.47" in text  # certified sigma and the paper's
    assert "cyclic Poisson" in text  # the exact PLD rows from production.py's outputs
    assert "production DP-SGD" in text and "4.8e+10" in text
