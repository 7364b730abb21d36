"""The book end to end under the smoke profile: papermill execution, claims, the built site."""
from __future__ import annotations

import json
import re

import pytest

from dsmlib.book.profiles import load_specs
from dsmlib.foundation.claims import VERDICTS, combine_all, quantile, verdict

pytestmark = pytest.mark.slow


def _check_interval(c: dict, where: str) -> None:
    """The interval is ``measured +- q * se`` with q a two-sided 99 % Student-t quantile
    (q = t_dof when the claim records ``dof``; otherwise at least the normal 2.576 and at most
    t_1 = 63.7), and the verdict is the one the interval and band give."""
    lo, hi = c["interval"]
    expected = "inconclusive" if c.get("caveat") else verdict((lo, hi), c["band"])
    if not c.get("details"):     # a multi-case claim's verdict combines its cases (below)
        assert c["verdict"] == expected, where
    se = c.get("se")
    if se is None:
        return
    assert (lo + hi) / 2 == pytest.approx(c["measured"], rel=1e-9, abs=1e-12), where
    if se == 0:
        assert lo == hi == pytest.approx(c["measured"]), where
        return
    q = (hi - lo) / (2 * se)
    if c.get("dof") is not None:
        assert q == pytest.approx(quantile(c["dof"]), rel=1e-9), where
    else:
        # the ledger's 99 % level, or a joint (Bonferroni) level up to 1 - 0.01/100
        assert quantile() * (1 - 1e-9) <= q <= quantile(1, 1 - 0.01 / 100) * (1 + 1e-9), (where, q)


def test_every_notebook_wrote_measured_claims(smoke_book):
    """Every claim's interval is the stated 99 % interval around its estimate, recomputed
    from its standard error, and its verdict the one the interval and band give; a claim that
    must hold in every case combines its cases' verdicts, each recomputed the same way."""
    for name in load_specs(smoke_book / "notebooks"):
        doc = json.loads((smoke_book / "results" / "smoke" / f"{name}.json").read_text())
        assert doc["notebook"] == name and doc["profile"] == "smoke" and doc["claims"]
        for c in doc["claims"]:
            assert c["verdict"] in VERDICTS
            _check_interval(c, c["id"])
            if c["details"] and all("verdict" in d for d in c["details"]):
                cases = [d for d in c["details"] if "interval" in d and "band" in d]
                for d in cases:
                    want = "inconclusive" if d.get("caveat") else verdict(d["interval"], d["band"])
                    assert d["verdict"] == want, (c["id"], d)
                if len(cases) == len(c["details"]):
                    assert c["verdict"] == combine_all(d["verdict"] for d in cases), c["id"]


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
    # plotly.js is not inlined and never blocks: one async script on figure pages only
    assert ols.count("plotly.min.js") == 1 and "Plotly.newPlot" not in ols
    assert re.search(r'<script async id="dsm-plotly-js" src="[./]*_static/plotly.min.js">', ols)
    assert 'src="../../_static/dsm-plotly.js' in ols and 'class="dsm-plotly-data"' in ols
    assert "plotly.min.js" not in (html / "book/ledger.html").read_text()
    assert (html / "_static" / "plotly.min.js").exists()
    assert "ols.stationary_cov_paper" in (html / "book/ledger.html").read_text()
    assert (html / "_static" / "mathjax" / "tex-mml-chtml.js").exists()


def test_executed_notebook_holds_no_widget_state(smoke_book):
    nb = json.loads((smoke_book / "book" / "chapters" / "ols.ipynb").read_text())
    assert "widgets" not in nb["metadata"]


def test_chapters_carry_provenance_and_hide_parameters(smoke_book):
    """Each executed chapter records its provenance and content key, shows them under its
    title, and hides the parameters cells (which would expose the machine's paths)."""
    html = smoke_book / "_build" / "html"
    for name in load_specs(smoke_book / "notebooks"):
        nb = json.loads((smoke_book / "book" / "chapters" / f"{name}.ipynb").read_text())
        meta = nb["metadata"]["dsmlib"]
        prov = meta["provenance"]
        assert len(meta["key"]) == 64 and prov["profile"] == "smoke"
        assert {"cpu", "cpu_count", "gpu"} <= set(prov["hardware"])
        assert {"python", "numpy", "torch"} <= set(prov["versions"]) and prov["commit"]
        assert "results_dir" not in prov["parameters"]
        page = (html / "book" / "chapters" / f"{name}.html").read_text()
        assert "Executed under the <code>smoke</code> profile" in page
        assert "Parameters used" in page and str(smoke_book) not in page


def test_unchanged_notebooks_are_not_re_executed(smoke_book):
    import subprocess
    import sys
    before = {p: p.stat().st_mtime for p in (smoke_book / "book" / "chapters").glob("*.ipynb")}
    proc = subprocess.run([sys.executable, "-m", "dsmlib", "--root", str(smoke_book), "execute",
                           "--profile", "smoke", "--no-progress"], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stderr.count("up to date") == len(before)
    assert {p: p.stat().st_mtime for p in before} == before


def test_carried_notebooks_build_elsewhere_without_re_running(smoke_book, tmp_path):
    """The GPU workflow: execute on one machine, carry book/chapters and results/<profile>
    to a fresh copy, and build there without executing anything."""
    import shutil
    import subprocess
    import sys
    from helpers import copy_book
    (tmp_path / "elsewhere").mkdir()
    other = copy_book(tmp_path / "elsewhere")
    shutil.copytree(smoke_book / "book" / "chapters", other / "book" / "chapters")
    shutil.copytree(smoke_book / "results" / "smoke", other / "results" / "smoke")
    run = lambda *a: subprocess.run([sys.executable, "-m", "dsmlib", "--root", str(other), *a,  # noqa: E731
                                     "--profile", "smoke"], capture_output=True, text=True,
                                    timeout=900)
    proc = run("execute", "--no-progress")
    assert proc.returncode == 0 and "executing" not in proc.stderr, proc.stderr[-2000:]
    proc = run("build")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (other / "_build" / "html" / "book" / "ledger.html").exists()
