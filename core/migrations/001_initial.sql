-- trajreview schema, version 1. Every table and column is documented in docs/schema.md.
-- Logical keys are stated in comments; only small tables carry PRIMARY KEY constraints so that
-- bulk inserts into the large ones stay fast.

-- Task datasets -------------------------------------------------------------------------------
CREATE TABLE datasets (
    name            VARCHAR PRIMARY KEY,   -- e.g. 'webarena-verified', 'webarena-original'
    kind            VARCHAR NOT NULL,      -- 'verified' | 'original'
    source_path     VARCHAR NOT NULL,
    checksum        VARCHAR NOT NULL,      -- sha256 of the file bytes (the official data checksum)
    n_tasks         INTEGER NOT NULL,
    imported_at     TIMESTAMP NOT NULL
);

CREATE TABLE tasks (
    task_id             INTEGER PRIMARY KEY,
    sites               VARCHAR[] NOT NULL,
    site_key            VARCHAR NOT NULL,  -- sorted sites joined with '-': the official per-site key
    intent              VARCHAR NOT NULL,
    intent_template_id  INTEGER,
    intent_template     VARCHAR,
    instantiation_dict  JSON,
    start_urls          VARCHAR[],
    task_type           VARCHAR,           -- retrieve | mutate | navigate (expected agent response)
    expected_status     VARCHAR,           -- SUCCESS | NOT_FOUND_ERROR | ...
    eval                JSON NOT NULL,     -- the evaluator configs, as in the dataset
    revision            INTEGER,
    in_hard_subset      BOOLEAN NOT NULL,
    dataset_name        VARCHAR NOT NULL,
    dataset_checksum    VARCHAR NOT NULL
);

CREATE TABLE original_tasks (
    task_id             INTEGER PRIMARY KEY,
    sites               VARCHAR[] NOT NULL,
    intent              VARCHAR NOT NULL,
    intent_template_id  INTEGER,
    start_url           VARCHAR,
    require_login       BOOLEAN,
    eval_types          VARCHAR[],
    reference_answers   JSON,              -- {must_include|exact_match|fuzzy_match: ...} or null
    must_include        VARCHAR[],
    exact_match         VARCHAR,
    fuzzy_match         JSON,              -- list of strings, or the string 'N/A'
    reference_url       VARCHAR,
    program_html        JSON,
    string_note         VARCHAR,
    dataset_name        VARCHAR NOT NULL,
    dataset_checksum    VARCHAR NOT NULL
);

-- Runs and their import problems ----------------------------------------------------------------
CREATE TABLE runs (
    name            VARCHAR PRIMARY KEY,
    agent           VARCHAR,
    model           VARCHAR,
    paradigm        VARCHAR NOT NULL DEFAULT 'unknown'
                    CHECK (paradigm IN ('step_by_step', 'tree_search', 'full_plan', 'human', 'unknown')),
    source_format   VARCHAR NOT NULL,      -- wav-run | agentlab | webarena-render | jsonl
    source_path     VARCHAR NOT NULL,
    imported_at     TIMESTAMP NOT NULL,
    config          JSON,                  -- run_config.json or the environment config used to score
    n_tasks         INTEGER,
    notes           VARCHAR
);

CREATE TABLE import_problems (             -- one row per task-level problem met while importing a run
    run             VARCHAR NOT NULL,
    task_id         INTEGER,               -- null when the problem is not tied to one task
    source_path     VARCHAR,
    kind            VARCHAR NOT NULL,      -- short machine-readable code, e.g. 'missing_file'
    message         VARCHAR NOT NULL,
    recorded_at     TIMESTAMP NOT NULL
);

