"""Paper tables and bootstrap CIs over stored metrics; judge agreement; the CLI wrappers."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from core.ingest.records import RunMeta, TrajectoryRecord
from core.ingest.writer import import_run
from core.measure import stats
from core.measure.judge.cascade import CascadeJudge
from core.measure.judge_agreement import cohen_kappa, measure, read_labels
from core.queries import paper_tables as pt
from core.store import insert_rows, utcnow


def test_bootstrap_is_deterministic_and_brackets_the_mean():
    values = [0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0, 0.0]
    low, high = stats.bootstrap_ci(values)
    assert (low, high) == stats.bootstrap_ci(values)
    assert low < np.mean(values) < high
    assert stats.bootstrap_ci([]) == (None, None)
    summary = stats.summarize([1.0, None, 0.0])
    assert summary["n"] == 2 and summary["mean"] == 0.5
    assert summary["sd"] == pytest.approx(np.std([1, 0], ddof=1))


def test_wilson_interval_stays_in_range_at_the_edges():
    assert stats.wilson_ci(0, 0) == (None, None)
    low, high = stats.wilson_ci(0, 5)
    assert low == 0.0 and 0.4 < high < 0.5  # 0/5 is not "certainly 0 %"
    low, high = stats.wilson_ci(5, 5)
    assert high == 1.0 and 0.5 < low < 0.6
    low, high = stats.wilson_ci(552, 812)
    assert low < 552 / 812 < high and high - low < 0.07


def test_paired_difference():
    mean, low, high = stats.paired_bootstrap_diff([0, 0, 1, 1, 0, 1, 1, 0, 1, 1], [1] * 10)
    assert mean == 0.4 and low <= 0.4 <= high


def test_bootstrap_degenerate_inputs():
    # One value: no interval (a zero-width one would claim certainty); the SD is undefined too. Below
    # MIN_N_BOOTSTRAP values there is no interval either (tests/test_small_samples.py).
    assert stats.bootstrap_ci([0.7]) == (None, None)
    assert stats.bootstrap_ci([0.7, None, float("nan")]) == (None, None)
    assert stats.summarize([0.7])["sd"] is None and stats.summarize([0.7])["ci_low"] is None
    assert stats.paired_bootstrap_diff([0.0], [1.0]) == (1.0, None, None)
    assert stats.paired_bootstrap_diff([], []) == (None, None, None)
    # All one label: a real, zero-width interval.
    assert stats.bootstrap_ci([1.0] * stats.MIN_N_BOOTSTRAP) == (1.0, 1.0)
    # Cohen's kappa: empty, one class on both sides (chance agreement total) and n = 1 are undefined.
    from core.measure.judge_agreement import kappa_ci

    assert cohen_kappa(np.array([], bool), np.array([], bool)) is None
    assert cohen_kappa(np.array([True]), np.array([True])) is None
    assert kappa_ci(np.array([True]), np.array([True])) == (None, None)
    assert kappa_ci(np.array([True] * 5), np.array([True] * 5)) == (None, None)
    assert cohen_kappa(np.array([1, 1, 0, 0], bool), np.array([0, 0, 1, 1], bool)) == -1.0


def _metric_row(run, task_id, **values):
    base = {"run": run, "task_id": task_id, "episode": "0", "gold_set": "g", "judge_config": "offline",
            "preset": "default", "computed_at": utcnow(), "approximate": False, "unresolved_pairs": 0}  # fmt: skip
    return {**base, **values}


def _two_runs(store):
    for run, outcomes in (("a", [1.0, 0.0, 0.0]), ("b", [1.0, 1.0, 0.0])):
        import_run(
            store, RunMeta(name=run, source_format="jsonl", source_path="x"),
            [TrajectoryRecord(task_id=t, reward=r, termination="answered", final_answer="x")
             for t, r in zip((0, 1, 7), outcomes, strict=True)],
        )  # fmt: skip
    with store.transaction() as cur:
        insert_rows(cur, "metrics", [
            _metric_row("a", 0, ssr=1.0, psr=None, n_gold=4, n_agent=8, success=True, n_requirements=3,
                        answer_category="produced_answer"),
            _metric_row("a", 1, ssr=0.5, psr=0.5, n_gold=6, n_agent=10, success=False, n_requirements=2,
                        answer_category="early_stop"),
            _metric_row("a", 7, ssr=None, n_gold=None, n_agent=3, success=False, n_requirements=0,
                        answer_category="na_answer"),
            _metric_row("b", 0, ssr=1.0, n_gold=4, n_agent=5, success=True, n_requirements=3,
                        answer_category="na_answer"),
        ])  # fmt: skip


def test_tables_over_tasks_store(tasks_store):
    _two_runs(tasks_store)
    t3 = pt.success_by_domain(tasks_store, ["a", "b"])
    overall = t3[(t3.domain == "all") & (t3.run == "b")].iloc[0]
    assert overall["mean"] == pytest.approx(2 / 3) and overall["delta"] == pytest.approx(1 / 3)
    assert overall["paired_n"] == 3
    t4 = pt.metric_means(tasks_store, ["a", "b"], gold_set="g", judge_config="offline")
    ssr_a = t4[(t4.run == "a") & (t4.metric == "ssr")].iloc[0]
    assert ssr_a["n"] == 2 and ssr_a["mean"] == 0.75  # the NULL is left out, not counted as 0
    ssr_ok = t4[(t4.run == "a") & (t4.metric == "ssr_successful")].iloc[0]
    assert ssr_ok["n"] == 1 and ssr_ok["mean"] == 1.0
    t6 = pt.steps_per_task(tasks_store, ["a"], gold_set="g")
    row = t6[t6.domain == "all"].iloc[0]
    assert row["human_mean"] == 5.0 and row["agent_mean"] == 9.0
    t7 = pt.answer_categories(tasks_store, ["a"], gold_set="g")
    row = t7.iloc[0]
    assert row["tasks"] == 2 and row["produced_answer"] == 1 and row["early_stop"] == 1
    assert row["legitimate_share"] == 0.5
    assert pt.default_metrics_selection(tasks_store, ["a"]) == ("g", "offline")


def test_report_cli_json(tasks_store):
    from core.cli.main import app

    _two_runs(tasks_store)
    path = tasks_store.path
    tasks_store.close()
    result = CliRunner().invoke(
        app, ["--db", str(path), "report", "--run", "a", "--run", "b", "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    tables = [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]
    assert [t["table"].split(":")[0] for t in tables] == ["Table 3", "Table 4", "Table 6", "Table 7"]


def test_judge_agreement(tmp_path):
    labels = tmp_path / "labels.csv"
    labels.write_text(
        "kind,a,b,label\n"
        "gold_vs_agent,Click on the 'Reports' link,Click link 'REPORTS',1\n"
        "gold_vs_agent,Scroll down,Click link 'Reports',0\n"
        "requirement_in_answer,Massachusetts,Massachusetts,true\n"
        "requirement_in_answer,New York,Massachusetts,false\n"
        "gold_vs_agent,Click 'Next page',Click link 'Page 2',1\n"
    )
    result = measure(CascadeJudge("offline"), read_labels(labels))
    assert result.n == 5 and result.unresolved == 0
    assert result.accuracy == pytest.approx(0.8)
    assert result.per_stage["rule"]["error_rate"] == 0.0
    assert cohen_kappa(np.array([1, 0, 1, 0], bool), np.array([1, 0, 1, 0], bool)) == 1.0
    assert cohen_kappa(np.array([1, 1], bool), np.array([1, 1], bool)) is None


def test_judge_agreement_bad_label(tmp_path):
    from core.errors import InputError

    labels = tmp_path / "labels.csv"
    labels.write_text("kind,a,b,label\ngold_vs_agent,a,b,maybe\n")
    with pytest.raises(InputError, match="line 2"):
        read_labels(labels)
