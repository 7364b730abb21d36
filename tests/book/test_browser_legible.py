"""Every text of the site legible, in both colour modes, and none of it markup (issue 71,
items 1 and 2), on every page of the smoke book in headless Chromium at 1280 px, with every
``<details>`` opened.

- **Contrast.** Each visible text's colour against its effective background (the background
  colours of the element and its ancestors composited, the text's colour times the opacities
  above it) reaches WCAG's 4.5:1, or 3:1 for large text (24 px, or 18.66 px bold), in the
  light and the dark mode of the theme (``html[data-theme]``). A plotly figure's texts are
  measured against its own paper. In dark mode the ledger's "≠ differs" rows were cream under
  light text (1.38:1), its "book" and "identity" tags 1.28 and 1.41:1, grey intervals 2.51:1, and
  a stale reference's cells, greyed by opacity, were 2.3:1 in light mode too.
- **No markup shown as text.** The text outside code and math holds no backtick, no
  ``$...$``, no ``**bold**``, no MyST role or directive, no Markdown link and no HTML tag: a
  reference's captions read "(`gpu` reference.)" and its headings "$G$ over the epochs".

Each check is also run on a page with planted faults, so that it is seen to find what it looks
for. One page load per page (:func:`seen`)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsmlib.book.site.subpages import toc_subpages
from helpers import ROOT, open_page, served

pytestmark = [pytest.mark.slow, pytest.mark.browser]

MODES = ("light", "dark")
WIDTH = 1280
NORMAL, LARGE = 4.5, 3.0           # WCAG AA: normal text, large text
#: Pages that must be among those measured (the others are found in the built site).
KNOWN = {"book/intro.html", "book/ledger.html", "book/errata.html", "book/reproducibility.html",
         "book/chapters/sec5_distillation.html", "search.html",
         *(f"book/chapters/{c}/{p}.html" for c, ps in toc_subpages(ROOT).items() for p in ps)}


def site_pages(html: Path) -> list[str]:
    """Every page a reader can open (the root index.html only redirects; genindex is empty)."""
    return sorted(p.relative_to(html).as_posix() for p in html.rglob("*.html")
                  if "_static" not in p.parts
                  and p.relative_to(html).as_posix() not in ("genindex.html", "index.html"))


@pytest.fixture(scope="module")
def site(smoke_book):
    """The smoke book's site on a local HTTP server: (root dir, base URL)."""
    html = smoke_book / "_build" / "html"
    with served(html) as base:
        yield html, base


#: Opens every <details>, turns CSS transitions off (a colour mid-transition is neither mode's)
#: and puts the page in the theme's ``mode``, then waits two frames for the styles.
MODE_JS = """async (mode) => {
  if (!document.getElementById('dsm-no-transitions')) {
    const s = document.createElement('style');
    s.id = 'dsm-no-transitions';
    s.textContent = '*, *::before, *::after { transition: none !important; animation: none !important; }';
    document.head.append(s);
  }
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  document.documentElement.dataset.theme = mode;
  document.documentElement.dataset.mode = mode;
  await new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)));
}"""

