"""Read models about runs: one row per run, success per site, problems and attempts."""

from __future__ import annotations

from typing import Any

import pandas as pd

from core.measure.run_summaries import VERDICT_SQL, verdict_joins, verdicts_sql
from core.measure.stats import wilson_ci
from core.queries.defect_rate import confirmed_defects_sql, with_defect_columns
from core.store import Store

# The official per-site rule, stated wherever a per-site figure is shown.
MULTI_SITE_RULE = (
    "A task's site is its sorted sites joined with '-', as the official scorer counts them: "
    "multi-site tasks form their own bucket (e.g. gitlab-reddit)."
)


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
    failures, errors, import problems and which metrics exist (its `run_summaries` row, kept by the writers:
    core.measure.run_summaries); `defects_moved` failed or errored tasks whose evaluator defect a reviewer
    confirmed, and the rate with them counted as passes (`with_defects_rate`, `with_defects`:
    core.queries.defect_rate, empty when none moves). Reads one row per run, whatever their size."""
    df = store.query_df(
        f"""
        WITH confirmed AS ({confirmed_defects_sql("TRUE")}),
        moved AS (
            SELECT c.run, count(*) AS defects_moved FROM confirmed c {verdict_joins("c")}
            WHERE {VERDICT_SQL} IN ('failure', 'error') GROUP BY c.run
        )
        SELECT r.name AS run, r.agent, r.model, r.paradigm, r.source_format AS source,
               coalesce(s.tasks, 0) AS tasks, coalesce(s.scored, 0) AS scored,
               coalesce(s.successes, 0) AS successes, coalesce(s.failures, 0) AS failures,
               coalesce(s.errors, 0) AS errors, coalesce(m.defects_moved, 0) AS defects_moved,
               coalesce(s.import_problems, 0) AS import_problems, s.verdict_sources, s.metrics, r.imported_at
        FROM runs r
        LEFT JOIN run_summaries s ON s.run = r.name
        LEFT JOIN moved m ON m.run = r.name
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
