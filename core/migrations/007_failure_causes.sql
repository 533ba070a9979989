-- trajreview schema, version 7: suggested failure causes (`trajreview diagnose`). One row per cause found
-- for a failed or errored task of a run; exactly one row per diagnosed task is primary (the first cause
-- in the taxonomy's precedence, or `undecided` with its reason). Rewritten whole per run by diagnose, in
-- one transaction. Documented in docs/schema.md and docs/failure-causes.md.
CREATE TABLE failure_causes (
    run                 VARCHAR NOT NULL,
    task_id             INTEGER NOT NULL,
    cause               VARCHAR NOT NULL,   -- a taxonomy code, or undecided (primary only)
    is_primary          BOOLEAN NOT NULL,
    source              VARCHAR NOT NULL,   -- rule | model
    rule                VARCHAR,            -- the rule that found it (source rule), else NULL
    summary             VARCHAR NOT NULL,   -- one plain sentence: why this cause
    evidence            JSON,               -- [{kind, step_idx?, seq?, status?, text}]: what the sentence cites
    reasoning           VARCHAR,            -- the model's reasoning (source model)
    diagnosis_version   VARCHAR NOT NULL,   -- rules version and prompt version, e.g. rules-1+diagnosis-1
    diagnosed_at        TIMESTAMP NOT NULL,
    PRIMARY KEY (run, task_id, cause)
);

-- The reviewer labels a cause becomes when accepted: one per taxonomy code (the seed of migration 3
-- already holds environment broken, gave up early, wrong element, evaluator too strict, context drift).
INSERT INTO label_vocabulary (label, description, author, created_at) VALUES
    ('hit the step limit', 'the harness cut the run at its step or action limit before the agent finished', 'trajreview', timezone('UTC', now())),
    ('looped', 'the agent repeated the same action or cycle of actions without progress', 'trajreview', timezone('UTC', now())),
    ('answered wrong', 'the agent finished with an answer or final state that is wrong in substance', 'trajreview', timezone('UTC', now())),
    ('invalid action', 'the agent''s commands could not be executed (unparseable, refused, missing element)', 'trajreview', timezone('UTC', now()));