#: Every visible text of the page below 4.5:1 against its effective background: [text, ratio,
#: large, colour, background, where].
CONTRAST_JS = """() => {
  const probe = document.createElement('span');
  document.body.append(probe);
  const rgba = s => {                      // any CSS colour as [r, g, b, a]
    probe.style.color = '';
    probe.style.color = s || 'transparent';
    const m = getComputedStyle(probe).color.match(/rgba?\\(([^)]+)\\)/);
    if (!m) return [0, 0, 0, 0];
    const v = m[1].split(/[ ,\\/]+/).filter(Boolean).map(Number);
    return [v[0], v[1], v[2], v.length > 3 ? v[3] : 1];
  };
  const over = (top, under) => [0, 1, 2].map(i => top[i] * top[3] + under[i] * (1 - top[3])).concat(1);
  const lum = c => { const f = x => { x /= 255; return x <= 0.03928 ? x / 12.92 : Math.pow((x + 0.055) / 1.055, 2.4); };
                     return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
  const ratio = (a, b) => { const x = lum(a), y = lum(b); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
  const page = over(rgba(getComputedStyle(document.body).backgroundColor),
                    over(rgba(getComputedStyle(document.documentElement).backgroundColor), [255, 255, 255, 1]));
  const background = el => {                // the opaque colour behind el's text
    const layers = [];
    for (let e = el; e && e !== document.body; e = e.parentElement) {
      const c = rgba(getComputedStyle(e).backgroundColor);
      if (c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
    }
    return layers.reverse().reduce((under, top) => over(top, under), page);
  };
  const opacity = el => { let o = 1; for (let e = el; e; e = e.parentElement) o *= Number(getComputedStyle(e).opacity); return o; };
  const where = el => (el.tagName.toLowerCase() + '.' + (el.getAttribute('class') || '').split(' ')[0]
                       + ' < ' + (el.parentElement ? el.parentElement.tagName.toLowerCase() + '.'
                       + (el.parentElement.getAttribute('class') || '').split(' ')[0] : '')).slice(0, 80);
  const hidden = el => {                     // clipped away (screen-reader-only text)
    for (let e = el; e && e !== document.body; e = e.parentElement) {
      const s = getComputedStyle(e), r = e.getBoundingClientRect();
      if ((s.clip && s.clip !== 'auto') || /inset\\(50%\\)/.test(s.clipPath)) return true;
      if (s.overflow !== 'visible' && (r.width <= 1 || r.height <= 1)) return true;
    }
    return false;
  };
  const hex = c => '#' + c.slice(0, 3).map(v => Math.round(v).toString(16).padStart(2, '0')).join('');
  const out = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const text = n.textContent.trim(), el = n.parentElement;
    if (!text || !el || el === probe || el.closest('mjx-container, script, style, noscript, template')) continue;
    const gd = el.closest('.js-plotly-plot');
    if (el.closest('svg') && !gd) continue;           // an icon's text, drawn by its own rules
    if (!el.checkVisibility({opacityProperty: true, visibilityProperty: true})) continue;
    const range = document.createRange();
    range.selectNodeContents(n);
    const r = range.getBoundingClientRect();
    if (r.width < 2 || r.height < 2 || hidden(el)) continue;
    const cs = getComputedStyle(el);
    let fg, bg;
    if (gd && el.closest('svg')) {                     // a figure's text, on its own paper
      fg = rgba(cs.fill);
      fg[3] *= Number(cs.fillOpacity) * opacity(el);
      const L = gd._fullLayout || {};
      bg = [L.paper_bgcolor, L.plot_bgcolor].map(c => over(rgba(c || 'transparent'), background(gd)));
    } else {
      fg = rgba(cs.color);
      fg[3] *= opacity(el);
      bg = [background(el)];
    }
    const worst = bg.map(b => [ratio(over(fg, b), b), b]).sort((a, b) => a[0] - b[0])[0];
    const size = parseFloat(cs.fontSize), large = size >= 24 || (size >= 18.66 && Number(cs.fontWeight) >= 700);
    if (worst[0] < 4.5) out.push([text.slice(0, 60), Math.round(worst[0] * 100) / 100, large,
                                  hex(over(fg, worst[1])), hex(worst[1]), where(el)]);
  }
  probe.remove();
  return out;
}"""

