"""Page speed of the built site, in headless Chromium, from a local HTTP server.

For every page: the time until it is readable (first contentful paint) and until its figures
are interactive (the loader's ``data-dsm-plotly="ready"``), against the previous design timed
in the same run: the full plotly.js bundle (4.8 MB, from the installed ``plotly``) loaded by a
blocking ``<script>`` in the head of every page. The site itself serves plotly.js's cartesian
bundle (1.5 MB, ``book/_vendor/``) asynchronously.
Also the page's size. One JSON line per measurement: ``{"name", "ours_s", "baseline_s",
"ratio"}`` (plus ``"bytes"`` for sizes). Goals: readable in <= 1 s, figures interactive in
<= 2 s (reported for the first figure in reading order and for all of them), no page over
600 KB.

Uses ``_build/html`` (run ``make book`` first), or ``--site DIR``.
"""
from __future__ import annotations

import argparse
import functools
import http.server
import json
import re
import statistics
import sys
import threading
from pathlib import Path

from dsmlib.book.site.assets import full_plotly_bundle

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"


def serve(site: Path) -> str:
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                          functools.partial(Quiet, directory=str(site)))
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{srv.server_address[1]}/"


FULL = "plotly-full.min.js"   # the old design's bundle, served from the plotly package


def blocking_variant(html: str, depth: int) -> str:
    """The page as the old design served it: the full plotly.js in the head, blocking the
    first paint."""
    up = "../" * depth
    tag = f'<script src="{up}_static/{FULL}"></script>'
    return re.sub(r"<head>", "<head>" + tag, html, count=1)


def measure(browser, url: str, body: str | None, figures: bool) -> tuple[float, float | None]:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    if body is not None:
        page.route(url, lambda r: r.fulfill(status=200, content_type="text/html", body=body))
        page.route(f"**/_static/{FULL}", lambda r: r.fulfill(
            status=200, content_type="application/javascript", path=str(full_plotly_bundle())))
    page.goto(url, wait_until="load")
    fcp = page.evaluate("""() => new Promise(res => {
        const e = performance.getEntriesByName('first-contentful-paint');
        if (e.length) return res(e[0].startTime / 1000);
        new PerformanceObserver(l => res(l.getEntries()[0].startTime / 1000))
          .observe({type: 'paint', buffered: true});
    })""")
    first = ready = None
    if figures:
        page.wait_for_function("document.documentElement.getAttribute('data-dsm-plotly') === 'ready'",
                               timeout=60_000)
        ready = page.evaluate("performance.now() / 1000")
        first = page.evaluate("Math.min(...[...document.querySelectorAll('[data-dsm-drawn]')]"
                              ".map(d => +d.getAttribute('data-dsm-drawn')))")
    page.close()
    return fcp, first, ready


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--site", default=str(ROOT / "_build" / "html"))
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    site = Path(args.site)
    if not (site / "book" / "intro.html").exists():
        print(f"bench_pages: no built site at {site}: run `make book` first", file=sys.stderr)
        return 0
    from playwright.sync_api import sync_playwright
    base = serve(site)
    pages = sorted(p for p in site.rglob("*.html") if "_static" not in p.parts
                   and p.name not in ("search.html", "genindex.html", "index.html"))
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        for p in pages:
            rel = p.relative_to(site).as_posix()
            html = p.read_text()
            figures = "dsm-plotly-data" in html
            old = blocking_variant(html, rel.count("/"))
            ours = [measure(browser, base + rel, None, figures) for _ in range(args.repeats)]
            base_runs = [measure(browser, base + rel, old, figures) for _ in range(args.repeats)]
            for k, what in ((0, "readable"), (1, "first_figure_interactive"),
                            (2, "all_figures_interactive")):
                if k and not figures:
                    continue
                o = statistics.median(r[k] for r in ours)
                b = statistics.median(r[k] for r in base_runs)
                print(json.dumps({"name": f"page_{what}:{rel}", "ours_s": round(o, 3),
                                  "baseline_s": round(b, 3), "ratio": round(b / o, 2)}), flush=True)
            print(json.dumps({"name": f"page_bytes:{rel}", "ours_s": None, "baseline_s": None,
                              "ratio": None, "bytes": p.stat().st_size}), flush=True)
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
