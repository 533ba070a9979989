"""Every page of the dashboard through Streamlit's AppTest, on the real demo data and on the edge
cases a reviewer meets: an empty database, a missing one, unknown runs and tasks, a run without metrics,
a task without gold, a task without a trace."""

from __future__ import annotations

import re
import shutil
from urllib.parse import urlsplit

import orjson
from apptest_support import page_texts
from demo_support import BABEL, GOLD, NAV, OPAGENT, WAV

from core.ingest.demo_server_error import SERVER_ERROR_BASE, SERVER_ERROR_TASK, SERVER_ERROR_URL
from core.paths import SHIPPED_DATA
from core.store import Store

RUNS, TRIAGE, TASK = "views/runs.py", "views/triage.py", "views/task.py"


def test_runs_page_lists_every_run_with_its_success_rate(open_page, demo_db):
    at = open_page(demo_db)
    assert at.title[0].value == "Runs"
    table = at.dataframe[0].value
    assert set(table["run"]) == {WAV, NAV, BABEL, OPAGENT}
    babel = table[table["run"] == "webarena-render-babelcloud"].iloc[0]
    with Store(demo_db, read_only=True) as s:
        passed, total = s.query(
            "SELECT count(*) FILTER (WHERE status = 'success'), count(*) FROM evaluations"
            " WHERE run = 'webarena-render-babelcloud'"
        )[0]
    assert babel["scored"] == total and babel["success"].startswith(f"{100 * passed / total:.1f} %")
    assert f"of {total}" in babel["success"]  # every rate says how many tasks it covers
    assert "multi-site tasks form their own bucket" in page_texts(at)
    assert [t.label for t in at.tabs] == table["run"].tolist()[:3]  # one success-by-site tab per charted run
    assert len(at.get("plotly_chart")) == 1  # only the open tab builds its chart


def test_empty_database_guides_on_every_page(open_page, tmp_path):
    import typer.main

    from core.cli.main import import_app

    Store(tmp_path / "empty.duckdb").close()
    runs_page = page_texts(open_page(tmp_path / "empty.duckdb"))
    assert "No runs imported yet" in runs_page and "make demo" in runs_page
    # Every import command the CLI has, OpAgent's included, each with what it reads.
    commands = typer.main.get_command(import_app).commands
    assert {"wav-run", "agentlab", "browsergym", "opagent", "webarena-render", "jsonl"} <= set(commands)
    assert all(f"`trajreview import {name}`" in runs_page for name in commands)
    for name in ("wav-run", "opagent", "requirements"):  # the page's words are the CLI's listing's words
        assert commands[name].get_short_help_str(limit=500) in runs_page
    assert "No runs imported yet" in page_texts(open_page(tmp_path / "empty.duckdb", TRIAGE))
    assert "Pick a task in Triage" in page_texts(open_page(tmp_path / "empty.duckdb", TASK))


def test_the_import_group_is_built_from_the_one_list_of_import_commands():
    """core.ingest.commands.IMPORT_COMMANDS is the CLI's import group, in its order, with its descriptions;
    the Runs page reads the same list (above)."""
    import typer.main

    from core.cli.main import import_app
    from core.ingest.commands import IMPORT_COMMANDS

    commands = typer.main.get_command(import_app).commands
    assert list(commands) == list(IMPORT_COMMANDS)
    described = {name: c.get_short_help_str(limit=500) for name, c in commands.items()}
    assert described == {name: what for name, what in IMPORT_COMMANDS.items()}


def test_missing_database_is_one_line_not_a_traceback(open_page, tmp_path):
    at = open_page(tmp_path / "missing.duckdb")
    assert any("no such database" in e.value for e in at.error)
    assert not (tmp_path / "missing.duckdb").exists()  # the app never creates a database by accident


def test_triage_filters_come_from_the_url(open_page, demo_db):
    at = open_page(demo_db, TRIAGE, run=BABEL, verdict="failure", site="gitlab")
    table = at.dataframe[0].value
    assert len(table) > 0 and set(table["site"]) == {"gitlab"}
    assert {v.split()[-1] for v in table["verdict"]} == {"failure"}
    with Store(demo_db, read_only=True) as s:
        expected = s.query(
            "SELECT count(*) FROM evaluations e JOIN tasks t USING (task_id) WHERE e.run = ? AND e.status = 'failure'"
            " AND t.site_key = 'gitlab'",
            [BABEL],
        )[0][0]
        (tasks,) = s.query("SELECT count(*) FROM evaluations WHERE run = ?", [BABEL])[0]
    assert len(table) == expected
    assert f"**{expected}** of {tasks} tasks" in page_texts(at)


