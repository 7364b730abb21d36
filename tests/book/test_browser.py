"""The built site, every page, in a real headless Chromium (Debian's, driven by playwright).

Over every page of the smoke book, served from a local HTTP server: no request leaves the
site, no console error (the allow-list is empty), every plotly figure renders with titled axes,
math renders, and no display equation, table or code block overflows its column at 1400 px;
verdict tables also fit a phone. Every slider and drop-down changes its figure, and the two
controls of an explorer compose. The ledger's rows match the results JSON, and every internal
link resolves. If Chromium is missing the tests skip loudly, except under CI=true.
"""
from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import threading
import warnings
from pathlib import Path
from urllib.parse import urljoin, urlparse

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.browser]

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ALLOWED_CONSOLE: list[str] = []   # none: every console error fails the page


def site_pages(html: Path) -> list[str]:
    """Every page of the book (the root index.html only redirects to the introduction)."""
    return sorted(p.relative_to(html).as_posix() for p in html.rglob("*.html")
                  if "_static" not in p.parts
                  and p.relative_to(html).as_posix() not in ("search.html", "genindex.html",
                                                               "index.html"))


@pytest.fixture(scope="module")
def site(smoke_book):
    """The smoke book's site on a local HTTP server: (root dir, base URL)."""
    html = smoke_book / "_build" / "html"

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                          functools.partial(Quiet, directory=str(html)))
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield html, f"http://127.0.0.1:{srv.server_address[1]}/"
    srv.shutdown()


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        msg = ("\n" + "!" * 78 + "\n  Chromium is not installed: the browser tests are SKIPPED.\n"
               "  Install it with `apt-get install chromium` (make test tries to).\n" + "!" * 78)
        if os.environ.get("CI") == "true":
            pytest.fail("Chromium is required under CI=true" + msg)
        warnings.warn(msg)
        print(msg)
        pytest.skip("Chromium not installed")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"])
        yield b
        b.close()


def open_page(browser, base: str, path: str, width: int = 1400):
    """A page that aborts (and records) every request leaving ``base``."""
    page = browser.new_page(viewport={"width": width, "height": 1000})
    blocked, errors = [], []

    def route(r):
        if r.request.url.startswith(base) or r.request.url.startswith("data:"):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    page.goto(base + path, wait_until="load")
    if page.evaluate("document.querySelectorAll('script.dsm-plotly-data').length"):
        page.wait_for_function("document.documentElement.getAttribute('data-dsm-plotly')"
                               " === 'ready'", timeout=30_000)
    page.wait_for_timeout(800)   # MathJax and the equation fitting
    return page, blocked, errors


OVERFLOW_JS = """(phone) => {
  const main = document.querySelector('main') || document.body;
  const right = main.getBoundingClientRect().right;
  const sel = phone ? 'table.verdicts, table.cases'
                    : 'mjx-container[display="true"], table, div.highlight pre';
  return [...document.querySelectorAll(sel)].filter(el => el.offsetParent !== null)
    .filter(el => el.scrollWidth > el.clientWidth + 2 || el.getBoundingClientRect().right > right + 2)
    .map(el => el.tagName + '.' + (el.className || '').toString().slice(0, 40));
}"""

FIGURES_JS = """() => [...document.querySelectorAll('.js-plotly-plot')].map(gd => {
  const L = gd._fullLayout, used = new Set();
  (gd._fullData || []).forEach(t => { if (t.xaxis) used.add('xaxis' + t.xaxis.slice(1));
                                      if (t.yaxis) used.add('yaxis' + t.yaxis.slice(1)); });
  const untitled = [...used].filter(k => L[k] && !(L[k].title && L[k].title.text));
  return {traces: gd._fullData.length, untitled};
})"""


def test_every_page_is_offline_error_free_and_fits(browser, site):
    html, base = site
    pages = site_pages(html)
    assert {"book/intro.html", "book/ledger.html", "book/errata.html",
            "book/reproducibility.html"} <= set(pages)
    problems = {}
    for path in pages:
        page, blocked, errors = open_page(browser, base, path)
        bad = [e for e in errors if not any(a in e for a in ALLOWED_CONSOLE)]
        over = page.evaluate(OVERFLOW_JS, False)
        figs = page.evaluate(FIGURES_JS)
        empty = [f for f in figs if f["traces"] == 0 or f["untitled"]]
        math = page.evaluate("document.querySelectorAll('mjx-container').length")
        raw_math = page.evaluate("document.querySelector('main').innerText"
                                 ".match(/\\$[^$\\n]{1,80}\\$|\\\\\\(|\\\\frac|\\\\mathbb/g)")
        if blocked or bad or over or empty or raw_math or ("chapters/" in path and not math):
            problems[path] = dict(blocked=blocked, errors=bad, overflow=over, figures=empty,
                                  math=math, raw_math=raw_math)
        page.close()
    assert problems == {}, json.dumps(problems, indent=1)


