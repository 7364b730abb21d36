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


def _drag_slider_to_the_end(page, gd) -> None:
    rail = gd.query_selector(".slider-rail-rect").bounding_box()
    grip = gd.query_selector(".slider-grip-rect").bounding_box()
    page.mouse.move(grip["x"] + grip["width"] / 2, grip["y"] + grip["height"] / 2)
    page.mouse.down()
    for frac in (0.3, 0.6, 0.99):
        page.mouse.move(rail["x"] + rail["width"] * frac, grip["y"] + grip["height"] / 2)
    page.mouse.up()
    page.wait_for_timeout(500)


def _pick_menu_entry(page, gd, k: int = 1) -> None:
    gd.query_selector(".updatemenu-header-group").click()
    page.wait_for_timeout(300)
    buttons = gd.query_selector_all(".updatemenu-dropdown-button")
    buttons[min(k, len(buttons) - 1)].click()
    page.wait_for_timeout(800)


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
