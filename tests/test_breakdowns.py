"""Breakdowns read model on the demo database: counts equal the stored verdicts, the per-site numbers
equal the official CLI's `per_site`, and every bucket filters Triage to exactly the tasks it counts."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from demo_support import BABEL, OPAGENT, WAV

from core.queries import breakdowns, triage
from core.store import Store

RUNS = (WAV, OPAGENT, BABEL)


@pytest.fixture(scope="module")
def demo(demo_db):
    with Store(demo_db, read_only=True) as s:
        yield s


@pytest.fixture(scope="module")
def table(demo):
    return breakdowns.breakdowns(demo, RUNS)


def test_every_dimension_counts_every_task_once(demo, table):
    for run in RUNS:
        tasks = len(triage.triage_table(demo, run))
        for dimension in breakdowns.DIMENSIONS:
            part = table[(table["run"] == run) & (table["dimension"] == dimension)]
            assert part["value"].is_unique
            assert int((part["scored"] + part["unscored"]).sum()) == tasks, (run, dimension)
    for row in table[table["scored"] > 0].itertuples():
        assert row.successes + row.failures + row.errors == row.scored
        assert row.ci_low <= row.success_rate <= row.ci_high


def test_task_type_and_hard_subset_match_the_tasks_table(demo, table):
    expected = dict(
        demo.query(
            "SELECT k.task_type, count(*) FILTER (WHERE e.status = 'success') FROM evaluations e"
            " JOIN tasks k USING (task_id) WHERE e.run = ? GROUP BY 1",
            [BABEL],
        )
    )
    part = table[(table["run"] == BABEL) & (table["dimension"] == "task type")]
    assert dict(zip(part["value"], part["successes"], strict=True)) == expected
    hard = table[(table["run"] == BABEL) & (table["dimension"] == "hard subset")]
    n_hard = demo.query(
        "SELECT count(*) FROM evaluations JOIN tasks USING (task_id) WHERE run = ? AND in_hard_subset",
        [BABEL],
    )[0][0]
    assert hard.set_index("value").loc["hard", "scored"] == n_hard


def test_every_bucket_filters_triage_to_exactly_its_tasks(demo, table):
    for run in (OPAGENT, BABEL):
        tasks = triage.triage_table(demo, run)
        for row in table[table["run"] == run].itertuples():
            params = {row.triage_param: [row.value]}
            flt = triage.filter_from_params(lambda name, p=params: p.get(name, []))
            shown = triage.apply_filter(tasks, flt)
            assert len(shown) == row.scored + row.unscored, (run, row.dimension, row.value)
            assert sum(r.verdict == "success" for r in shown.rows) == row.successes


@pytest.mark.slow
def test_per_site_equals_the_official_cli(shipped_data: Path, tmp_path: Path, demo):
    """wav-demo is scored by the official engine: its per-site figures are the official CLI's own."""
    wv = shipped_data / "webarena-verified"
    out = tmp_path / "run"
    shutil.copytree(wv / "demo-run", out)
    for stale in out.glob("*/eval_result.json"):
        stale.unlink()
    subprocess.run(
        [sys.executable, "-m", "webarena_verified", "eval-tasks", "--output-dir", str(out), "--config",
         str(wv / "config.demo.json")],
        check=True, capture_output=True,
    )  # fmt: skip
    official = json.loads((out / "eval_results.json").read_text())["summary"]["per_site"]
    ours = breakdowns.breakdowns(demo, [WAV])
    ours = ours[ours["dimension"] == "site"].set_index("value")
    assert set(ours.index) == set(official)
    for site, theirs in official.items():
        row = ours.loc[site]
        assert (row["scored"], row["successes"], row["failures"], row["errors"]) == (
            theirs["total"],
            theirs["success_count"],
            theirs["failure_count"],
            theirs["error_count"],
        )


def test_missing_values_are_their_own_bucket(demo):
    # wav-demo has agent responses and no trajectory: no termination recorded.
    frame = breakdowns.task_verdicts(demo, [WAV])
    assert set(frame["termination"]) == {triage.NONE}
    tasks = triage.triage_table(demo, WAV)
    shown = triage.apply_filter(tasks, triage.TriageFilter(terminations=(triage.NONE,)))
    assert len(shown) == len(tasks) == 2


def test_label_buckets_follow_triage_with_task_step_and_event_labels(demo_db: Path, tmp_path: Path):
    # A copy of the demo: labels on a task, on another task's step, and a correction that clears one.
    from core.review.annotations import annotate

    db = tmp_path / "labelled.duckdb"
    shutil.copy(demo_db, db)
    run = OPAGENT
    with Store(db) as store:
        tasks = triage.triage_table(store, run).task_ids()
        step = store.query(
            "SELECT task_id, episode, idx FROM steps WHERE run = ? AND task_id <> ? ORDER BY task_id LIMIT 1",
            [run, tasks[0]],
        )[0]
        annotate(store, "task", "ada", run=run, task_id=tasks[0], label="wrong element")
        annotate(store, "task", "ada", run=run, task_id=tasks[0], label="gave up early")  # a correction
        annotate(store, "step", "ada", run=run, task_id=step[0], episode=step[1], step_idx=step[2],
                 label="wrong element")  # fmt: skip
        annotate(store, "task", "bo", run=run, task_id=step[0], label="context drift")
        table = breakdowns.breakdowns(store, [run])
        labels = table[table["dimension"] == "reviewer label"].set_index("value")
        assert labels.loc["gave up early", "scored"] + labels.loc["gave up early", "unscored"] == 1
        assert labels.loc["wrong element", "scored"] + labels.loc["wrong element", "unscored"] == 1
        assert labels.loc["context drift", "scored"] + labels.loc["context drift", "unscored"] == 1
        rows = triage.triage_table(store, run)
        for value, row in labels.iterrows():
            shown = triage.apply_filter(rows, triage.TriageFilter(labels=(value,)))
            assert len(shown) == row["scored"] + row["unscored"], value
        assert int((labels["scored"] + labels["unscored"]).sum()) == len(rows) + 1  # step[0] counts twice


def test_both_breakdown_tables_configure_rates_and_intervals_one_way(
    open_page, demo_db: Path, tmp_path: Path, repo_root
):
    """The success-rate tabs and the failure-cause tab show a rate in words, then the rate and its interval
    to three decimals, from one definition (dashboard.components.tables.rate_columns)."""
    db = tmp_path / "demo.duckdb"  # a copy: this module's fixture holds the demo open read-only
    shutil.copy(demo_db, db)
    configs = {}
    for dim in ("site", "failure cause"):
        at = open_page(db, "views/breakdowns.py", runs=[OPAGENT, BABEL], dim=dim)
        (frame,) = at.dataframe
        columns = json.loads(frame.proto.columns)
        columns.pop("_index", None)
        configs[dim] = list(columns.values())[-4:]  # the rate in words, the rate, CI low, CI high
    site, cause = configs["site"], configs["failure cause"]
    assert [c["type_config"] for c in site] == [c["type_config"] for c in cause]
    assert site[0]["type_config"] == {"type": "text"} and site[1]["type_config"]["format"] == "%.3f"
    assert site[2:] == cause[2:] and [c["label"] for c in cause[2:]] == ["CI low", "CI high"]
    defined = [
        path.name
        for path in sorted((repo_root / "dashboard").rglob("*.py"))
        if '"CI low"' in path.read_text(encoding="utf-8")
    ]
    assert defined == ["tables.py"]