def test_triage_search_finds_intent_answer_and_task_id(open_page, demo_db):
    at = open_page(demo_db, TRIAGE, run=OPAGENT, q="746")
    assert list(at.dataframe[0].value["task_id"]) == [746]
    at = open_page(demo_db, TRIAGE, run=OPAGENT, q="$1774.62")  # the agent's answer to task 51
    assert list(at.dataframe[0].value["task_id"]) == [51]
    at = open_page(demo_db, TRIAGE, run=OPAGENT, q="Chatham university")  # the intent of task 55
    assert list(at.dataframe[0].value["task_id"]) == [55]


def test_unknown_run_and_task_are_one_line_with_a_way_back(open_page, demo_db):
    at = open_page(demo_db, TRIAGE, run="no-such-run")
    assert any("No run named 'no-such-run'" in e.value for e in at.error) and at.get("page_link")
    at = open_page(demo_db, TASK, run="no-such-run", task="1")
    assert any("No run named" in e.value for e in at.error)
    at = open_page(demo_db, TASK, run=OPAGENT, task="999")
    assert any("has no task 999" in e.value for e in at.error) and at.get("page_link")
    at = open_page(demo_db, TASK, run=OPAGENT, task="not-a-number")
    assert [e.value for e in at.error] == [
        "This link is bad: task not\\-a\\-number is not a task id (a whole number)."
    ]
    assert not at.selectbox and "Pick a task in Triage" not in page_texts(at)


def test_task_page_shows_verdict_steps_and_answer(open_page, demo_db):
    at = open_page(demo_db, TASK, run=OPAGENT, task="51")
    text = page_texts(at)
    assert "Task 51" in text and "$1774.62" in text  # the agent's answer
    assert at.tabs and [t.label for t in at.tabs] == ["Steps", "Alignment", "Network", "Evaluation", "Gold"]
    assert "Step 0" in text and at.select_slider(key="url:step").value == 0


def test_wav_task_explains_failure_and_shows_its_trace(open_page, demo_db):
    at = open_page(demo_db, TASK, run=WAV, task="107", tab="Network")
    text = page_texts(at)
    assert "task_type: expected RETRIEVE" in text  # the engine's sentence, in the header
    # Static resources hidden by default: the suffix rule's files, files under Magento's versioned static
    # path (/static/version…/: templates, translations) and static MIME types — counted here from the HAR.
    entries = orjson.loads(
        (SHIPPED_DATA / "webarena-verified" / "demo-run" / "107" / "network.har").read_bytes()
    )
    shown = [
        e for e in entries["log"]["entries"]
        if not re.search(r"\.(css|js|png|jpe?g|gif|svg|woff2?|ttf|ico|webp)$", urlsplit(e["request"]["url"]).path)
        and "/static/version" not in e["request"]["url"]
        and not re.match(r"(image/|font/|text/css|application/(x-)?javascript)", e["response"]["content"].get("mimeType", ""))
    ]  # fmt: skip
    assert 0 < len(shown) < 50 and f"{len(shown)} of 359 events shown" in text
    at = open_page(demo_db, TASK, run=WAV, task="107", tab="Network", static="true")
    assert "359 of 359 events shown" in page_texts(at)
    at = open_page(demo_db, TASK, run=WAV, task="107", tab="Evaluation")
    assert any(e.label.endswith("AgentResponseEvaluator #0") for e in at.expander)
    assert at.get("download_button")


def test_network_tab_shows_the_constructed_5xx(open_page, demo_db):
    # Task 374's trace: the real HAR of 107 plus one entry built from the official template, answered 502.
    har = orjson.loads(SHIPPED_DATA.joinpath("webarena-verified", *SERVER_ERROR_BASE).read_bytes())
    base = len(har["log"]["entries"])
    at = open_page(demo_db, TASK, run=NAV, task=str(SERVER_ERROR_TASK), tab="Network", status="5xx")
    text = page_texts(at)
    assert f"1 of {base + 1} events shown" in text  # the 5xx filter keeps the one 502, of the whole trace
    [table] = at.dataframe
    assert table.value[["seq", "status", "url"]].values.tolist() == [[base, 502, SERVER_ERROR_URL]]
    assert f"#{base} · GET · status 502" in text  # the engine's nearest event, named beside its verdict
    assert "status: expected 200, got 502" in text
    at = open_page(
        demo_db, TASK, run=NAV, task=str(SERVER_ERROR_TASK), tab="Network", status="5xx", ev=str(base)
    )
    assert f"**Event #{base}** · GET · status 502 · " in page_texts(at)  # its detail


