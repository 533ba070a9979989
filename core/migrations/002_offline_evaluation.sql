-- Offline re-checks of WebArena's original evaluators, and answer-only trajectories (issue: every run
-- explained). Documented in docs/schema.md.

-- Who produced an evaluator row: the official engine, or an offline re-check (and with which config).
ALTER TABLE evaluator_results ADD COLUMN source VARCHAR DEFAULT 'webarena-verified';

-- The offline re-check of the run's own verdict; never replaces `status`.
ALTER TABLE evaluations ADD COLUMN offline_status VARCHAR;      -- success | failure | unresolved
ALTER TABLE evaluations ADD COLUMN verdict_disagrees BOOLEAN;   -- every evaluator decidable and the result differs

-- The attempt's only step carries the final answer: step metrics are undefined (reason answer_only).
ALTER TABLE trajectories ADD COLUMN answer_only BOOLEAN DEFAULT FALSE;
