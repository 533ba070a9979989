"""Every page of the demo read as a reviewer reads it, in Chromium: no literal None/NaN or Python repr in
any text or table cell (the tables are drawn on a canvas: every string drawn is recorded), a bad link is
one line, and from the landing page a failed task's plain-sentence reason is at most three clicks away."""

from __future__ import annotations

import os
import re
import shutil

import pytest
from browser_support import chromium_available, serve, show, wait_idle, wait_url

from core.queries.failures import failures_by_cause, latest_run
from core.store import Store

pytestmark = pytest.mark.browser

if not chromium_available():
    if os.environ.get("CI"):
        raise RuntimeError("chromium is missing in CI: .ci/run must install Debian's chromium")
    pytest.skip("Debian chromium not installed (apt-get install chromium)", allow_module_level=True)

# Records every string a canvas draws: Streamlit's tables are canvases, their cells are no DOM text.
RECORD_CANVAS_TEXT = """(() => {
  const drawn = new Set(); window.__drawn = drawn;
  const fill = CanvasRenderingContext2D.prototype.fillText;
  CanvasRenderingContext2D.prototype.fillText = function (text, ...rest) {
    drawn.add(String(text)); return fill.call(this, text, ...rest);
  };
})();"""
CLEAR_DRAWN = "() => window.__drawn && window.__drawn.clear()"  # only what the next view draws counts
MISSING_CELL = {"None", "NaN", "nan", "<NA>", "NaT", "null"}
# A missing value or a Python repr in text: None/NaN not quoted (an agent may answer 'None'), value
# classes (Month('May'), Number(8.0)) and dict reprs ({'count': 8.0}).
LEAK = re.compile(r"(?<!')\b(?:None|NaN)\b(?!')|\b[A-Z][a-z]+\('|\bNumber\(|\{'\w+': ")
# Pages whose steps show an agent's raw transcript: the harness printed Python dicts there, and the
# agent's own words are shown as written; only missing values are checked on them.
TRANSCRIPTS = {"/task?run=webarena-render-babelcloud&task=166"}
MISSING_TEXT = re.compile(r"(?<!')\b(?:None|NaN)\b(?!')")

PAGES = [
    "/runs",
    "/triage?run=opagent",
    "/triage?run=webarena-render-babelcloud",
    "/triage?run=wav-navigation",
    "/judge",
    "/defects?run=opagent",
    "/defects?run=webarena-render-babelcloud",
    "/breakdowns",
    "/breakdowns?dim=task+type",
    "/breakdowns?dim=hard+subset",
    "/breakdowns?dim=termination",
    "/breakdowns?dim=reviewer+label",
    "/compare",
    "/metrics",
    "/metrics?table=Table+4",
    "/metrics?table=Table+6",
    "/metrics?table=Table+7",
    "/metrics?table=Planning+paradigms",
    "/task?run=opagent&task=25",
    "/task?run=opagent&task=25&tab=Alignment",
    "/task?run=opagent&task=25&tab=Network",
    "/task?run=opagent&task=25&tab=Evaluation",
    "/task?run=opagent&task=25&tab=Gold",
    "/task?run=opagent&task=414&step=2",  # a step with an error
    "/task?run=webarena-render-babelcloud&task=603&tab=Alignment",
    "/task?run=webarena-render-babelcloud&task=166",
    "/task?run=wav-demo&task=107&tab=Evaluation",
    "/task?run=wav-demo&task=107&tab=Network",
    "/task?run=wav-navigation&task=677&tab=Network",
    "/task?run=wav-navigation&task=157&tab=Evaluation",
]


@pytest.fixture(scope="module")
def served(demo_db, tmp_path_factory):
    db = tmp_path_factory.mktemp("clean") / "demo.duckdb"
    shutil.copy(demo_db, db)
    with serve(db) as url:
        yield url, db


@pytest.mark.parametrize("path", PAGES)
def test_no_none_nan_or_repr_on_any_page(app_view, served, path):
    url, _ = served
    page = app_view(url + path, init_script=RECORD_CANVAS_TEXT, before=CLEAR_DRAWN)
    assert page.locator("[data-testid='stException']").count() == 0
    drawn = page.evaluate("() => [...window.__drawn]")
    text = page.locator("[data-testid='stMain']").inner_text()
    assert not [d for d in drawn if d.strip() in MISSING_CELL], path
    pattern = MISSING_TEXT if path in TRANSCRIPTS else LEAK
    leaks = [m.group(0) for s in [*drawn, *text.splitlines()] for m in pattern.finditer(s)]
    assert not leaks, (path, leaks[:5])


def test_a_bad_task_link_is_one_line(app_view, served):
    url, _ = served
    page = app_view(url + "/task?run=opagent&task=abc")
    page.get_by_text("This link is bad: task abc is not a task id").first.wait_for(timeout=30_000)
    assert page.locator("[data-testid='stAlertContentError']").count() == 1
    assert page.locator("[data-testid='stSelectbox']").count() == 0  # no picker in its place


def test_from_the_landing_page_to_a_failed_tasks_reason_in_one_click(browser_page, served):
    url, db = served
    with Store(db, read_only=True) as store:
        run = latest_run(store)
        first = failures_by_cause(store, run)[0].items[0]
    with browser_page() as page:
        show(page, url + "/")
        # The landing page lists the latest run's failures by cause, the biggest group open.
        page.get_by_text(f"Why the latest run's tasks failed: {run}").first.wait_for(timeout=30_000)
        page.get_by_role("link", name=re.compile(rf"^Task {first.task_id} ")).first.click()  # click 1
        wait_url(page, f"task={first.task_id}")
        wait_idle(page)
        page.get_by_text(first.sentence[:60]).first.wait_for(timeout=30_000)
        assert "/task" in page.url and f"run={run}" in page.url