def test_task_without_trace_says_so(open_page, demo_db):
    at = open_page(demo_db, TASK, run=OPAGENT, task="51", tab="Network")
    assert "No network trace for this task" in page_texts(at)


def test_task_without_gold_says_so(open_page, demo_db):
    with Store(demo_db, read_only=True) as s:
        (task,) = s.query(
            "SELECT min(task_id) FROM trajectories WHERE run = ? AND task_id NOT IN (SELECT task_id FROM gold_steps)",
            [BABEL],
        )[0]
    at = open_page(demo_db, TASK, run=BABEL, task=str(task), tab="Alignment")
    assert "No human gold for this task" in page_texts(at)


def test_alignment_joins_gold_and_agent_steps(open_page, demo_db):
    at = open_page(demo_db, TASK, run=OPAGENT, task="2", tab="Alignment")
    table = at.table[0].value
    assert {"human gold", "stated action (plan)", "executed action", "judge", "marks"} <= set(table.columns)
    with Store(demo_db, read_only=True) as s:
        n_gold = s.query(
            "SELECT count(*) FROM gold_steps WHERE gold_set = ? AND task_id = 2 AND alternative = 0", [GOLD]
        )[0][0]
        pairs = s.query("SELECT count(*) FROM alignments WHERE run = ? AND task_id = 2", [OPAGENT])[0][0]
    assert (table["gold #"] != "").sum() == n_gold
    assert table["judge"].str.startswith("same").sum() == pairs
    assert "SSR" in [m.label for m in at.metric]


def test_run_without_metrics_offers_to_compute_them(open_page, demo_db, tmp_path):
    db = tmp_path / "demo.duckdb"
    shutil.copy(demo_db, db)
    with Store(db) as s, s.transaction() as cur:
        cur.execute("DELETE FROM metrics WHERE run = ?", [OPAGENT])
        cur.execute("DELETE FROM alignments WHERE run = ?", [OPAGENT])
    at = open_page(db, TASK, run=OPAGENT, task="2", tab="Alignment")
    assert "Metrics not computed for this configuration" in page_texts(at)
    at.button(key="compute-metrics").click().run()
    assert not at.exception
    with Store(db, read_only=True) as s:
        assert s.query("SELECT count(*) FROM metrics WHERE run = ?", [OPAGENT])[0][0] == 1
    assert "Metrics not computed for this configuration" not in page_texts(at)


def test_steps_tab_marks_observe_steps_and_shows_a_calls_raw_text(open_page, demo_db):
    """babelcloud's steps are its agent's tool calls: an observe-only call is marked and said to be left
    out of the metrics; the Raw text toggle shows the call's part of the session transcript."""
    run = BABEL  # task 166: two observe calls (list the tabs, take a screenshot), then five actions
    with Store(demo_db, read_only=True) as s:
        kinds = dict(s.query("SELECT idx, kind FROM steps WHERE run = ? AND task_id = 166", [run]))
        raw = s.query(
            "SELECT content FROM observations WHERE run = ? AND task_id = 166 AND idx = 2 AND kind = 'transcript'",
            [run],
        )[0][0].strip()  # shown as a code block, which drops the final newline
    assert kinds[0] == "observe" and kinds[2] == "action"
    at = open_page(demo_db, TASK, run=run, task="166", tab="Steps", step="0")
    texts = page_texts(at)
    assert "not counted in the step metrics" in texts and "Step 0 · :gray-badge[observe]" in texts
    assert "List the open tabs" in texts and raw not in texts  # raw text only when the toggle is on
    assert not any("kind" in d.value.columns for d in at.dataframe)  # the steps table only when asked
    at = open_page(demo_db, TASK, run=run, task="166", tab="Steps", step="2", raw="true", all_steps="true")
    texts = page_texts(at)
    assert "not counted in the step metrics" not in texts and raw in [c.value for c in at.code]
    assert "Click action completed successfully" in texts and "[a screenshot, not stored]" in texts
    table = at.dataframe[-1].value
    assert list(table.columns[:2]) == ["idx", "kind"] and (table["kind"] == "observe").sum() == 2
    assert len(table) == len(kinds)  # every step of the attempt
