"""Read models about runs: one row per run, success per site, problems and attempts."""

from __future__ import annotations

from typing import Any

import pandas as pd

from core.measure.stats import wilson_ci
from core.queries.defect_rate import confirmed_defects_sql, with_defect_columns
from core.store import Store

# The official per-site rule, stated wherever a per-site figure is shown.
MULTI_SITE_RULE = (
    "A task's site is its sorted sites joined with '-', as the official scorer counts them: "
    "multi-site tasks form their own bucket (e.g. gitlab-reddit)."
)


# A task's verdict: the stored evaluation; else the source's own success flag; else 'error' for an attempt
# that crashed or was interrupted (no verdict was ever reached: the importers store none); else its reward.
def verdicts_sql(one_run: bool = True) -> str:
    """SQL giving run, task_id, verdict, verdict_source for every task of a run (parameter `$run`) or of
    every run: each task with an evaluation, an answer trajectory, an agent response or an import problem.
    """
    only = "AND run = $run" if one_run else ""
    return f"""
        WITH ids AS (
            SELECT run, task_id FROM evaluations WHERE true {only}
            UNION SELECT run, task_id FROM trajectories WHERE is_answer {only}
            UNION SELECT run, task_id FROM agent_responses WHERE true {only}
            UNION SELECT run, task_id FROM import_problems WHERE task_id IS NOT NULL {only}
        )
        SELECT ids.run, ids.task_id,
               coalesce(e.status,
                        CASE WHEN t.success THEN 'success' WHEN NOT t.success THEN 'failure'
                             WHEN t.termination IN ('error', 'interrupted') THEN 'error'
                             WHEN t.reward >= 1 THEN 'success' WHEN t.reward < 1 THEN 'failure' END,
                        'unscored') AS verdict,
               coalesce(e.source, CASE WHEN t.success IS NOT NULL THEN 'source-success'
                                       WHEN t.termination IN ('error', 'interrupted') THEN 'termination'
                                       WHEN t.reward IS NOT NULL THEN 'source-reward' END) AS verdict_source
        FROM ids
        LEFT JOIN evaluations e ON e.run = ids.run AND e.task_id = ids.task_id
        LEFT JOIN trajectories t ON t.run = ids.run AND t.task_id = ids.task_id AND t.is_answer
    """


def run_names(store: Store) -> list[str]:
    """Every run, most recently imported first."""
    return [name for (name,) in store.query("SELECT name FROM runs ORDER BY imported_at DESC, name")]


def run_exists(store: Store, run: str) -> bool:
    return bool(store.query("SELECT 1 FROM runs WHERE name = ?", [run]))


def with_rate(df: pd.DataFrame, successes: str, n: str) -> pd.DataFrame:
    """Add success_rate, ci_low, ci_high (Wilson 95 %) from two count columns; NULL when n = 0."""
    cis = [wilson_ci(int(s), int(k)) for s, k in zip(df[successes], df[n], strict=True)]
    df["success_rate"] = [(s / k) if k else None for s, k in zip(df[successes], df[n], strict=True)]
    df["ci_low"] = [c[0] for c in cis]
    df["ci_high"] = [c[1] for c in cis]
    return df


def runs_table(store: Store) -> pd.DataFrame:
    """One row per run: what it is, how many tasks, success rate with its 95 % CI over the scored tasks,
    failures, errors, import problems and which metrics exist; `defects_moved` failed or errored tasks
    whose evaluator defect a reviewer confirmed, and the rate with them counted as passes
    (`with_defects_rate`, `with_defects`: core.queries.defect_rate, empty when none moves)."""
    df = store.query_df(
        f"""
        WITH verdicts AS ({verdicts_sql(one_run=False)}),
        confirmed AS ({confirmed_defects_sql("TRUE")}),
        counts AS (
            SELECT v.run, count(*) AS tasks,
                   count(*) FILTER (WHERE verdict IN ('success', 'failure', 'error')) AS scored,
                   count(*) FILTER (WHERE verdict = 'success') AS successes,
                   count(*) FILTER (WHERE verdict = 'failure') AS failures,
                   count(*) FILTER (WHERE verdict = 'error') AS errors,
                   count(*) FILTER (WHERE verdict IN ('failure', 'error') AND c.task_id IS NOT NULL) AS defects_moved,
                   string_agg(DISTINCT verdict_source, ', ' ORDER BY verdict_source) AS verdict_sources
            FROM verdicts v LEFT JOIN confirmed c ON c.run = v.run AND c.task_id = v.task_id GROUP BY v.run
        ),
        problems AS (SELECT run, count(*) AS import_problems FROM import_problems GROUP BY run),
        metric_sets AS (
            SELECT run, string_agg(DISTINCT gold_set || ' / ' || judge_config, ', ') AS metrics,
                   count(*) AS metric_rows
            FROM metrics GROUP BY run
        )
        SELECT r.name AS run, r.agent, r.model, r.paradigm, r.source_format AS source,
               coalesce(c.tasks, 0) AS tasks, coalesce(c.scored, 0) AS scored,
               coalesce(c.successes, 0) AS successes, coalesce(c.failures, 0) AS failures,
               coalesce(c.errors, 0) AS errors, coalesce(c.defects_moved, 0) AS defects_moved,
               coalesce(p.import_problems, 0) AS import_problems,
               c.verdict_sources, m.metrics, r.imported_at
        FROM runs r
        LEFT JOIN counts c ON c.run = r.name
        LEFT JOIN problems p ON p.run = r.name
        LEFT JOIN metric_sets m ON m.run = r.name
        ORDER BY r.imported_at DESC, r.name
        """
    )
    return with_defect_columns(with_rate(df, "successes", "scored"))


def success_by_site(store: Store, run: str) -> pd.DataFrame:
    """Per official site key: scored tasks, successes, rate and Wilson 95 % CI (unscored tasks left out,
    counted in `unscored`)."""
    df = store.query_df(
        f"""
        WITH v AS ({verdicts_sql()})
        SELECT k.site_key AS site,
               count(*) FILTER (WHERE v.verdict <> 'unscored') AS scored,
               count(*) FILTER (WHERE v.verdict = 'success') AS successes,
               count(*) FILTER (WHERE v.verdict = 'unscored') AS unscored
        FROM v JOIN tasks k USING (task_id)
        GROUP BY k.site_key ORDER BY scored DESC, site
        """,
        {"run": run},
    )
    return with_rate(df, "successes", "scored")


def several_attempts(store: Store, run: str) -> list[dict[str, Any]]:
    """Tasks of `run` with more than one episode, and which episode is the run's answer for each."""
    return store.query_dicts(
        "SELECT task_id, count(*) AS attempts, any_value(episode) FILTER (WHERE is_answer) AS answer"
        " FROM trajectories WHERE run = ? GROUP BY task_id HAVING count(*) > 1 ORDER BY task_id",
        [run],
    )
