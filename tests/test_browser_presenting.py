"""In Chromium: a Breakdowns bar opens Triage filtered to exactly the tasks the bar counts."""

from __future__ import annotations

import re

import pytest
from browser_support import bar_label, chromium_available, serve, wait_idle, wait_url
from demo_support import BABEL, OPAGENT

from core.store import Store

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not chromium_available(), reason="chromium not installed"),
]


@pytest.fixture(scope="module")
def served(demo_db):
    """The demo database served once for the module (its tests only read)."""
    with serve(demo_db) as url:
        yield url


def test_breakdown_bar_clicks_through_to_triage(browser_page, demo_db, served):
    with Store(demo_db, read_only=True) as s:
        (tasks,) = s.query("SELECT count(*) FROM evaluations WHERE run = ?", [BABEL])[0]
    with browser_page() as page:
        page.goto(served + "/breakdowns?runs=webarena-render-babelcloud&dim=task+type")
        wait_idle(page)
        bar = page.locator(".js-plotly-plot .bars .point").first
        bar.wait_for(timeout=60_000)
        label = bar_label(page, bar)  # e.g. "44 % · 4/9"
        successes, scored = map(int, re.search(r"(\d+)/(\d+)$", label).groups())
        box = bar.locator("path").bounding_box()
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        wait_url(page, "/triage?")
        wait_idle(page)
        assert "run=webarena-render-babelcloud" in page.url and re.search(
            r"type=(retrieve|mutate|navigate)", page.url
        )
        caption = page.get_by_text(re.compile(rf"of {tasks} tasks")).first.text_content()
        assert caption.startswith(f"{scored} of {tasks} tasks") and f"{successes} passed" in caption


# Every text of the page's metric tiles whose content is wider than its box (cut off, with an ellipsis).
_CUT_TILE_TEXT = """() => [...document.querySelectorAll('[data-testid=stMetric] [data-testid=stMarkdownContainer]')]
    .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.textContent)"""


@pytest.mark.parametrize("width", [1280, 1500])
def test_compare_tiles_show_their_figures_whole(app_view, served, width):
    """Compare's tiles at common window widths: no label, figure or interval cut off (the B − A tile's
    '-9.1 pts [-30.3, +12.1] n=33' ended '-9.1 pts [-30.3, +1…' at 1280 px and '… n…' at 1500 px)."""
    from playwright.sync_api import expect

    page = app_view(f"{served}/compare?a={BABEL}&b={OPAGENT}", width, 1000)
    tile = page.locator("[data-testid=stMetric]", has_text="B − A")
    tile.wait_for(timeout=60_000)
    assert re.search(r"[+-]\d+\.\d pts", tile.text_content()) and re.search(r"n=\d+", tile.text_content())
    page.locator("[data-testid=stMetric]", has_text="McNemar").wait_for(timeout=60_000)  # the last tile
    # Polled, not counted once: on a slow machine (CI) a second page run (query parameters set) can be
    # redrawing the row of tiles when the last one is first seen; 4 tiles must be there once it is drawn.
    expect(page.locator("[data-testid=stMetric]")).to_have_count(4, timeout=30_000)
    assert page.evaluate(_CUT_TILE_TEXT) == []
