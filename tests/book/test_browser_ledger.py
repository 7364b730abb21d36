"""The ledger's across-scales tables in a real headless Chromium (issue 71, item 9): at 1400 px
two of them ("At every scale", with the cpu-cifar10 reference) were 810 px wide in a 784 px
column. At 1400 and 1280 px every table of the ledger lies within its column, and each
across-scales table's narrowest layout (its min-content width) is well inside the column, so
that longer ids or intervals of another build still fit; at 390 px each is one card per row
inside the phone's column. A planted row with a long id and long intervals fits too, and
overflows once the ledger's wrapping rule is taken away (the check sees what it looks for)."""
from __future__ import annotations

from pathlib import Path

import pytest

from helpers import open_page, served

pytestmark = [pytest.mark.slow, pytest.mark.browser]

LEDGER = "book/ledger.html"

TABLES_JS = """() => {
  const art = document.querySelector('article.bd-article') || document.querySelector('article');
  const box = art.getBoundingClientRect();
  const inner = box.width - parseFloat(getComputedStyle(art).paddingLeft)
                - parseFloat(getComputedStyle(art).paddingRight);
  const right = box.right - parseFloat(getComputedStyle(art).paddingRight);
  return {column: Math.round(inner), tables: [...art.querySelectorAll('table')]
    .filter(t => t.offsetParent !== null).map(t => {
      const r = t.getBoundingClientRect();
      const width = t.style.width;
      t.style.width = 'min-content';
      const narrowest = t.getBoundingClientRect().width;
      t.style.width = width;
      return {cls: String(t.className), width: Math.round(r.width),
              narrowest: Math.round(narrowest), over: Math.round(r.right - right),
              scrolls: t.scrollWidth > t.clientWidth + 1,
              parent: t.parentElement.scrollWidth > t.parentElement.clientWidth + 1,
              cards: getComputedStyle(t.querySelector('tbody tr') || t).display === 'block'};
    })};
}"""

PLANT_JS = """(drop) => {
  if (drop) document.querySelectorAll('article style').forEach(s => s.remove());
  const t = document.querySelector('table.scales');
  const row = t.querySelector('tbody tr').cloneNode(true);
  const cells = row.querySelectorAll('td');
  cells[0].innerHTML = '<code>' + 'fig1.a_very_long_claim_identifier_'.repeat(3) + '</code>'
    + " <span class='differs'>≠ differs (stale)</span>";
  for (const td of [...cells].slice(1))
    td.innerHTML = "<span class='scale-cell'><span class='badge inconclusive'>? inconclusive</span>"
      + " −0.0001234 <span class='iv'>[−0.0001234, −0.0001234]</span> ln ratio</span>";
  t.querySelector('tbody').prepend(row);
  const art = document.querySelector('article');
  return Math.round(t.getBoundingClientRect().right
                    - (art.getBoundingClientRect().right - parseFloat(getComputedStyle(art).paddingRight)));
}"""


@pytest.fixture(scope="module")
def site(smoke_book):
    html = smoke_book / "_build" / "html"
    with served(html) as base:
        yield html, base


def measure(browser, base: str, width: int) -> dict:
    page, _, _ = open_page(browser, base, LEDGER, width=width)
    got = page.evaluate(TABLES_JS)
    page.close()
    return got


def test_the_ledgers_tables_fit_their_column_at_1400_1280_and_390(browser, site):
    _, base = site
    for width in (1400, 1280):
        got = measure(browser, base, width)
        scales = [t for t in got["tables"] if "scales" in t["cls"].split()]
        assert scales, f"{width} px: the smoke book's ledger shows no across-scales table"
        wide = [t for t in got["tables"] if t["over"] > 1 or t["scrolls"] or t["parent"]]
        assert wide == [], f"{width} px, column {got['column']} px: {wide}"
        # room to spare: the narrowest layout takes at most two thirds of the column
        tight = [t for t in scales if t["narrowest"] > 2 * got["column"] / 3]
        assert tight == [], f"{width} px, column {got['column']} px: {tight}"
    phone = measure(browser, base, 390)
    scales = [t for t in phone["tables"] if "scales" in t["cls"].split()]
    assert scales and all(t["cards"] for t in scales)
    assert [t for t in phone["tables"] if "cards" in t["cls"].split()
            and (t["over"] > 1 or t["scrolls"])] == []


def test_a_planted_long_row_fits_and_overflows_without_the_rule(browser, site):
    """A row with a 102-character claim id and four long intervals fits the 1400 px column
    with the ledger's wrapping rule; with the rule removed it runs past the column."""
    _, base = site
    over = {}
    for drop in (False, True):
        page, _, _ = open_page(browser, base, LEDGER, width=1400)
        over[drop] = page.evaluate(PLANT_JS, drop)
        page.close()
    assert over[False] <= 1 and over[True] > 1, over
