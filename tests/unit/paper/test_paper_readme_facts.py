"""paper/README.md's §7.4 figures are those of the committed outputs (paper/outputs/*.json and
*.csv): regenerating an output without updating the text fails here."""

from __future__ import annotations

import json
from pathlib import Path

from minsep.paper.common import OUTPUT_DIR, read_csv

README = (Path(__file__).resolve().parents[3] / "paper" / "README.md").read_text(encoding="utf-8")
TEXT = " ".join(README.split())  # line breaks do not matter


def _projection() -> dict[tuple[str, str], dict[str, float]]:
    data = json.loads((OUTPUT_DIR / "production.json").read_text(encoding="utf-8"))
    return {(r["scheme"], r["check"]): r for r in data["timing"]["cpu_projection"]}


def test_cpu_projection_matches_production_json() -> None:
    rows = _projection()
    for scheme, rate_text in (("256-min-sep, truncated", "{:.1f}"), ("256-min-sep", "{:.0f}")):
        half = rows[(scheme, "base delta = delta/2")]
        paper = rows[(scheme, "paper's 7.5e9 samples")]
        assert rate_text.format(half["measured_samples_per_core_s"]) in TEXT
        for row in (half, paper):
            assert f"{row['cpu_core_days']:,.0f}" in TEXT, (scheme, row["check"])


def test_certified_sigma_and_its_reductions_match_the_outputs() -> None:
    certify = json.loads(
        (OUTPUT_DIR / "production_certified_certify.json").read_text(encoding="utf-8")
    )
    sigma = certify["settings"]["part4"]["result"]["sigma"]
    assert f"σ = {sigma:.4f}" in TEXT
    pld = {
        r["configuration"]: float(r["sigma"]) for r in read_csv(OUTPUT_DIR / "production_pld.csv")
    }
    cyclic, sgd = pld["cyclic Poisson 256-BandMF"], pld["DP-SGD (Poisson)"]
    assert f"exact {cyclic:.4f}" in TEXT
    reduction, gap = (cyclic - sigma) / cyclic, (cyclic - sigma) / (cyclic - sgd)
    assert f"a {100 * reduction:.0f} % reduction, closing {100 * gap:.0f} % of the gap" in TEXT
    paper = 0.47  # the paper's certified sigma against the same exact one
    assert f"{100 * (cyclic - paper) / cyclic:.0f} % (not 25 %)" in TEXT
    assert f"{100 * (cyclic - paper) / (cyclic - sgd):.0f} % (not 60 %)" in TEXT


def test_certified_truncated_sigma_matches_the_outputs() -> None:
    truncated = json.loads(
        (OUTPUT_DIR / "production_certified_truncated.json").read_text(encoding="utf-8")
    )
    part = truncated["settings"]["part6"]
    assert f"σ = {part['result']['sigma']:.4f}" in TEXT
    proposal = part["result"]["monte_carlo"]["proposal"]
    assert proposal["method"] == "truncation_reduction"
    assert f"δ − {proposal['budget'] * 1e9:.2f}e-9" in TEXT
    assert f"{part['cpu_s_this_process']:.1f} CPU-s with one worker" in TEXT


def test_the_file_list_names_every_script() -> None:
    scripts = sorted(p.name for p in OUTPUT_DIR.parent.glob("*.py") if p.stem != "__init__")
    files = TEXT[TEXT.index("## Files") :]
    assert [s for s in scripts if f"`{s}`" not in files] == []
