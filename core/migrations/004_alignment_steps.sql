-- What the Alignment tab shows, computed where the judge already runs: one row per agent step of the
-- measured episode per gold alternative, per (gold set, judge config, preset), written by `metrics` in
-- the same transaction as the metrics rows. Read models only read it (they never call the judge).
-- Key (run, task_id, gold_set, judge_config, preset, alternative, agent_idx).
CREATE TABLE alignment_steps (
    run                 VARCHAR NOT NULL,
    task_id             INTEGER NOT NULL,
    episode             VARCHAR NOT NULL,
    gold_set            VARCHAR NOT NULL,
    gold_version        INTEGER NOT NULL,  -- the task's gold version the row was computed against
    alternative         INTEGER NOT NULL,  -- gold alternative (every one, not only the best)
    judge_config        VARCHAR NOT NULL,
    preset              VARCHAR NOT NULL,
    agent_idx           INTEGER NOT NULL,  -- steps.idx
    agent_text          VARCHAR NOT NULL,  -- the sentence the judge compared with the gold
    gold_idx            INTEGER,           -- gold step matched by the ordered alignment (LCS), else null
    match_source        VARCHAR,           -- deciding stage of the matched pair
    match_score         DOUBLE,
    deviation           BOOLEAN,           -- the RR walk left the gold path here; null: not judged
    rejoined_gold_idx   INTEGER,           -- recovery: the gold step rejoined at this step
    repeats_previous    BOOLEAN,           -- same action as the step before; null: not judged
    closest_gold_idx    INTEGER,           -- unmatched step: the gold step the judge scored highest
    closest_verdict     BOOLEAN,
    closest_source      VARCHAR,
    closest_score       DOUBLE
);
