-- trajreview schema, version 8: each run's counts in one row, so the Runs page reads one row per run
-- instead of every task's verdict. Kept by the writers that change what it counts (an import, official
-- scores, metrics: core.measure.run_summaries.refresh_run_summary, inside their own transaction); filled
-- here once for the runs already stored, with the same definition. Documented in docs/schema.md.
CREATE TABLE run_summaries (
    run             VARCHAR NOT NULL,   -- runs.name (key: one row per run)
    tasks           BIGINT NOT NULL,    -- tasks with a verdict of any kind (unscored included)
    scored          BIGINT NOT NULL,    -- success + failure + error
    successes       BIGINT NOT NULL,
    failures        BIGINT NOT NULL,
    errors          BIGINT NOT NULL,
    verdict_sources VARCHAR,            -- the distinct verdict sources, sorted, joined with ', '
    import_problems BIGINT NOT NULL,
    metrics         VARCHAR             -- the distinct 'gold_set / judge_config' of its metrics, sorted
);

INSERT INTO run_summaries
WITH ids AS (
    SELECT run, task_id FROM evaluations
    UNION SELECT run, task_id FROM trajectories WHERE is_answer
    UNION SELECT run, task_id FROM agent_responses
    UNION SELECT run, task_id FROM import_problems WHERE task_id IS NOT NULL
),
verdicts AS (
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
),
counts AS (
    SELECT run, count(*) AS tasks,
           count(*) FILTER (WHERE verdict IN ('success', 'failure', 'error')) AS scored,
           count(*) FILTER (WHERE verdict = 'success') AS successes,
           count(*) FILTER (WHERE verdict = 'failure') AS failures,
           count(*) FILTER (WHERE verdict = 'error') AS errors,
           string_agg(DISTINCT verdict_source, ', ' ORDER BY verdict_source) AS verdict_sources
    FROM verdicts GROUP BY run
),
problems AS (SELECT run, count(*) AS import_problems FROM import_problems GROUP BY run),
metric_sets AS (
    SELECT run, string_agg(DISTINCT gold_set || ' / ' || judge_config, ', '
                           ORDER BY gold_set || ' / ' || judge_config) AS metrics
    FROM metrics GROUP BY run
)
SELECT r.name, coalesce(c.tasks, 0), coalesce(c.scored, 0), coalesce(c.successes, 0),
       coalesce(c.failures, 0), coalesce(c.errors, 0), c.verdict_sources,
       coalesce(p.import_problems, 0), m.metrics
FROM runs r
LEFT JOIN counts c ON c.run = r.name
LEFT JOIN problems p ON p.run = r.name
LEFT JOIN metric_sets m ON m.run = r.name;
