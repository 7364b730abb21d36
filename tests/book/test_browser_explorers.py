"""The static explorers of the smoke book's chapters, in a real headless Chromium: every slider
step and drop-down entry changes its figure, the two controls of an explorer compose, and the
legend explains the colours in every state. (The read-only checks of every page are in
test_browser.py; the two files run on either worker.)"""
from __future__ import annotations

from pathlib import Path

import pytest

from helpers import open_page, served

pytestmark = [pytest.mark.slow, pytest.mark.browser]

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = sorted(p.stem for p in (ROOT / "notebooks").glob("*.md") if p.stem != "README")


@pytest.fixture(scope="module")
def site(smoke_book):
    """The smoke book's site on a local HTTP server: (root dir, base URL)."""
    html = smoke_book / "_build" / "html"
    with served(html) as base:
        yield html, base


def test_every_explorer_control_changes_its_figure(browser, site):
    """Every slider step and every drop-down entry shows a different set of traces, and a
    drop-down change keeps the slider's position (the controls compose)."""
    html, base = site
    seen = 0
    for path in [f"book/chapters/{c}.html" for c in CHAPTERS]:
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


LEGEND_JS = "gd => gd._fullLayout.showlegend ? gd.querySelectorAll('.legend .traces').length : 0"


def _explorers(page) -> list:
    """The figures of a page with a slider or a drop-down."""
    return [gd for gd in page.query_selector_all(".js-plotly-plot")
            if page.evaluate("gd => (gd.layout.sliders || []).length"
                             " + (gd.layout.updatemenus || []).length > 0", gd)]


def _move_slider(page, gd, frac: float) -> None:
    rail = gd.query_selector(".slider-rail-rect").bounding_box()
    grip = gd.query_selector(".slider-grip-rect").bounding_box()
    page.mouse.click(rail["x"] + rail["width"] * frac, grip["y"] + grip["height"] / 2)
    page.wait_for_timeout(400)


def _pick_menu_entry(page, gd, k: int = 1) -> None:
    gd.query_selector(".updatemenu-header-group").click()
    page.wait_for_timeout(300)
    buttons = gd.query_selector_all(".updatemenu-dropdown-button")
    buttons[min(k, len(buttons) - 1)].click()
    page.wait_for_timeout(600)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_static_explorers_keep_their_legend_after_a_control_moves(browser, site, chapter):
    """Issue 18, item 1: an explorer's legend explains its colours in every state, not only
    the first one (each state carries its own legend entries)."""
    _, base = site
    page, _, _ = open_page(browser, base, f"book/chapters/{chapter}.html")
    lost = {}
    for k, gd in enumerate(_explorers(page)):
        gd.scroll_into_view_if_needed()
        counts = [page.evaluate(LEGEND_JS, gd)]
        if gd.query_selector(".slider-rail-rect"):
            _move_slider(page, gd, 0.99)
            counts.append(page.evaluate(LEGEND_JS, gd))
        if gd.query_selector(".updatemenu-header-group"):
            _pick_menu_entry(page, gd)
            counts.append(page.evaluate(LEGEND_JS, gd))
        if counts[0] == 0 or min(counts) < counts[0]:
            lost[k] = counts
    page.close()
    assert lost == {}, f"legend entries (first state, after slider, after menu): {lost}"
