"""`trajreview show`: the task page in the terminal, on the demo database's real runs."""

from __future__ import annotations

import json

from cli_support import run_cli
from demo_support import GOLD, OPAGENT
from typer.testing import CliRunner

from core.cli.main import app
from core.store import Store

runner = CliRunner()


def _show(db, *args):
    return runner.invoke(app, ["--db", str(db), "show", *args], catch_exceptions=False)


def test_show_json_carries_what_the_task_page_shows(demo_db):
    result = _show(demo_db, "--run", OPAGENT, "--task", "414", "--format", "json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    with Store(demo_db, read_only=True) as s:
        n_steps = s.query(
            "SELECT count(*) FROM steps s JOIN trajectories t USING (run, task_id, episode)"
            " WHERE s.run = ? AND s.task_id = 414 AND t.is_answer",
            [OPAGENT],
        )[0][0]
        psr_reason = json.loads(
            s.query("SELECT null_reasons FROM metrics WHERE run = ? AND task_id = 414", [OPAGENT])[0][0]
        )["psr"]
        n_gold = s.query(
            "SELECT count(*) FROM gold_steps WHERE gold_set = ? AND task_id = 414 AND alternative = 0", [GOLD]
        )[0][0]
    assert report["verdict"] == "failure" and report["verdict_source"] == "opagent-score"
    assert len(report["steps"]) == n_steps == 6 and report["steps"][1]["readable"].startswith("Click")
    (metrics,) = report["metrics"]
    assert metrics["psr"] is None and psr_reason == "no_requirements"
    assert "no requirements" in metrics["null_reasons"]["psr"]  # the reason in words, not a bare NULL
    assert report["alignment"]["n_gold"] == n_gold and report["alignment"]["matched"] >= 1


def test_show_table_explains_an_engine_failure(demo_db):
    result = _show(demo_db, "--run", "wav-demo", "--task", "107")
    assert result.exit_code == 0, result.output
    assert "verdict: failure (decided by webarena-verified)" in result.output
    assert "why: task_type: expected RETRIEVE, agent said NAVIGATE" in result.output
    assert "steps: none recorded" in result.output


def test_show_refuses_unknown_run_task_and_format_in_one_line(demo_db):
    for args, message in (
        (["--run", "nope", "--task", "1"], "no run named 'nope'"),
        (["--run", "wav-demo", "--task", "5"], "no task 5 in run 'wav-demo'"),
        (
            ["--run", "wav-demo", "--task", "107", "--format", "xml"],
            "--format: 'xml' is not one of table, json",
        ),
    ):
        done = run_cli("show", *args, db=demo_db)
        assert done.returncode == 2 and done.stdout == ""
        assert done.stderr.strip() == f"error: {message}"
