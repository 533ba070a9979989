-- trajreview schema, version 2: offline WebArena evaluators beside the run's own verdict, answer-only
-- trajectories and the last page URL a run recorded. Documented in docs/schema.md.

-- Who produced an evaluator row: the official engine, or the offline WebArena evaluators run on the
-- run's own recorded task config or on the original one. Existing rows all come from the engine.
ALTER TABLE evaluator_results ADD COLUMN source VARCHAR DEFAULT 'webarena-verified';
UPDATE evaluator_results SET source = 'webarena-verified' WHERE source IS NULL;
-- Why an offline evaluator could not decide: needs_llm | needs_live_site | no_last_url.
ALTER TABLE evaluator_results ADD COLUMN unresolved_reason VARCHAR;

-- The offline re-check of a task, stored beside (never instead of) the run's own verdict.
ALTER TABLE evaluations ADD COLUMN offline_status VARCHAR;        -- success | failure | unresolved
ALTER TABLE evaluations ADD COLUMN offline_config VARCHAR;        -- run | original
ALTER TABLE evaluations ADD COLUMN offline_disagrees BOOLEAN;     -- offline decided and differs from status
ALTER TABLE evaluations ADD COLUMN explanation_source VARCHAR;    -- webarena-verified | offline

-- Trajectories that hold only the final answer (no browser action recorded).
ALTER TABLE trajectories ADD COLUMN answer_only BOOLEAN DEFAULT FALSE;
UPDATE trajectories t SET answer_only = coalesce((
    SELECT count(*) > 0
       AND count(*) FILTER (WHERE s.verb IN ('answer', 'infeasible')) > 0
       AND count(*) FILTER (WHERE s.verb IS NULL OR s.verb NOT IN ('answer', 'infeasible', 'noop')) = 0
    FROM steps s WHERE s.run = t.run AND s.task_id = t.task_id AND s.episode = t.episode
), FALSE);
-- The last page URL the source recorded after the agent's last action, when it records one apart
-- from the steps (OpAgent); otherwise the last step's URL is the last page (see docs/offline-evaluation.md).
ALTER TABLE trajectories ADD COLUMN final_url VARCHAR;