-- WebArena-Verified runs: responses, network events, evaluations ---------------------------------
CREATE TABLE agent_responses (             -- key (run, task_id)
    run             VARCHAR NOT NULL,
    task_id         INTEGER NOT NULL,
    raw_text        VARCHAR,
    parsed          JSON,
    parse_error     VARCHAR,
    lint            JSON,                  -- list of {rule, message}; never changes the score
    n_lint_issues   INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE network_events (              -- key (run, task_id, seq)
    run             VARCHAR NOT NULL,
    task_id         INTEGER NOT NULL,
    seq             INTEGER NOT NULL,
    started_at      TIMESTAMP,             -- UTC
    time_ms         DOUBLE,
    method          VARCHAR,
    url             VARCHAR,
    url_path        VARCHAR,
    query           JSON,
    status          INTEGER,
    mime_type       VARCHAR,
    size            BIGINT,
    referer         VARCHAR,
    redirect_url    VARCHAR,
    post_data       JSON,
    is_static_asset BOOLEAN,
    is_navigation   BOOLEAN,
    event_type      VARCHAR,               -- navigation | mutation | other
    request_headers JSON                   -- secrets redacted
);

CREATE TABLE evaluations (                 -- key (run, task_id)
    run                 VARCHAR NOT NULL,
    task_id             INTEGER NOT NULL,
    status              VARCHAR NOT NULL,  -- success | failure | error
    score               DOUBLE,
    source              VARCHAR NOT NULL,  -- 'webarena-verified' (scored by us) | 'source-log' | 'source-reward'
    engine_version      VARCHAR,
    evaluator_checksum  VARCHAR,
    data_checksum       VARCHAR,
    error               VARCHAR,
    explanation         VARCHAR,           -- one sentence for the whole task (failing evaluators joined)
    cannot_pass         BOOLEAN NOT NULL DEFAULT FALSE,
    eval_result         JSON,              -- the official per-task TaskEvalResult (what export writes)
    evaluated_at        TIMESTAMP NOT NULL
);

CREATE TABLE evaluator_results (           -- key (run, task_id, idx)
    run                 VARCHAR NOT NULL,
    task_id             INTEGER NOT NULL,
    idx                 INTEGER NOT NULL,
    evaluator           VARCHAR NOT NULL,
    status              VARCHAR NOT NULL,
    score               DOUBLE,
    assertions          JSON,
    expected            JSON,
    actual              JSON,
    expected_normalized JSON,
    actual_normalized   JSON,
    error               VARCHAR,
    explanation         VARCHAR,
    matched_event_seq   INTEGER,
    nearest_event_seq   INTEGER
);

-- Trajectories (agent and human) ---------------------------------------------------------------
CREATE TABLE trajectories (                -- key (run, task_id, episode)
    run                 VARCHAR NOT NULL,
    task_id             INTEGER NOT NULL,
    episode             VARCHAR NOT NULL,  -- episode/attempt name within the run ('0' when only one)
    is_answer           BOOLEAN NOT NULL,  -- the run's answer for the task: the latest complete episode
    n_steps             INTEGER NOT NULL,
    final_answer        VARCHAR,
    reward              DOUBLE,
    success             BOOLEAN,
    termination         VARCHAR NOT NULL
                        CHECK (termination IN ('answered', 'na_answer', 'early_stop', 'truncated',
                                               'error', 'interrupted', 'none')),
    termination_detail  VARCHAR,
    plan                JSON,
    goal                VARCHAR,
    task_config         JSON,              -- task config as the source recorded it (render header)
    source_path         VARCHAR,
    started_at          TIMESTAMP,
    elapsed_s           DOUBLE
);

CREATE TABLE steps (                       -- key (run, task_id, episode, idx)
    run             VARCHAR NOT NULL,
    task_id         INTEGER NOT NULL,
    episode         VARCHAR NOT NULL,
    idx             INTEGER NOT NULL,
    url             VARCHAR,
    thought         VARCHAR,
    stated_action   VARCHAR,
    executed_action VARCHAR,
    verb            VARCHAR,
    element_id      VARCHAR,
    element_role    VARCHAR,
    element_label   VARCHAR,
    value           VARCHAR,
    key             VARCHAR,
    direction       VARCHAR,
    target_url      VARCHAR,
    answer          VARCHAR,
    readable        VARCHAR,
    error           VARCHAR,
    started_at      TIMESTAMP,
    elapsed_s       DOUBLE,
    screenshot_path VARCHAR
);

CREATE TABLE observations (                -- key (run, task_id, episode, idx, kind); loaded on demand
    run             VARCHAR NOT NULL,
    task_id         INTEGER NOT NULL,
    episode         VARCHAR NOT NULL,
    idx             INTEGER NOT NULL,
    kind            VARCHAR NOT NULL,      -- axtree | html | chat
    content         VARCHAR NOT NULL
);

CREATE TABLE gold_sets (
    name            VARCHAR PRIMARY KEY,
    source_path     VARCHAR,
    source_checksum VARCHAR,
    author          VARCHAR,
    description     VARCHAR,
    created_at      TIMESTAMP NOT NULL
);

CREATE TABLE gold_steps (                  -- key (gold_set, task_id, version, alternative, idx)
    gold_set        VARCHAR NOT NULL,
    version         INTEGER NOT NULL,      -- per (gold_set, task_id); an edit adds version+1
    task_id         INTEGER NOT NULL,
    alternative     INTEGER NOT NULL,      -- 0-based; several gold trajectories per task
    idx             INTEGER NOT NULL,
    text            VARCHAR NOT NULL,
    verb            VARCHAR,
    element_label   VARCHAR,
    value           VARCHAR,
    source_row      INTEGER,
    flags           VARCHAR[],
    author          VARCHAR,
    created_at      TIMESTAMP NOT NULL,
    note            VARCHAR
);

-- Metrics and the semantic judge ------------------------------------------------------------------
CREATE TABLE requirements (                -- key (task_id, source, idx)
    task_id         INTEGER NOT NULL,
    source          VARCHAR NOT NULL,      -- verified_retrieved_data | original_must_include | import
    idx             INTEGER NOT NULL,
    text            VARCHAR NOT NULL
);

CREATE TABLE judgments (                   -- the judge cache
    key             VARCHAR PRIMARY KEY,   -- sha256 of (judge version, prompt version, model, kind, a, b, context)
    kind            VARCHAR NOT NULL,      -- gold_vs_agent | agent_vs_agent | stated_vs_executed | requirement_in_answer
    a               VARCHAR NOT NULL,
    b               VARCHAR NOT NULL,
    context         VARCHAR,
    verdict         BOOLEAN,               -- null = unresolved (never counted as 'different')
    score           DOUBLE,
    source          VARCHAR NOT NULL,      -- rule | lexical | embedding | llm | offline
    model           VARCHAR,
    judge_version   VARCHAR NOT NULL,
    prompt_version  VARCHAR,
    rationale       VARCHAR,
    created_at      TIMESTAMP NOT NULL
);

CREATE TABLE alignments (                  -- matched gold/agent step pairs
    run             VARCHAR NOT NULL,
    task_id         INTEGER NOT NULL,
    episode         VARCHAR NOT NULL,
    gold_set        VARCHAR NOT NULL,
    gold_version    INTEGER NOT NULL,
    alternative     INTEGER NOT NULL,
    judge_config    VARCHAR NOT NULL,
    gold_idx        INTEGER NOT NULL,
    agent_idx       INTEGER NOT NULL,
    source          VARCHAR NOT NULL,
    score           DOUBLE
);

CREATE TABLE metrics (                     -- key (run, task_id, gold_set, judge_config, preset)
    run                 VARCHAR NOT NULL,
    task_id             INTEGER NOT NULL,
    episode             VARCHAR NOT NULL,
    gold_set            VARCHAR NOT NULL,
    gold_version        INTEGER,
    alternative         INTEGER,
    judge_config        VARCHAR NOT NULL,
    preset              VARCHAR NOT NULL,
    ssr                 DOUBLE,
    ssr_unordered       DOUBLE,
    rr                  DOUBLE,
    deviations          INTEGER,
    recoveries          INTEGER,
    mean_recovery_cost  DOUBLE,
    repr                DOUBLE,
    repr_run_members    DOUBLE,
    psr                 DOUBLE,
    ear                 DOUBLE,
    n_gold              INTEGER,
    n_agent             INTEGER,
    success             BOOLEAN,
    answer_category     VARCHAR,           -- na_answer | produced_answer | early_stop
    approximate         BOOLEAN NOT NULL DEFAULT FALSE,
    unresolved_pairs    INTEGER NOT NULL DEFAULT 0,
    computed_at         TIMESTAMP NOT NULL,
    missed_gold         INTEGER,           -- gold steps skipped or left when RR walked the trajectory
    n_requirements      INTEGER,           -- requirements of the task (PSR denominator)
    reward              DOUBLE,            -- the source's raw reward
    termination         VARCHAR,           -- trajectories.termination
    null_reasons        JSON               -- {metric: reason} for every NULL metric
);

-- Reviewer annotations: append-only (the store offers no update or delete) ------------------------
CREATE SEQUENCE annotation_id_seq START 1;
CREATE TABLE annotations (
    id              BIGINT PRIMARY KEY DEFAULT nextval('annotation_id_seq'),
    run             VARCHAR,
    task_id         INTEGER,
    episode         VARCHAR,
    step_idx        INTEGER,
    target          VARCHAR NOT NULL,      -- task | step | event | gold | run
    label           VARCHAR,
    note            VARCHAR,
    author          VARCHAR NOT NULL,
    created_at      TIMESTAMP NOT NULL
);
