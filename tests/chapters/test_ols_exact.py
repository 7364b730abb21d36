"""Least-squares verdicts off the paper's settings: intervals cover the exact values, and
verdicts agree with the verdicts the exact values give (issue 7, part 1)."""
from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from dsmlib.chapters.ols import run_figure3
from dsmlib.chapters.ols_claims import figure3_claims
from dsmlib.foundation.claims import exact_verdict, parse_band
from pins import assert_claim_pinned

#: The sweep is seeded and deterministic: every claim's verdict, value and interval at every
#: sweep point, recorded from one run (regenerate after a deliberate change of a claim; a
#: change no one meant is what this catches). Keys "eta,b,replace".
PINNED = json.loads(Path(__file__).with_name("ols_exact_pinned.json").read_text())

ETAS = [0.002, 0.0075, 0.013]
BATCHES = [5, 10]
REPLACE = [False, True]
STEPS = 250_000
#: Base statistics judged for coverage: independent across panels and sweep points.
BASE = ("ols.stationary_mean_exact", "ols.stationary_cov_exact", "ols.shape_vs_sigma")
#: P(Binomial(216, 0.01) >= 8) ~ 1e-3: the coverage test's false-failure rate.
MAX_MISSES = 7


@pytest.fixture(scope="module")
def sweep():
    out = {}
    for k, (eta, b, rep) in enumerate(itertools.product(ETAS, BATCHES, REPLACE)):
        results = run_figure3(eta=eta, batch_size=b, steps=STEPS, replace=rep, seed=0,
                              sgd_seed=100 + k)
        out[(eta, b, rep)] = figure3_claims(results)
    return out


def _resolvable(row: dict) -> bool:
    """The exact value lies more than two interval half-widths from both band edges."""
    lo, hi = parse_band(row["band"])
    half = (row["interval"][1] - row["interval"][0]) / 2
    return min(abs(row["exact"] - lo), abs(row["exact"] - hi)) > 2 * half


def test_intervals_cover_the_exact_values(sweep):
    misses, total = [], 0
    for point, claims in sweep.items():
        for c in claims:
            if c.id not in BASE:
                continue
            for row in c.details:
                if row.get("caveat"):
                    continue
                total += 1
                if not row["interval"][0] <= row["exact"] <= row["interval"][1]:
                    misses.append((point, c.id, row["case"], row["measured"], row["exact"]))
    assert total >= 200
    assert len(misses) <= MAX_MISSES, misses


def test_every_claim_carries_its_exact_value(sweep):
    for claims in sweep.values():
        for c in claims:
            assert c.exact is not None, c.id
            assert all("exact" in row for row in c.details), c.id


def test_verdicts_agree_with_the_exact_verdicts(sweep):
    for point, claims in sweep.items():
        for c in claims:
            exact = exact_verdict(c)
            assert exact in ("confirmed", "refuted"), (point, c.id)
            # never the opposite verdict
            assert {c.verdict, exact} != {"confirmed", "refuted"}, (point, c.id, c.measured)
            flagged = any(row.get("caveat") for row in c.details)
            if c.verdict != exact:
                assert c.verdict == "inconclusive", (point, c.id)
                assert flagged or not all(_resolvable(r) for r in c.details), \
                    (point, c.id, c.details)


def test_heavy_tails_are_flagged_beyond_the_fourth_moment_limit(sweep):
    """At eta = 0.013 panel f (eta_max ~ 0.014, eta_4 ~ 0.011) has no finite fourth moment."""
    claims = {c.id: c for c in sweep[(0.013, 5, False)]}
    rows = {r["case"]: r for r in claims["ols.stationary_cov_exact"].details}
    assert "fourth-moment limit" in rows["f"]["caveat"]
    assert claims["ols.stationary_cov_exact"].verdict == "inconclusive"
    rows = {r["case"]: r for r in claims["ols.stationary_cov_exact"].details}
    assert "caveat" not in rows["e"]


@pytest.mark.stored_values
def test_verdicts_and_values_are_pinned(sweep):
    """Verdicts exactly; values and intervals within 1e-3 of their SE (measured moves: 1.6e-6
    SE between an Intel Xeon and AMD EPYCs, 2.5e-9 SE under the kernel configurations of
    ``tests/reduced_simd.py``; ``tests/pins.py``)."""
    assert set(PINNED) == {f"{eta},{b},{rep}" for eta, b, rep in sweep}
    for (eta, b, rep), claims in sweep.items():
        pinned = PINNED[f"{eta},{b},{rep}"]
        got = {c.id: c for c in claims}
        assert set(got) == set(pinned), (eta, b, rep)
        for cid, (verdict, measured, interval) in pinned.items():
            assert_claim_pinned(got[cid], verdict, measured, interval, where=(eta, b, rep))
