"""The review loop in a real browser: every page opened cold from its URL, from Runs to a failed task's
explanation in clicks, keyboard previous/next, and hostile agent text that never becomes HTML."""

from __future__ import annotations

import os
import shutil
from urllib.parse import urlencode

import orjson
import pytest
from browser_support import chromium_available, click_grid_row, serve, wait_idle, wait_url

from core.ingest.jsonl import import_jsonl
from core.queries.runs import runs_table
from core.queries.triage import TriageFilter, task_neighbours, triage_table
from core.store import Store
from dashboard.components.tables import WRAP_ROW_HEIGHT

pytestmark = pytest.mark.browser

if not chromium_available():
    if os.environ.get("CI"):
        raise RuntimeError("chromium is missing in CI: .ci/run must install Debian's chromium")
    pytest.skip("Debian chromium not installed (apt-get install chromium)", allow_module_level=True)

HOSTILE = '<script>window.__xss = "script"</script><img src=x onerror="window.__xss = \'img\'">'
# Plotly renders a few tags inside chart labels and titles (<a href> becomes a live link in the SVG).
HOSTILE_NAME = '<a href="https://evil.example/">evil</a><b>bold</b>'


@pytest.fixture(scope="module")
def served(demo_db, tmp_path_factory):
    """The demo database plus a run whose every agent-written text is hostile HTML, served once."""
    db = tmp_path_factory.mktemp("browser") / "review.duckdb"
    shutil.copy(demo_db, db)
    run_file = db.parent / "hostile.jsonl"
    steps = [
        {"url": f"http://localhost:7770/{HOSTILE}", "thought": HOSTILE, "stated_action": HOSTILE,
         "executed_action": f"fill('12', '{HOSTILE}')", "error": HOSTILE},
        {"thought": HOSTILE, "executed_action": f"send_msg_to_user('{HOSTILE}')"},
    ]  # fmt: skip
    lines = [
        {"agent": HOSTILE, "model": HOSTILE, "paradigm": "step_by_step", "notes": HOSTILE},
        {"task_id": 21, "steps": steps, "final_answer": HOSTILE, "reward": 0.0, "termination": "answered",
         "termination_detail": HOSTILE},
    ]  # fmt: skip
    run_file.write_bytes(b"\n".join(orjson.dumps(line) for line in lines))
    with Store(db) as store:
        import_jsonl(store, run_file, "hostile-run")
        import_jsonl(store, run_file, HOSTILE_NAME)
    with serve(db) as url:
        yield url, db


def _no_injection(page) -> None:
    assert page.evaluate("() => window.__xss") is None
    assert page.locator("img[onerror]").count() == 0
    assert page.evaluate("() => [...document.scripts].filter(s => s.text.includes('__xss')).length") == 0


def _no_exception(page) -> None:
    assert page.locator("[data-testid='stException']").count() == 0
    assert page.get_by_text("Page not found").count() == 0


COLD_URLS = [
    ("/runs", "Runs"),
    ("/triage?run=webarena-render-babelcloud&verdict=failure&site=gitlab", "Triage"),
    ("/task?run=opagent&task=28&step=3", "Step 3"),
    ("/task?run=opagent&task=28&tab=Alignment", "human gold"),
    ("/task?run=wav-demo&task=107&tab=Network&static=true", "359 of 359 events shown"),
    ("/task?run=wav-demo&task=107&tab=Evaluation", "AgentResponseEvaluator #0"),
]


@pytest.mark.parametrize(("path", "expected"), COLD_URLS)
def test_every_view_opens_cold_from_its_url(browser_page, served, path, expected):
    served, _ = served
    with browser_page() as page:
        page.goto(served + path)
        wait_idle(page)
        page.get_by_text(expected).first.wait_for(timeout=30_000)
        _no_exception(page)
        # The URL still describes the view (no parameter dropped on the way).
        for part in path.split("?", 1)[-1].split("&") if "?" in path else []:
            assert part in page.url, (part, page.url)


def test_from_runs_to_a_failed_tasks_explanation_in_two_clicks(browser_page, served):
    served, db = served
    with browser_page() as page:
        page.goto(served + "/runs")
        wait_idle(page)
        rows = page.locator("[data-testid='stDataFrame']").first
        rows.wait_for()
        # Click 1: the wav-demo row opens Triage on that run.
        with Store(db, read_only=True) as store:
            runs = runs_table(store)["run"].tolist()
        click_grid_row(page, runs.index("wav-demo"), row_height=WRAP_ROW_HEIGHT)  # run names wrap
        wait_url(page, "/triage?run=wav-demo")
        wait_idle(page)
        # Click 2: the first row (failed tasks first) opens the task with the engine's sentence.
        click_grid_row(page, 0)
        wait_url(page, "task=107")
        wait_idle(page)
        page.get_by_text("task_type: expected RETRIEVE, agent said NAVIGATE").first.wait_for(timeout=30_000)
        _no_exception(page)


def test_keyboard_moves_between_failed_tasks(browser_page, served):
    served, db = served
    with Store(db, read_only=True) as store:
        table = triage_table(store, "opagent")
    only_failures = TriageFilter(verdicts=("failure",))
    _, after = task_neighbours(table, only_failures, 28)
    assert after is not None
    with browser_page() as page:
        page.goto(served + "/task?run=opagent&task=28&verdict=failure")
        wait_idle(page)
        page.get_by_text("Task 28").first.wait_for()
        # The shortcut exists once its button is on the page and enabled.
        page.locator("button:has-text('next failed'):not([disabled])").first.wait_for(timeout=30_000)
        page.keyboard.press("j")
        wait_url(page, f"task={after}")
        wait_idle(page)
        page.get_by_text(f"Task {after}").first.wait_for()
        assert "verdict=failure" in page.url  # the triage filter travels with the reviewer
        page.keyboard.press("k")
        wait_url(page, "task=28")
        wait_idle(page)
        page.get_by_text("Task 28").first.wait_for()
        page.keyboard.press("n")  # next step
        wait_url(page, "step=")
        wait_idle(page)
        page.get_by_text("Step 1").first.wait_for()


@pytest.mark.parametrize(
    "path",
    ["/runs", "/triage?run=hostile-run", "/task?run=hostile-run&task=21",
     "/task?run=hostile-run&task=21&tab=Alignment", "/task?run=hostile-run&task=21&step=1"],
)  # fmt: skip
def test_hostile_agent_text_stays_text(app_view, served, path):
    served, _ = served
    page = app_view(served + path)  # one page goes through every view: an injection in any stays caught
    _no_exception(page)
    _no_injection(page)
    if path == "/task?run=hostile-run&task=21":
        # The text is shown, not dropped: a reviewer must see what the agent wrote (once, on the task page:
        # the other views of this run show the same text).
        page.get_by_text("window.__xss", exact=False).first.wait_for(timeout=30_000)


def test_hostile_run_name_stays_text_in_charts(app_view, served):
    served, _ = served
    page = app_view(served + "/runs?" + urlencode({"chart": HOSTILE_NAME}))
    page.locator(".js-plotly-plot").first.wait_for(timeout=30_000)
    _no_exception(page)
    # No live link to the name's URL (links to our own pages carry it percent-encoded, as a parameter).
    assert page.locator('a[href*="//evil.example"]').count() == 0
    assert page.get_by_text("evil.example").count() > 0  # the landing page's heading shows it as text
    # The name is shown as its characters in the chart's title.
    assert "evil.example" in page.locator(".js-plotly-plot .gtitle").first.text_content()
