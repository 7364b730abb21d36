"""The static explorers of the smoke book's chapters, in a real headless Chromium: a slider and
a drop-down entry change their figure, the two controls of an explorer compose, and the
legend explains the colours in every state. (The read-only checks of every page are in
test_browser.py; the two files run on either worker.)"""
from __future__ import annotations

import pytest

from helpers import ROOT, open_page, served

pytestmark = [pytest.mark.slow, pytest.mark.browser]

CHAPTERS = sorted(p.stem for p in (ROOT / "notebooks").glob("*.md") if p.stem != "README")


@pytest.fixture(scope="module")
def site(smoke_book):
    """The smoke book's site on a local HTTP server: (root dir, base URL)."""
    html = smoke_book / "_build" / "html"
    with served(html) as base:
        yield html, base


#: The chapters whose smoke page has at least one explorer (a figure with a slider or a menu).
WITH_EXPLORERS = {"ols", "prop1_noise", "prop2_convergence", "remark3_valley"}
LEGEND_JS = "gd => gd._fullLayout.showlegend ? gd.querySelectorAll('.legend .traces').length : 0"
VISIBLE_JS = "gd => JSON.stringify(gd._fullData.map(t => t.visible === true))"


def _explorers(page) -> list:
    """The figures of a page with a slider or a drop-down."""
    return [gd for gd in page.query_selector_all(".js-plotly-plot")
            if page.evaluate("gd => (gd.layout.sliders || []).length"
                             " + (gd.layout.updatemenus || []).length > 0", gd)]


#: Whether an explorer shows another state than ``before`` (VISIBLE_JS) with its slider at
#: ``active`` (none: anywhere), the drop-down's second update (dsm-plotly.js puts the slider
#: back where it was) included.
SETTLED_JS = """([gd, before, active]) => JSON.stringify(gd._fullData.map(t => t.visible === true))
  !== before && (active === null || gd.layout.sliders[0].active === active)"""


def _until_settled(page, gd, before: str, active: int | None) -> None:
    """Wait until the explorer ``gd`` shows another state than ``before`` with its slider at
    ``active`` (:data:`SETTLED_JS`): the event itself, not a fixed wait. After 10 s the
    caller's assertions say what did not happen."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    try:
        page.wait_for_function(SETTLED_JS, arg=[gd, before, active], timeout=10_000)
    except PlaywrightTimeout:
        pass


def _drag_slider_to_the_end(page, gd) -> None:
    rail = gd.query_selector(".slider-rail-rect").bounding_box()
    grip = gd.query_selector(".slider-grip-rect").bounding_box()
    before = page.evaluate(VISIBLE_JS, gd)
    last = page.evaluate("gd => gd.layout.sliders[0].steps.length - 1", gd)
    page.mouse.move(grip["x"] + grip["width"] / 2, grip["y"] + grip["height"] / 2)
    page.mouse.down()
    for frac in (0.3, 0.6, 0.99):
        page.mouse.move(rail["x"] + rail["width"] * frac, grip["y"] + grip["height"] / 2)
    page.mouse.up()
    _until_settled(page, gd, before, last)


def _pick_menu_entry(page, gd, k: int = 1) -> None:
    """Open the explorer's (first) drop-down and pick its entry ``k``; wait until the figure
    shows the entry's state, with the slider where it was when the figure composes its
    controls (``layout.meta.dsm_grid``)."""
    before = page.evaluate(VISIBLE_JS, gd)
    active = page.evaluate("gd => gd.layout.meta && gd.layout.meta.dsm_grid"
                           " && (gd.layout.sliders || []).length"
                           " ? gd.layout.sliders[0].active : null", gd)
    gd.query_selector(".updatemenu-header-group").click()
    gd.wait_for_selector(".updatemenu-dropdown-button", state="visible", timeout=10_000)
    buttons = gd.query_selector_all(".updatemenu-dropdown-button")
    buttons[min(k, len(buttons) - 1)].click()      # waits until the button stands still
    _until_settled(page, gd, before, active)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_explorer_control_changes_its_figure_and_keeps_its_legend(browser, site, chapter):
    """Every slider, dragged to its last step, and a drop-down entry show a different set of
    traces, and a drop-down change keeps the slider's position (the controls compose). The
    legend explains the colours in every state, not only the first one (issue 18, item 1:
    each state carries its own legend entries). One page load serves both checks."""
    _, base = site
    path = f"book/chapters/{chapter}.html"
    page, blocked, errors = open_page(browser, base, path)
    explorers, lost = _explorers(page), {}
    for k, gd in enumerate(explorers):
        gd.scroll_into_view_if_needed()
        before = page.evaluate(VISIBLE_JS, gd)
        legend = [page.evaluate(LEGEND_JS, gd)]
        slider = bool(page.evaluate("gd => (gd.layout.sliders || []).length", gd))
        if slider:
            steps = page.evaluate("gd => gd.layout.sliders[0].steps.length", gd)
            assert gd.query_selector(".slider-rail-rect"), f"{path}: figure {k}'s slider is not drawn"
            _drag_slider_to_the_end(page, gd)
            assert page.evaluate("gd => gd.layout.sliders[0].active", gd) == steps - 1, path
            after = page.evaluate(VISIBLE_JS, gd)
            assert after != before, f"{path}: the slider did not change figure {k}"
            before = after
            legend.append(page.evaluate(LEGEND_JS, gd))
        if page.evaluate("gd => (gd.layout.updatemenus || []).length", gd):
            _pick_menu_entry(page, gd)
            assert page.evaluate(VISIBLE_JS, gd) != before, f"{path}: the menu did not change figure {k}"
            if slider and page.evaluate("gd => !!(gd.layout.meta && gd.layout.meta.dsm_grid)", gd):
                assert page.evaluate("gd => gd.layout.sliders[0].active", gd) == steps - 1, \
                    f"{path}: the menu reset the slider of figure {k}"
            legend.append(page.evaluate(LEGEND_JS, gd))
        if legend[0] == 0 or min(legend) < legend[0]:
            lost[k] = legend
    page.close()
    assert blocked == [] and errors == [], (path, blocked, errors)
    assert lost == {}, f"legend entries (first state, after slider, after menu): {lost}"
    assert bool(explorers) == (chapter in WITH_EXPLORERS), (chapter, len(explorers))