#: Markup shown as text: [kind, element, the text around it], from the text of every block of
#: the page's main part outside code and math (a role split over elements reads whole).
MARKUP_JS = """() => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  const main = document.querySelector('main') || document.body;
  const skip = 'code, pre, kbd, samp, tt, mjx-container, .math, script, style, textarea, .highlight';
  const patterns = [         // the most specific first: a role's backticks are a role
    ['role', /\\{(?:doc|numref|ref|eq|cite|cite:\\w+|glue|glue:\\w+|math|term|download|abbr|sub-ref|prf:\\w+)\\}/],
    ['directive', /(?:^|\\n)\\s*(?::::|```)/],
    ['Markdown link', /\\[[^\\]\\n]+\\]\\((?:https?:|\\.\\.?\\/|#|[\\w-]+\\.(?:md|html|ipynb))[^)\\s]*\\)/],
    ['HTML tag', /<\\/?(?:code|span|div|p|strong|em|b|i|br|sub|sup|a|table|td|tr|th|details|summary)\\b[^>]*>/],
    ['dollar math', /\\$[^$\\n]{1,80}\\$/],
    ['TeX', /\\\\\\(|\\\\\\[|\\\\(?:frac|mathbb|mathrm|mathcal|sigma|eta|alpha|beta|lambda|kappa|xi|theta|Sigma|tilde|hat|sum|nabla)\\b/],
    ['bold', /\\*\\*[^*\\n]+\\*\\*/],
    ['backtick', /`/],
  ];
  const blocks = 'p, li, td, th, h1, h2, h3, h4, h5, h6, caption, figcaption, dt, dd, summary, div, text, tspan';
  const out = [], seen = new Set();
  const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (!n.textContent.trim() || !el || el.closest(skip)) continue;
    const block = el.closest(blocks) || el;
    if (seen.has(block)) continue;
    seen.add(block);
    let t = '';
    const w = document.createTreeWalker(block, NodeFilter.SHOW_TEXT);
    for (let m = w.nextNode(); m; m = w.nextNode()) if (!m.parentElement.closest(skip)) t += m.textContent;
    for (const [kind, re] of patterns) {
      const m = t.match(re);
      if (m) {
        out.push([kind, block.tagName.toLowerCase() + '.' + (block.getAttribute('class') || '').split(' ')[0],
                  t.slice(Math.max(0, m.index - 40), m.index + 60).replace(/\\s+/g, ' ').trim()]);
        break;
      }
    }
  }
  return out;
}"""


def measure(page) -> dict:
    """The page's texts below 4.5:1 in each mode, and its markup shown as text."""
    got = {}
    for mode in MODES:
        page.evaluate(MODE_JS, mode)
        got[mode] = page.evaluate(CONTRAST_JS)
    got["markup"] = page.evaluate(MARKUP_JS)
    return got


def illegible(low: list) -> list:
    """The texts of ``low`` (:data:`CONTRAST_JS`'s rows) below their threshold: 4.5:1, or 3:1
    for large text."""
    return [row for row in low if row[1] < (LARGE if row[2] else NORMAL)]


@pytest.fixture(scope="module")
def seen(browser, site):
    """``seen(path)``: :func:`measure` of a page, loaded once for every check."""
    _, base = site
    cache: dict[str, dict] = {}

    def get(path: str) -> dict:
        if path not in cache:
            page, _, _ = open_page(browser, base, path, width=WIDTH)
            cache[path] = measure(page)
            page.close()
        return cache[path]
    return get


def _summary(rows: list, limit: int = 15) -> list:
    """The first ``limit`` rows, grouped by element and colours, with how many each."""
    groups: dict[tuple, list] = {}
    for text, ratio, large, fg, bg, where in rows:
        groups.setdefault((where, fg, bg, ratio), []).append(text)
    return [f"{len(t)} x {r}:1 {w} {fg} on {bg}: {t[0]!r}"
            for (w, fg, bg, r), t in sorted(groups.items(), key=lambda g: -len(g[1]))[:limit]]


def test_every_text_is_legible_in_both_colour_modes(site, seen):
    """Every visible text of every page reaches 4.5:1 (large text 3:1) against its
    background, in light and dark mode, with every <details> open."""
    html, _ = site
    pages = site_pages(html)
    assert KNOWN <= set(pages)
    problems, counts = {}, {}
    for path in pages:
        for mode in MODES:
            low = seen(path)[mode]
            counts[f"{path} {mode}"] = (sum(r[1] < 3 for r in low), len(illegible(low)))
            if illegible(low):
                problems[f"{path} ({mode})"] = _summary(illegible(low))
    print("texts below 3:1 / below their threshold (4.5:1, large 3:1), per page and mode:")
    print("\n".join(f"  {k}: {a} / {b}" for k, (a, b) in counts.items()))
    assert problems == {}, json.dumps(problems, indent=1, ensure_ascii=False)


