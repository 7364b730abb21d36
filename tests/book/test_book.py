"""The book end to end under the smoke profile: papermill execution, claims, the built site."""
from __future__ import annotations

import json
import re

import pytest
import yaml

from dsmlib.book.profiles import load_specs
from dsmlib.foundation.claims import VERDICTS
from helpers import ROOT

pytestmark = pytest.mark.slow


def test_toc_lists_every_notebook_in_book_order():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [c["file"] for part in toc["parts"] for c in part["chapters"]]
    chapters = [f.split("/")[-1] for f in files if f.startswith("book/chapters/")]
    assert chapters == list(load_specs(ROOT / "notebooks"))


def test_sources_have_parameters_cells_and_no_outputs():
    import jupytext
    for spec in load_specs(ROOT / "notebooks").values():
        nb = jupytext.read(spec.source)
        tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
        assert len(tagged) == 1, spec.name
        assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")


def test_every_notebook_wrote_measured_claims(smoke_book):
    for name in load_specs(smoke_book / "notebooks"):
        doc = json.loads((smoke_book / "results" / "smoke" / f"{name}.json").read_text())
        assert doc["notebook"] == name and doc["profile"] == "smoke" and doc["claims"]
        for c in doc["claims"]:
            assert c["verdict"] in VERDICTS
            assert c["interval"][0] <= c["measured"] <= c["interval"][1]


def test_ols_claims_present(smoke_book):
    doc = json.loads((smoke_book / "results" / "smoke" / "ols.json").read_text())
    ids = {c["id"] for c in doc["claims"]}
    assert {"ols.stationary_mean", "ols.stationary_cov_paper", "ols.span_vs_sigma2",
            "ols.span_vs_trace", "ols.shape_vs_sigma", "ols.noiseless_converges"} <= ids


def test_site_pages_exist_and_reference_only_local_scripts(smoke_book):
    html = smoke_book / "_build" / "html"
    for page in ["book/intro.html", "book/ledger.html", "book/chapters/ols.html"]:
        text = (html / page).read_text()
        srcs = re.findall(r'<script[^>]*\bsrc="([^"]+)"', text)
        assert srcs and not [s for s in srcs if re.match(r"^(https?:)?//", s)], (page, srcs)
    ols = (html / "book/chapters/ols.html").read_text()
    assert ols.count("plotly.min.js") == 1           # plotly.js once per page, not inlined
    assert "Plotly.newPlot" in ols
    assert "ols.stationary_cov_paper" in (html / "book/ledger.html").read_text()
    assert (html / "_static" / "mathjax" / "tex-mml-chtml.js").exists()


def test_executed_notebook_holds_no_widget_state(smoke_book):
    nb = json.loads((smoke_book / "book" / "chapters" / "ols.ipynb").read_text())
    assert "widgets" not in nb["metadata"]
