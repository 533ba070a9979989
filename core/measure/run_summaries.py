"""Each run's counts in one small row (`run_summaries`, migration 8), kept by the writers that change what
they count: a run's import (`core.ingest.writer`), its official scores (`core.scoring.stored_scores`) and
its metrics (`core.measure.metrics_run`) refresh the run's row inside their own transaction. The Runs page,
the report and `trajreview metrics` read one row per run instead of every task's verdict, so the landing
page's cost follows the number of runs, not of their tasks (docs/dashboard.md, "Speed").

A task's verdict is defined here once (`VERDICT_SQL`): the read models of `core.queries` take it from here.
"""

from __future__ import annotations

# A task's verdict: the stored evaluation; else the source's own success flag; else 'error' for an attempt
# that crashed or was interrupted (no verdict was ever reached: the importers store none); else its reward.
# Both read `e` (the task's evaluations row) and `t` (its answer trajectory), either possibly absent.
VERDICT_SQL = """coalesce(e.status,
             CASE WHEN t.success THEN 'success' WHEN NOT t.success THEN 'failure'
                  WHEN t.termination IN ('error', 'interrupted') THEN 'error'
                  WHEN t.reward >= 1 THEN 'success' WHEN t.reward < 1 THEN 'failure' END,
             'unscored')"""
VERDICT_SOURCE_SQL = """coalesce(e.source, CASE WHEN t.success IS NOT NULL THEN 'source-success'
                                 WHEN t.termination IN ('error', 'interrupted') THEN 'termination'
                                 WHEN t.reward IS NOT NULL THEN 'source-reward' END)"""
# The counted columns of a run's row, in the table's order after `run`.
SUMMARY_COLUMNS = (
    "tasks", "scored", "successes", "failures", "errors", "verdict_sources", "import_problems", "metrics",
)  # fmt: skip


def verdict_joins(ids: str) -> str:
    """`e` and `t` joined to the (run, task_id) rows of `ids` (an alias), for VERDICT_SQL."""
    return f"""LEFT JOIN evaluations e ON e.run = {ids}.run AND e.task_id = {ids}.task_id
        LEFT JOIN trajectories t ON t.run = {ids}.run AND t.task_id = {ids}.task_id AND t.is_answer"""


def verdicts_sql(one_run: bool = True, one_task: bool = False, among: str | None = None) -> str:
    """SQL giving run, task_id, verdict, verdict_source for every task of a run (parameter `$run`) or of
    every run: each task with an evaluation, an answer trajectory, an agent response or an import problem;
    with `one_task`, of task `$task` only; with `among` (a subquery of task ids), of those only. Each is
    read from each table by its key, not filtered after the union: the task page asks for one task of
    every run, or for the tasks of one template.
    """
    only = (
        ("AND run = $run " if one_run else "")
        + ("AND task_id = $task " if one_task else "")
        + (f"AND task_id IN ({among})" if among else "")
    )
    return f"""
        WITH ids AS (
            SELECT run, task_id FROM evaluations WHERE true {only}
            UNION SELECT run, task_id FROM trajectories WHERE is_answer {only}
            UNION SELECT run, task_id FROM agent_responses WHERE true {only}
            UNION SELECT run, task_id FROM import_problems WHERE task_id IS NOT NULL {only}
        )
        SELECT ids.run, ids.task_id, {VERDICT_SQL} AS verdict, {VERDICT_SOURCE_SQL} AS verdict_source
        FROM ids {verdict_joins("ids")}
    """


def summary_sql(one_run: bool = True) -> str:
    """SQL giving `run` and SUMMARY_COLUMNS for a run (parameter `$run`) or every run, from the tables
    themselves: tasks with any verdict, scored ones (success, failure or error), each verdict's count, the
    verdict sources, import problems and the metric sets (gold set / judge) stored."""
    only = "WHERE run = $run" if one_run else ""
    return f"""
        WITH verdicts AS ({verdicts_sql(one_run)}),
        counts AS (
            SELECT run, count(*) AS tasks,
                   count(*) FILTER (WHERE verdict IN ('success', 'failure', 'error')) AS scored,
                   count(*) FILTER (WHERE verdict = 'success') AS successes,
                   count(*) FILTER (WHERE verdict = 'failure') AS failures,
                   count(*) FILTER (WHERE verdict = 'error') AS errors,
                   string_agg(DISTINCT verdict_source, ', ' ORDER BY verdict_source) AS verdict_sources
            FROM verdicts GROUP BY run
        ),
        problems AS (SELECT run, count(*) AS import_problems FROM import_problems {only} GROUP BY run),
        metric_sets AS (
            SELECT run, string_agg(DISTINCT gold_set || ' / ' || judge_config, ', '
                                   ORDER BY gold_set || ' / ' || judge_config) AS metrics
            FROM metrics {only} GROUP BY run
        )
        SELECT r.name AS run, coalesce(c.tasks, 0) AS tasks, coalesce(c.scored, 0) AS scored,
               coalesce(c.successes, 0) AS successes, coalesce(c.failures, 0) AS failures,
               coalesce(c.errors, 0) AS errors, c.verdict_sources,
               coalesce(p.import_problems, 0) AS import_problems, m.metrics
        FROM runs r
        LEFT JOIN counts c ON c.run = r.name
        LEFT JOIN problems p ON p.run = r.name
        LEFT JOIN metric_sets m ON m.run = r.name
        {"WHERE r.name = $run" if one_run else ""}
    """


def refresh_run_summary(cur, run: str) -> None:
    """Inside the writer's transaction, after its writes: the run's row computed anew (none once the run
    is gone)."""
    cur.execute("DELETE FROM run_summaries WHERE run = $run", {"run": run})
    cur.execute(f"INSERT INTO run_summaries BY NAME ({summary_sql()})", {"run": run})