def test_no_page_shows_markup_as_text(site, seen):
    """No caption, heading, table or paragraph shows MyST or HTML markup as text."""
    html, _ = site
    shown = {path: seen(path)["markup"] for path in site_pages(html) if path != "search.html"}
    assert {p: m for p, m in shown.items() if m} == {}, json.dumps(shown, indent=1,
                                                                  ensure_ascii=False)


PLANTED_CONTRAST = """() => {
  const art = document.querySelector('article');
  const add = html => { const d = document.createElement('div'); d.innerHTML = html; art.append(d); };
  add('<p style="color:#999">grey on white</p>');                         // 2.85:1 in light mode
  add('<p><span style="background:#fff8e1;color:var(--pst-color-text-base)">cream row</span></p>');
  add('<p style="opacity:0.55;color:#666">faded by opacity</p>');            // 2.3:1 in light mode
  add('<h2 style="font-size:28px;color:#888">a large heading</h2>');       // 3.5:1: large, passes
  add('<details><summary>closed</summary><p style="color:#aaa">inside a closed toggle</p></details>');
  add('<p style="position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0,0,0,0);color:#eee">screen readers only</p>');
}"""


def test_the_contrast_check_sees_what_it_looks_for(browser, site):
    """On a page with planted texts: grey on white (2.85:1 in light mode, 6.6:1 on the dark
    page), light text on a cream background in dark mode (the ledger's "≠ differs" rows), text faded by opacity and grey text in a closed
    <details> are found with their ratios; a large heading at 3.5:1 passes, and text clipped
    to 1 px for screen readers is not measured."""
    _, base = site
    page, _, _ = open_page(browser, base, "book/errata.html", width=WIDTH)
    page.evaluate(PLANTED_CONTRAST)
    got = measure(page)
    page.close()
    light = {r[0]: r for r in got["light"]}
    dark = {r[0]: r for r in got["dark"]}
    assert 2.7 < light["grey on white"][1] < 3.0 and "grey on white" not in dark   # 6.6:1
    assert dark["cream row"][1] < 1.5 and "cream row" not in light
    assert light["faded by opacity"][1] < 2.5
    assert light["inside a closed toggle"][1] < 2.5
    assert "a large heading" in light and light["a large heading"][2]
    assert "a large heading" not in [r[0] for r in illegible(got["light"])]
    assert "screen readers only" not in light and "screen readers only" not in dark


PLANTED_MARKUP = """() => {
  const art = document.querySelector('article');
  const add = html => { const d = document.createElement('div'); d.innerHTML = html; art.append(d); };
  add("<p class='ref-caption'>(`gpu` reference.) The teachers' test accuracy</p>");
  add("<details><summary>closed</summary><h4 class='ref-heading'>$G$ over the epochs</h4></details>");
  add('<table><tr><td>**bold** in a table</td></tr></table>');
  add('<p>as <em>{numref}</em>`fig-x` shows</p>');
  add('<p>see [the ledger](ledger.html)</p>');
  add('<p>&lt;code&gt;x&lt;/code&gt;</p>');
  add('<p>code is fine: <code>`a`</code> and <span class="math">$x$</span></p>');
}"""


def test_the_markup_check_sees_what_it_looks_for(browser, site):
    """On a page with planted text: a caption's backticks, a heading's dollars inside a closed
    <details>, bold in a table, a role split over two elements, a Markdown link and an escaped
    HTML tag are each found; backticks inside code and dollars inside math are not."""
    _, base = site
    page, _, _ = open_page(browser, base, "book/errata.html", width=WIDTH)
    page.evaluate(PLANTED_MARKUP)
    got = page.evaluate(MARKUP_JS)
    page.close()
    kinds = {(k, where) for k, where, _ in got}
    assert kinds == {("backtick", "p.ref-caption"), ("dollar math", "h4.ref-heading"),
                     ("bold", "td."), ("role", "p."), ("Markdown link", "p."), ("HTML tag", "p.")}
    assert not any("code is fine" in text for _, _, text in got)
