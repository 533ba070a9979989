"""The Metrics page's read models on the demo database: configurations, Table 7's left-out tasks, the
paradigm view."""

from __future__ import annotations

import pandas as pd
import pytest
from demo_support import GOLD

from core.queries import metrics_view as mv
from core.store import Store

RUNS = ("opagent", "webarena-render-babelcloud", "wav-demo")


def test_choices_table7_and_paradigms(demo_db):
    with Store(demo_db, read_only=True) as s:
        choices = mv.metric_choices(s, RUNS)
        assert choices.iloc[0][["gold_set", "judge_config", "preset", "runs"]].tolist() == [
            GOLD, "offline", "default", 2,
        ]  # fmt: skip
        seven = mv.paper_table(s, "Table 7", RUNS, GOLD, "offline", "default").set_index("run")
        counts = dict(
            s.query(
                "SELECT run, count(*) FILTER (WHERE coalesce(n_requirements, 0) < 2) FROM metrics"
                " WHERE gold_set = ? GROUP BY run",
                [GOLD],
            )
        )
        assert seven.loc["opagent", "left_out"] == counts["opagent"]
        assert seven.loc["opagent", "left_out_why"] == f"fewer_than_2_requirements {counts['opagent']}"
        view = mv.paradigm_view(s, RUNS, GOLD, "offline", "default")
        assert view["paradigm"].tolist() == ["step_by_step", "step_by_step", "unknown"]
        opagent = view.set_index("run").loc["opagent"]
        n = s.query("SELECT count(ssr) FROM metrics WHERE run = 'opagent'")[0][0]
        assert (
            opagent["ssr_n"] == n and opagent["ssr_ci_low"] <= opagent["ssr_mean"] <= opagent["ssr_ci_high"]
        )


def test_table3_counts_runs_without_trajectories(demo_db):
    """wav-demo (official run: agent responses and evaluations, no trajectory) has its tasks in Table 3."""
    with Store(demo_db, read_only=True) as s:
        three = mv.paper_table(s, "Table 3", ("opagent", "wav-demo"), None, None, "default")
        wav = three[(three["run"] == "wav-demo") & (three["domain"] == "all")].iloc[0]
        passed, n = s.query(
            "SELECT count(*) FILTER (WHERE status = 'success'), count(*) FROM evaluations WHERE run = 'wav-demo'"
        )[0]
        assert wav["n"] == n == 2 and wav["mean"] == passed / n


# Table 3's figures computed apart, in SQL: each task's verdict (the evaluation; else the source's success;
# else reward >= 1), then per domain and run the tasks with one, their mean and those without.
_TABLE3_BY_SQL = """
    WITH ids AS (SELECT run, task_id FROM trajectories WHERE is_answer UNION SELECT run, task_id FROM evaluations),
    o AS (
        SELECT ids.run, ids.task_id, coalesce(k.site_key, 'unknown') AS site_key,
               CASE WHEN e.status IS NOT NULL THEN CASE e.status WHEN 'success' THEN 1.0 WHEN 'failure' THEN 0.0 END
                    WHEN t.success IS NOT NULL THEN t.success::DOUBLE
                    WHEN t.reward IS NOT NULL THEN (t.reward >= 1)::DOUBLE END AS success
        FROM ids LEFT JOIN trajectories t ON t.run = ids.run AND t.task_id = ids.task_id AND t.is_answer
        LEFT JOIN evaluations e ON e.run = ids.run AND e.task_id = ids.task_id
        LEFT JOIN tasks k ON k.task_id = ids.task_id
    ),
    both_levels AS (SELECT run, task_id, site_key AS domain, success FROM o
                    UNION ALL SELECT run, task_id, 'all', success FROM o)
    SELECT b.domain, b.run, count(b.success) AS n, avg(b.success) AS mean,
           count(*) - count(b.success) AS left_out,
           avg(b.success - a.success) AS delta, count(b.success - a.success) AS paired_n
    FROM both_levels b LEFT JOIN both_levels a ON a.run = $first AND a.domain = b.domain AND a.task_id = b.task_id
    WHERE list_contains($runs, b.run) GROUP BY b.domain, b.run
"""


def test_table3_is_each_domains_success_and_paired_delta(demo_db):
    """Every row of Table 3 on the demo's runs against the same figures computed apart in SQL: n, mean,
    left-out tasks, and the delta against the first run over the tasks both scored."""
    runs = ("webarena-render-babelcloud", "opagent", "wav-demo")
    with Store(demo_db, read_only=True) as s:
        three = mv.paper_table(s, "Table 3", runs, None, None, "default")
        expected = s.query_df(_TABLE3_BY_SQL, {"runs": list(runs), "first": runs[0]})
    assert len(three) == len(expected) > len(runs)  # one row per domain and run with tasks there, and `all`
    got = three.set_index(["domain", "run"])
    for row in expected.itertuples(index=False):
        mine = got.loc[(row.domain, row.run)]
        assert (mine["n"], mine["left_out"]) == (row.n, row.left_out), (row.domain, row.run)
        assert mine["mean"] == pytest.approx(row.mean) if row.n else mine["mean"] is None
        assert mine["left_out_why"] == (f"no_verdict {row.left_out}" if row.left_out else "")
        if row.run == runs[0]:
            assert pd.isna(mine["delta"])
        else:
            assert mine["paired_n"] == row.paired_n
            assert mine["delta"] == pytest.approx(row.delta) if row.paired_n else pd.isna(mine["delta"])
            if row.paired_n >= 8:
                assert mine["delta_ci_low"] <= mine["delta"] <= mine["delta_ci_high"]
