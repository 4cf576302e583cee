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


def test_truncated_markdown_states_what_the_paper_tested() -> None:
    part6 = {
        "result": {
            "sigma": 0.4556,
            "monte_carlo": {
                "base_delta": 2.2e-9,
                "proposal": {
                    "method": "truncation_reduction",
                    "expected_truncations": 1.5e-5,
                    "participation": 1.8e-9,
                    "budget": 4.7e-9,
                },
            },
        },
        "wall_s": 90.0,
        "workers": 1,
        "cpu_s_this_process": 89.6,
    }
    text = pc.truncated_markdown(part6)
    assert "0.4556" in text and "4.7e-09" in text and "89.6" in text
    assert "{0.56, 0.5, 0.47, 0.44}" in text and "(0.44, 0.47]" in text
