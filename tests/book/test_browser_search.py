"""The search page's result snippets start with the page's own text (issue 71, item 8), in
headless Chromium on the smoke book: Sphinx read them from the page's ``[role="main"]``, which
in this theme holds the header's download buttons, so that they began ".ipynb .pdf Noisy
self-distillation…" (book/_assets/dsm-search.js reads the article instead)."""
from __future__ import annotations

import re

import pytest

from helpers import served

pytestmark = [pytest.mark.slow, pytest.mark.browser]

QUERY = "noise"       # on every chapter's page, in a title for some, deep in the text for others
#: The header's download buttons, whose labels began every snippet.
BUTTONS = re.compile(r"\.(?:ipynb|md|pdf)\b")

#: Each result once its snippet is in: [href, snippet, the page's title (its h1), the text of
#: its article (its header, links to headings, scripts and styles left out)].
RESULTS_JS = """async () => {
  const done = () => {
    const status = document.querySelector('#search-results .search-summary');
    const items = [...document.querySelectorAll('#search-results ul.search > li')];
    return status && /found/i.test(status.textContent)
           && items.every(li => li.querySelector('p.context'));
  };
  for (let i = 0; i < 300 && !done(); i++) await new Promise(r => setTimeout(r, 100));
  const items = [...document.querySelectorAll('#search-results ul.search > li')];
  return Promise.all(items.map(async li => {
    const href = li.querySelector('a').getAttribute('href');
    const page = new DOMParser().parseFromString(await (await fetch(href)).text(), 'text/html');
    const h1 = page.querySelector('article h1'), article = page.querySelector('article');
    article.querySelectorAll('.headerlink, script, style').forEach(e => e.remove());
    return [href, (li.querySelector('p.context') || {}).textContent || null,
            h1 ? h1.textContent.trim() : '', article.textContent];
  }));
}"""


@pytest.fixture(scope="module")
def base(smoke_book):
    with served(smoke_book / "_build" / "html") as url:
        yield url


def search(browser, base: str, query: str, *, block_reader: bool = False) -> list[list]:
    """The results of ``query`` on the search page (:data:`RESULTS_JS`); ``block_reader``:
    without the book's snippet reader, as Sphinx alone gives them."""
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    if block_reader:
        page.route("**/dsm-search.js*", lambda route: route.abort())
    page.goto(f"{base}search.html?q={query}", wait_until="load")
    results = page.evaluate(RESULTS_JS)
    page.close()
    return results


def _words(text: str) -> str:
    return " ".join(text.split())


def _body(snippet: str) -> str:
    """A snippet's text without the "..." that says it starts or ends inside the page."""
    return _words(re.sub(r"^\s*\.\.\.|\.\.\.\s*$", "", snippet))


def not_page_text(results: list[list]) -> list[str]:
    """The results whose snippet is not a piece of their page's article: header text in it."""
    return [href for href, snippet, _, article in results
            if not snippet or _body(snippet) not in _words(article)]


def test_search_snippets_start_with_the_page_text(browser, base):
    """Every result of a search has a snippet, a piece of its page's article: none shows the
    header's buttons or contents list; a snippet that starts where its page's text starts
    (no "..." before it) starts with the page's title, not with the smoke build's banner."""
    results = search(browser, base, QUERY)
    assert len(results) >= 5, results
    assert not_page_text(results) == []
    assert [href for href, s, _, _ in results if BUTTONS.search(s[:40])] == []
    whole = [(href, _words(s), _words(title)) for href, s, title, _ in results
             if "#" not in href and not s.lstrip().startswith("...")]
    assert len(whole) >= 3, results          # the chapters whose title holds the word
    assert [w for w in whole if not w[1].startswith(w[2])] == []


def test_the_snippet_check_sees_sphinx_s_own_snippets(browser, base):
    """Without the book's reader, Sphinx's own snippets hold the header's text (what the check
    above looks for): its buttons' labels, or its contents list before the page's text."""
    results = search(browser, base, QUERY, block_reader=True)
    assert len(not_page_text(results)) >= 3, results


def test_only_the_search_page_loads_the_snippet_reader(smoke_book):
    """dsm-search.js replaces a function of Sphinx's searchtools.js: the search page loads it,
    deferred (after searchtools.js), and no other page does."""
    html = smoke_book / "_build" / "html"
    tag = re.compile(r'<script[^>]*src="[^"]*dsm-search\.js[^"]*"[^>]*>')
    search_page = (html / "search.html").read_text()
    (script,) = tag.findall(search_page)
    assert "defer" in script and "searchtools.js" in search_page
    assert (html / "_static" / "dsm-search.js").exists()
    others = [p.name for p in html.rglob("*.html")
              if "_static" not in p.parts and p.name != "search.html" and tag.search(p.read_text())]
    assert others == []
