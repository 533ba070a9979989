"""Read models over the append-only annotations: the current label and note of each target (latest row
wins), their history, label counts per run and site, the label vocabulary, the reviewer's marks on
judged pairs, and judge agreement measured from those marks.

Agreement: a mark says whether the judge's verdict on a pair was right, so the reviewer's truth is the
verdict when marked right and its negation when marked wrong. Pairs the judge could not answer
(verdict NULL) are excluded and counted apart, never taken as "different".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from core.measure.judge_agreement import cohen_kappa, kappa_ci
from core.measure.stats import wilson_ci
from core.review.annotations import TARGET_KEYS
from core.store import Store
from core.values import is_missing

STAGES = ("rule", "lexical", "embedding", "llm", "offline")
_KEY_COLUMNS = (
    "target", "run", "task_id", "episode", "step_idx", "event_seq", "gold_set", "gold_version", "alternative",
    "gold_idx", "judge_config",
)  # fmt: skip


def latest_sql(where: str = "TRUE") -> str:
    """The latest row of every annotated target matching `where` (a correction is a newer row)."""
    return f"""
        SELECT * FROM (
            SELECT *, row_number() OVER (PARTITION BY {", ".join(_KEY_COLUMNS)} ORDER BY id DESC) AS _r
            FROM annotations WHERE {where}
        ) WHERE _r = 1
    """


LABEL_SEPARATOR = ", "


def task_labels_sql(runs: str = "run = $run") -> str:
    """(run, task_id, label) of the tasks of the runs matching `runs` (default: the run `$run`): the current
    labels on the task, its steps and its events, distinct and joined with LABEL_SEPARATOR (labels hold no
    comma)."""
    latest = latest_sql(f"target IN ('task', 'step', 'event') AND {runs}")
    return (
        f"SELECT run, task_id, string_agg(DISTINCT label, '{LABEL_SEPARATOR}' ORDER BY label) AS label"
        f" FROM ({latest}) WHERE label IS NOT NULL GROUP BY run, task_id"
    )


def split_labels(cell: object) -> set[str]:
    """The labels of one triage cell (see task_labels_sql)."""
    return {p for p in str(cell).split(LABEL_SEPARATOR) if p} if isinstance(cell, str) else set()


def current(
    store: Store,
    target: str,
    run: str,
    task_id: int | None = None,
    *,
    episode: str | None = None,
    step_idx: int | None = None,
    event_seq: int | None = None,
) -> dict[str, Any] | None:
    """The current label and note of one target (None when never annotated or cleared)."""
    rows = history(store, target, run, task_id, episode=episode, step_idx=step_idx, event_seq=event_seq)
    if not rows or (rows[0]["label"] is None and rows[0]["note"] is None):
        return None
    return rows[0]


def history(
    store: Store,
    target: str,
    run: str,
    task_id: int | None = None,
    *,
    episode: str | None = None,
    step_idx: int | None = None,
    event_seq: int | None = None,
) -> list[dict[str, Any]]:
    """Every row written for one target, newest first."""
    key = {"run": run, "task_id": task_id, "episode": episode, "step_idx": step_idx, "event_seq": event_seq}
    wanted = {k: key[k] for k in TARGET_KEYS[target]}
    where = " AND ".join(f"{k} = ?" for k in wanted)
    return store.query_dicts(
        f"SELECT id, label, note, author, created_at FROM annotations WHERE target = ? AND {where} ORDER BY id DESC",
        [target, *wanted.values()],
    )


def vocabulary(store: Store, include_retired: bool = False) -> list[dict[str, Any]]:
    """The label vocabulary: latest row per label, with how many current annotations use it."""
    rows = store.query_dicts(
        f"""
        WITH v AS (
            SELECT *, row_number() OVER (PARTITION BY label ORDER BY id DESC) AS r FROM label_vocabulary
        ), used AS (
            SELECT label, count(*) AS uses FROM ({latest_sql("target IN ('run', 'task', 'step', 'event')")})
            WHERE label IS NOT NULL GROUP BY label
        )
        SELECT v.label, v.description, v.retired, v.author, v.created_at, coalesce(u.uses, 0) AS uses
        FROM v LEFT JOIN used u USING (label) WHERE v.r = 1 ORDER BY v.retired, v.label
        """
    )
    return [r for r in rows if include_retired or not r["retired"]]


def label_counts(store: Store) -> pd.DataFrame:
    """Current labels counted per run, site and label, over every labelled run, task, step and event.

    A task, step or event counts under its task's site key; a label on a whole run under site 'whole run'.
    A task with two labelled steps counts twice: the chart counts labels, not tasks.
    """
    return store.query_df(
        f"""
        SELECT a.run, coalesce(t.site_key, CASE WHEN a.target = 'run' THEN 'whole run' ELSE 'unknown' END) AS site,
               a.label, count(*) AS n
        FROM ({latest_sql("target IN ('run', 'task', 'step', 'event')")}) a
        LEFT JOIN tasks t ON t.task_id = a.task_id
        WHERE a.label IS NOT NULL
        GROUP BY ALL ORDER BY a.run, site, a.label
        """
    )


def labels_per_run(store: Store) -> pd.DataFrame:
    """Current labels per run and label, with the number of distinct tasks carrying each."""
    return store.query_df(
        f"""
        SELECT run, label, count(*) AS labels, count(DISTINCT task_id) AS tasks
        FROM ({latest_sql("target IN ('run', 'task', 'step', 'event')")})
        WHERE label IS NOT NULL GROUP BY ALL ORDER BY run, labels DESC, label
        """
    )


# -- marks on judged pairs -----------------------------------------------------------------------------
def pair_marks(store: Store, run: str, task_id: int, episode: str, gold_set: str) -> dict[tuple, dict]:
    """Current marks of one attempt, keyed (gold_version, alternative, gold_idx, step_idx, judge_config)."""
    latest = latest_sql("target = 'judgment'")
    rows = store.query_dicts(
        "SELECT gold_version, alternative, gold_idx, step_idx, judge_config, label AS mark, author, created_at"
        f" FROM ({latest}) WHERE run = ? AND task_id = ? AND episode = ?"
        " AND gold_set = ? AND label IS NOT NULL",
        [run, task_id, episode, gold_set],
    )
    return {
        (r["gold_version"], r["alternative"], r["gold_idx"], r["step_idx"], r["judge_config"]): r
        for r in rows
    }


def marked_pairs(store: Store, judge_config: str | None = None, run: str | None = None) -> pd.DataFrame:
    """Every current mark with the judge's verdict and the reviewer's truth (NULL when unresolved)."""
    where = "target = 'judgment'"
    params: list[Any] = []
    if judge_config:
        where += " AND judge_config = ?"
        params.append(judge_config)
    if run:
        where += " AND run = ?"
        params.append(run)
    return store.query_df(
        f"""
        SELECT run, task_id, episode, gold_set, gold_version, alternative, gold_idx, step_idx, judge_config,
               coalesce(judge_stage, 'unknown') AS stage, judge_verdict, judge_score, label AS mark,
               CASE WHEN judge_verdict IS NULL THEN NULL
                    WHEN label = 'right' THEN judge_verdict ELSE NOT judge_verdict END AS truth,
               author, created_at
        FROM ({latest_sql(where)}) WHERE label IS NOT NULL ORDER BY run, task_id, step_idx, gold_idx
        """,
        params,
    )


@dataclass
class StageAgreement:
    stage: str  # a judge stage, or 'all'
    n: int  # marked pairs the judge answered (what accuracy and κ stand on)
    unresolved: int  # marked pairs the judge could not answer: excluded, never "different"
    agree: int
    accuracy: float | None
    accuracy_ci: tuple[float | None, float | None]
    kappa: float | None  # None when undefined (one class only on both sides)
    kappa_ci: tuple[float | None, float | None]
    judge_said_same: int
    reviewer_said_same: int


@dataclass
class DbAgreement:
    judge_config: str | None
    run: str | None
    overall: StageAgreement
    per_stage: list[StageAgreement] = field(default_factory=list)


def stage_agreement(stage: str, verdicts: list[bool | None], truths: list[bool | None]) -> StageAgreement:
    """Accuracy (Wilson CI) and Cohen's κ (bootstrap CI) of one group of marked pairs; pure."""
    resolved = [(v, t) for v, t in zip(verdicts, truths, strict=True) if v is not None and t is not None]
    predicted = np.array([v for v, _ in resolved], dtype=bool)
    truth = np.array([t for _, t in resolved], dtype=bool)
    agree = int(np.sum(predicted == truth))
    n = len(resolved)
    return StageAgreement(
        stage=stage,
        n=n,
        unresolved=len(verdicts) - n,
        agree=agree,
        accuracy=agree / n if n else None,
        accuracy_ci=wilson_ci(agree, n),
        kappa=cohen_kappa(truth, predicted),
        kappa_ci=kappa_ci(truth, predicted),
        judge_said_same=int(predicted.sum()),
        reviewer_said_same=int(truth.sum()),
    )


def judge_agreement(store: Store, judge_config: str | None = None, run: str | None = None) -> DbAgreement:
    """Agreement of the judge with the reviewers' marks, overall and per deciding stage."""
    df = marked_pairs(store, judge_config, run)

    def values(frame: pd.DataFrame, column: str) -> list[bool | None]:
        return [None if is_missing(v) else bool(v) for v in frame[column]]

    overall = stage_agreement("all", values(df, "judge_verdict"), values(df, "truth"))
    order = {s: i for i, s in enumerate(STAGES)}
    per_stage = [
        stage_agreement(stage, values(group, "judge_verdict"), values(group, "truth"))
        for stage, group in sorted(df.groupby("stage"), key=lambda g: (order.get(g[0], len(order)), g[0]))
    ]
    return DbAgreement(judge_config=judge_config, run=run, overall=overall, per_stage=per_stage)


def judge_configs_marked(store: Store) -> list[str]:
    return [c for (c,) in store.query(
        "SELECT DISTINCT judge_config FROM annotations WHERE target = 'judgment' ORDER BY 1"
    )]  # fmt: skip
