"""Suggested causes in Chromium: Triage's cause filter (from the URL and from the widget), the task
header's Accept (the reviewer's label appears with their name) and Reject, the Breakdowns chart that
clicks through to Triage, and a hostile summary that stays text. Causes come from the real engine on the
shipped demo; the task the rules leave open is answered by a (fake) model whose reasoning is hostile."""

from __future__ import annotations

import re
import shutil

import pytest
from browser_support import bar_label, chromium_available, serve, wait_idle, wait_url
from cause_support import OPEN_TASK, diagnose_with_model
from demo_support import NAV, OPAGENT

from core.queries import causes
from core.queries.annotations import current
from core.store import Store

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not chromium_available(), reason="chromium not installed"),
]

NAME = "e.g. Ada Lovelace"
HOSTILE = (
    '<script>window.__xss = "script"</script><img src=x onerror="window.__xss = \'img\'">'
    " [click me](https://evil.example/) **bold** https://evil.example/bare"
)


@pytest.fixture(scope="module")
def served(demo_db, tmp_path_factory):
    """The shipped demo as diagnosed, the model's suggestion for the task the rules left open hostile."""
    db = tmp_path_factory.mktemp("causes") / "causes.duckdb"
    shutil.copy(demo_db, db)
    with Store(db) as store:
        diagnose_with_model(store, reasoning=HOSTILE)
    with serve(db) as url:
        yield url, db


def _primary(db, run):
    with Store(db, read_only=True) as s:
        return {t: c for _, t, c, _ in s.query(causes.primary_causes_sql(), {"run": run})}


def test_triage_filters_by_cause_from_its_url_and_from_the_widget(browser_page, served):
    url, db = served
    primary = _primary(db, OPAGENT)
    looped = sum(1 for c in primary.values() if c == "looped")
    gave_up = sum(1 for c in primary.values() if c == "gave_up")
    assert looped and gave_up
    with browser_page() as page:
        page.goto(f"{url}/triage?run={OPAGENT}&cause=looped")
        wait_idle(page)
        page.get_by_text(re.compile(rf"^{looped} of \d+ tasks")).first.wait_for(timeout=60_000)
        # The widget shows the cause in words and adds a second one to the URL.
        page.get_by_text("looped").first.wait_for()
        page.get_by_role("combobox", name=re.compile("Suggested cause")).click()
        page.get_by_role("option", name="gave up early").click()
        wait_url(page, "cause=gave_up")
        wait_idle(page)
        page.get_by_text(re.compile(rf"^{looped + gave_up} of \d+ tasks")).first.wait_for(timeout=60_000)
        assert "cause=looped" in page.url


def test_accept_in_the_header_labels_the_task_with_the_reviewers_name(browser_page, served):
    url, db = served
    with browser_page(1500, 1500) as page:
        page.goto(f"{url}/task?run={NAV}&task=374")
        wait_idle(page)
        page.get_by_text("Suggested cause: environment broken").first.wait_for(timeout=60_000)
        assert page.get_by_role("button", name=re.compile("Accept")).is_disabled()  # no name yet
        page.get_by_placeholder(NAME).first.fill("Ada Lovelace")
        page.keyboard.press("Enter")
        wait_idle(page)
        page.get_by_role("button", name=re.compile("Accept")).click()
        wait_idle(page)
        page.get_by_text(re.compile("accepted by Ada Lovelace at")).first.wait_for(timeout=60_000)
        # The reviewer's label, with their name, in the label panel below the header.
        page.get_by_text(re.compile(r"^Label: environment broken · Ada Lovelace, ")).first.wait_for(
            timeout=60_000
        )
    with Store(db, read_only=True) as s:
        now = current(s, "task", NAV, 374)
    assert (now["label"], now["author"]) == ("environment broken", "Ada Lovelace")


def test_reject_in_the_header_records_who_and_leaves_the_label(browser_page, served):
    url, db = served
    task = next(t for t, c in _primary(db, OPAGENT).items() if c == "gave_up")
    with browser_page(1500, 1500) as page:
        page.goto(f"{url}/task?run={OPAGENT}&task={task}")
        wait_idle(page)
        page.get_by_placeholder(NAME).first.fill("Grace Hopper")
        page.keyboard.press("Enter")
        wait_idle(page)
        page.get_by_role("button", name=re.compile("Reject")).click()
        wait_idle(page)
        page.get_by_text(re.compile("rejected by Grace Hopper at")).first.wait_for(timeout=60_000)
    with Store(db, read_only=True) as s:
        assert current(s, "task", OPAGENT, task) is None
        assert causes.task_causes(s, OPAGENT, task).decision.decision == "rejected"


def test_a_hostile_summary_and_reasoning_show_as_text(app_view, served):
    url, _ = served
    page = app_view(f"{url}/task?run={OPEN_TASK[0]}&task={OPEN_TASK[1]}")
    page.get_by_text("suggested by a model").first.wait_for(timeout=60_000)
    assert page.evaluate("() => window.__xss") is None
    assert page.locator("img[onerror]").count() == 0
    assert page.locator("a[href^='https://evil.example']").count() == 0  # no live link
    assert page.locator("strong", has_text="bold").count() == 0  # no markdown
    assert page.get_by_text("<script>window.__xss", exact=False).count() >= 2  # summary and reasoning


def test_the_breakdowns_cause_chart_clicks_through_to_triage(browser_page, served):
    url, db = served
    with browser_page() as page:
        page.goto(f"{url}/breakdowns?runs={OPAGENT}&dim=failure+cause")
        wait_idle(page)
        bar = page.locator(".js-plotly-plot .bars .point").first
        bar.wait_for(timeout=60_000)
        label = bar_label(page, bar)  # e.g. "6.1 % · 2/20"
        tasks, failed = map(int, re.search(r"(\d+)/(\d+)$", label).groups())
        assert failed == len(_primary(db, OPAGENT))
        box = bar.locator("path").bounding_box()
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        wait_url(page, "/triage?")
        wait_idle(page)
        assert f"run={OPAGENT}" in page.url and "cause=" in page.url
        page.get_by_text(re.compile(rf"^{tasks} of \d+ tasks · {tasks} failed")).first.wait_for(
            timeout=60_000
        )
