-- Reviewer marks on judged pairs, labels on network events, and the editable label vocabulary.
-- (Assigned number 006 for the merge; numbered 003 here because migrations must run 1..n without gaps.)

-- A mark says whether the judge was right about one gold/agent pair. The pair is
-- (run, task_id, episode, gold_set, gold_version, alternative, gold_idx, step_idx, judge_config); the
-- judge's answer as shown to the reviewer is kept beside the mark, so agreement is computed from the
-- annotations alone even after the alignment is recomputed.
ALTER TABLE annotations ADD COLUMN event_seq INTEGER;      -- target 'event': network_events.seq
ALTER TABLE annotations ADD COLUMN gold_set VARCHAR;       -- target 'judgment': the pair's gold
ALTER TABLE annotations ADD COLUMN gold_version INTEGER;
ALTER TABLE annotations ADD COLUMN alternative INTEGER;
ALTER TABLE annotations ADD COLUMN gold_idx INTEGER;
ALTER TABLE annotations ADD COLUMN judge_config VARCHAR;
ALTER TABLE annotations ADD COLUMN judge_verdict BOOLEAN;  -- the judge's verdict; null = it could not answer
ALTER TABLE annotations ADD COLUMN judge_stage VARCHAR;    -- rule | lexical | embedding | llm | offline
ALTER TABLE annotations ADD COLUMN judge_score DOUBLE;

-- Failure-cause labels reviewers pick from. Append-only like annotations: the latest row of a label
-- wins; retiring a label is a new row with retired = true (annotations that use it keep it).
CREATE SEQUENCE label_vocabulary_id_seq START 1;
CREATE TABLE label_vocabulary (
    id              BIGINT PRIMARY KEY DEFAULT nextval('label_vocabulary_id_seq'),
    label           VARCHAR NOT NULL,
    description     VARCHAR,
    retired         BOOLEAN NOT NULL DEFAULT FALSE,
    author          VARCHAR NOT NULL,
    created_at      TIMESTAMP NOT NULL
);

-- Seeded with the diagnosis of the paper's failure analysis.
INSERT INTO label_vocabulary (label, description, author, created_at) VALUES
    ('context drift', 'the agent lost track of the goal or of what it had already done', 'trajreview', timezone('UTC', now())),
    ('incoherent decomposition', 'the plan split the task into steps that do not add up to it', 'trajreview', timezone('UTC', now())),
    ('wrong element', 'the agent acted on the wrong page element', 'trajreview', timezone('UTC', now())),
    ('gave up early', 'the agent stopped or answered N/A before the task was done', 'trajreview', timezone('UTC', now())),
    ('evaluator too strict', 'the task was done but the evaluator did not accept it', 'trajreview', timezone('UTC', now())),
    ('environment broken', 'the site or the environment failed, not the agent', 'trajreview', timezone('UTC', now()));
