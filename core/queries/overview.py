"""Read models of what the database holds: tasks per site, runs, computed metrics, failures."""

from __future__ import annotations

import pandas as pd

from core.store import Store


def tasks_per_site(store: Store) -> pd.DataFrame:
    """Task counts per official site key (multi-site tasks are their own bucket), with task types."""
    return store.query_df(
        """
        SELECT site_key,
               count(*) AS tasks,
               count(*) FILTER (WHERE task_type = 'retrieve') AS retrieve,
               count(*) FILTER (WHERE task_type = 'mutate') AS mutate,
               count(*) FILTER (WHERE task_type = 'navigate') AS navigate,
               count(*) FILTER (WHERE in_hard_subset) AS hard
        FROM tasks GROUP BY site_key ORDER BY tasks DESC, site_key
        """
    )


def runs_overview(store: Store) -> pd.DataFrame:
    """One row per run: what it is and how much of it there is."""
    return store.query_df(
        """
        SELECT r.name AS run, r.agent, r.model, r.paradigm, r.source_format, r.imported_at,
               (SELECT count(DISTINCT task_id) FROM trajectories t WHERE t.run = r.name) AS trajectories,
               (SELECT count(*) FROM evaluations e WHERE e.run = r.name) AS evaluated,
               (SELECT count(*) FROM evaluations e WHERE e.run = r.name AND e.status = 'success') AS successes,
               (SELECT count(*) FROM import_problems p WHERE p.run = r.name) AS problems
        FROM runs r ORDER BY r.imported_at DESC
        """
    )


def metrics_overview(store: Store) -> pd.DataFrame:
    """One row per computed (run, gold set, judge config, preset): task counts and metric means over the
    tasks where each metric is defined (NULLs left out, never counted as 0)."""
    return store.query_df(
        """
        SELECT run, gold_set, judge_config, preset, count(*) AS tasks,
               count(n_gold) AS tasks_with_gold,
               avg(ssr) AS ssr, count(ssr) AS n_ssr, avg(rr) AS rr, count(rr) AS n_rr,
               avg(repr) AS repr, count(repr) AS n_repr, avg(psr) AS psr, count(psr) AS n_psr,
               avg(ear) AS ear, count(ear) AS n_ear,
               count(*) FILTER (WHERE approximate) AS approximate_tasks,
               count(*) FILTER (WHERE unresolved_pairs > 0) AS unresolved_tasks,
               max(computed_at) AS computed_at
        FROM metrics GROUP BY run, gold_set, judge_config, preset ORDER BY computed_at DESC
        """
    )


def failed_tasks(store: Store, run: str) -> list[dict]:
    """Failed or errored tasks of a run with their one-sentence explanation, cannot-pass ones flagged."""
    return store.query_dicts(
        """
        SELECT e.task_id, t.site_key, e.status, e.explanation, e.error, e.cannot_pass
        FROM evaluations e LEFT JOIN tasks t USING (task_id)
        WHERE e.run = ? AND e.status <> 'success'
        ORDER BY e.cannot_pass, e.status DESC, e.task_id
        """,
        [run],
    )
