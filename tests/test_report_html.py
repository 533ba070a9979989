"""`trajreview report --html`: one self-contained file that renders its charts in Chromium with the
network off, escapes what agents and reviewers wrote, and is never half-written."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from browser_support import chromium_available
from demo_support import BABEL, OPAGENT
from typer.testing import CliRunner

from core.cli.main import app
from core.store import Store

RUNS = (BABEL, OPAGENT)
HOSTILE = "<img src=x onerror=\"document.title='pwned'\">"


@pytest.fixture(scope="module")
def report(demo_db, tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("report")
    db = tmp / "demo.duckdb"
    shutil.copy(demo_db, db)
    # A reviewer label that is HTML: it must reach the reader as text.
    with Store(db) as s, s.transaction() as cur:
        cur.execute(
            "INSERT INTO annotations (run, task_id, target, label, author, created_at)"
            " VALUES ('opagent', 2, 'task', ?, 'test', now())",
            [HOSTILE],
        )
    out = tmp / "report.html"
    args = ["--db", str(db), "report", "--html", str(out)] + [a for r in RUNS for a in ("--run", r)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return out


@pytest.mark.slow
def test_report_is_one_file_with_tables_cis_and_escaped_text(report: Path):
    text = report.read_text(encoding="utf-8")
    assert "<script src=" not in text and "cdn.plot.ly" not in text.split("</script>")[-1]
    assert HOSTILE not in text and "&lt;img src=x" in text
    for heading in ("Success by site", "Success by task type", "Table 4", f"Comparison: {OPAGENT} against {BABEL}",
                    "Planning paradigms"):  # fmt: skip
        assert heading in text
    assert "McNemar exact p" in text and "left_out_why" in text
    assert not list(report.parent.glob("*.partial"))


@pytest.mark.browser
@pytest.mark.skipif(not chromium_available(), reason="chromium not installed")
def test_report_renders_its_charts_offline_in_chromium(chromium, report: Path):
    requests: list[str] = []
    context = chromium.new_context(offline=True, viewport={"width": 1300, "height": 1000})
    try:

        def block(route):
            if not route.request.url.startswith("file:"):
                requests.append(route.request.url)
                return route.abort()
            return route.continue_()

        context.route("**/*", block)
        page = context.new_page()
        page.goto(report.as_uri())
        page.wait_for_function(
            "() => window.Plotly && document.querySelectorAll('.plotly-graph-div .main-svg').length >= 7"
        )
        charts = page.locator(".plotly-graph-div")
        assert (
            charts.count() == 7
        )  # site, task type, hard subset, termination, reviewer label, failure cause; paradigms
        bars = page.locator(".plotly-graph-div .bars .point path")
        assert bars.count() > 20
        # Counts on the bars, or beside them past their whisker (dashboard.charts.bar_labels).
        texts = page.locator(
            ".plotly-graph-div .bars .point text, .plotly-graph-div .textpoint text"
        ).evaluate_all("els => els.map(e => e.textContent)")
        assert len([t for t in texts if re.fullmatch(r"\d+\.\d % · \d+/\d+", t)]) > 20
        assert page.title() != "pwned"
        assert HOSTILE in page.locator("body").inner_text()  # shown as text, never run
        page.screenshot(path=str(report.with_suffix(".png")), full_page=True)
    finally:
        context.close()
    assert requests == []  # nothing asked for the network


@pytest.mark.slow
def test_default_report_compares_runs_that_share_tasks(demo_db, tmp_path):
    """With no --run the report covers every run, and its comparison pairs two runs that scored tasks
    in common (the same rule as the Compare page), not simply the first two."""
    out = tmp_path / "all.html"
    result = CliRunner().invoke(app, ["--db", str(demo_db), "report", "--html", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text(encoding="utf-8")
    assert f"Comparison: {OPAGENT} against {BABEL}" in text
    paired = re.search(r"paired over (\d+) tasks both scored", text)
    with Store(demo_db, read_only=True) as s:
        both = s.query(
            "SELECT count(*) FROM evaluations a JOIN evaluations b USING (task_id) WHERE a.run = ? AND b.run = ?",
            [BABEL, OPAGENT],
        )[0][0]
    assert paired and int(paired.group(1)) == both > 0