def test_verdict_tables_fit_a_phone(browser, site):
    html, base = site
    for path in ["book/ledger.html", *[p for p in site_pages(html) if "chapters/" in p]]:
        page, _, _ = open_page(browser, base, path, width=390)
        assert page.evaluate(OVERFLOW_JS, True) == [], path
        page.close()


def test_every_explorer_control_changes_its_figure(browser, site):
    """Every slider step and every drop-down entry shows a different set of traces, and a
    drop-down change keeps the slider's position (the controls compose)."""
    html, base = site
    seen = 0
    for path in [p for p in site_pages(html) if "chapters/" in p]:
        page, blocked, errors = open_page(browser, base, path)
        n = page.evaluate("document.querySelectorAll('.js-plotly-plot').length")
        for k in range(n):
            gd = page.query_selector_all(".js-plotly-plot")[k]
            has_slider = page.evaluate("gd => (gd.layout.sliders || []).length > 0", gd)
            menus = page.evaluate("gd => (gd.layout.updatemenus || []).length", gd)
            if not (has_slider or menus):
                continue
            seen += 1
            gd.scroll_into_view_if_needed()
            vis = "gd => JSON.stringify(gd._fullData.map(t => t.visible === true))"
            before = page.evaluate(vis, gd)
            if has_slider:
                steps = page.evaluate("gd => gd.layout.sliders[0].steps.length", gd)
                assert gd.query_selector(".slider-rail-rect"), f"{path}: figure {k}'s slider is not drawn"
                rail = gd.query_selector(".slider-rail-rect").bounding_box()
                grip = gd.query_selector(".slider-grip-rect").bounding_box()
                page.mouse.move(grip["x"] + grip["width"] / 2, grip["y"] + grip["height"] / 2)
                page.mouse.down()
                for frac in (0.3, 0.6, 0.99):
                    page.mouse.move(rail["x"] + rail["width"] * frac, grip["y"] + grip["height"] / 2)
                page.mouse.up()
                page.wait_for_timeout(500)
                assert page.evaluate("gd => gd.layout.sliders[0].active", gd) == steps - 1, path
                after_slider = page.evaluate(vis, gd)
                assert after_slider != before, f"{path}: the slider did not change figure {k}"
                before = after_slider
            if menus:
                gd.query_selector(".updatemenu-header-group").click()
                page.wait_for_timeout(300)
                buttons = gd.query_selector_all(".updatemenu-dropdown-button")
                buttons[min(1, len(buttons) - 1)].click()
                page.wait_for_timeout(800)
                assert page.evaluate(vis, gd) != before, f"{path}: the menu did not change figure {k}"
                if has_slider and page.evaluate("gd => !!(gd.layout.meta && gd.layout.meta.dsm_grid)", gd):
                    assert page.evaluate("gd => gd.layout.sliders[0].active", gd) == steps - 1, \
                        f"{path}: the menu reset the slider of figure {k}"
        assert blocked == [] and errors == [], (path, blocked, errors)
        page.close()
    assert seen >= 4    # the explorers of ols, prop1, prop2, remark3_valley


def test_ledger_rows_match_the_results(smoke_book):
    html = (smoke_book / "_build" / "html" / "book" / "ledger.html").read_text().replace("<wbr>", "")
    ids = re.findall(r"<tr class='claim v-(\w+)'>.*?<code>([^<]+)</code>", html, re.S)
    shown = {cid: v for v, cid in ids}
    results = {}
    for f in (smoke_book / "results" / "smoke").glob("*.json"):
        for c in json.loads(f.read_text())["claims"]:
            results[c["id"]] = c["verdict"]
    assert shown == results


def test_internal_links_resolve(smoke_book):
    """Every href and src inside the site points at an existing file (anchors checked too)."""
    html = smoke_book / "_build" / "html"
    broken = []
    for page in html.rglob("*.html"):
        if "_static" in page.parts:
            continue
        text = page.read_text()
        for ref in re.findall(r'(?:href|src)="([^"]+)"', text):
            if re.match(r"^(https?:|mailto:|data:|javascript:|#$)", ref) or ref.startswith("//"):
                continue
            url = urlparse(urljoin(page.as_uri(), ref))
            target = Path(url.path)
            if not target.exists():
                broken.append((page.name, ref))
            elif url.fragment and target.suffix == ".html":
                if f'id="{url.fragment}"' not in target.read_text():
                    broken.append((page.name, ref))
    assert broken == []
