"""Breakdowns: success rate with its Wilson 95 % CI per run by site (official multi-site buckets), task
type, hard subset, termination and reviewer label, with the counts behind every rate.

A task's verdict is the one the Runs and Triage pages show (`runs.verdicts_sql`): success rates are over
scored tasks (success, failure, error), unscored tasks are counted beside them, never as failures.
Missing values (no termination recorded — or recorded as `none`, "nothing tells how it ended" —, no
reviewer label) form one bucket `NONE`, which
Triage's filters understand, so every bar clicks through to exactly the tasks it counts. A task with
several current labels (on itself, its steps, its events) counts under each of them, as Triage's label
filter finds it under each.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from core.queries.annotations import split_labels, task_labels_sql
from core.queries.defect_rate import FAILED, confirmed_defects_sql, with_defect_columns
from core.queries.runs import verdicts_sql, with_rate
from core.queries.triage import HARD, NONE
from core.store import Store

# dimension -> (column of the per-task frame, Triage URL parameter that filters on it)
DIMENSIONS = {
    "site": ("site", "site"),
    "task type": ("task_type", "type"),
    "hard subset": ("hard", "hard"),
    "termination": ("termination", "termination"),
    "reviewer label": ("label", "label"),
}


def task_verdicts(store: Store, runs: Sequence[str]) -> pd.DataFrame:
    """One row per task of each run: run, task_id, verdict, the columns every breakdown groups by, and
    `defect` (a reviewer confirmed the task's evaluator defect: core.queries.defect_rate)."""
    df = store.query_df(
        f"""
        WITH v AS ({verdicts_sql(one_run=False)}),
        labels AS ({task_labels_sql("list_contains($runs, run)")}),
        confirmed AS ({confirmed_defects_sql("list_contains($runs, run)")})
        SELECT v.run, v.task_id, v.verdict, coalesce(k.site_key, '{NONE}') AS site,
               coalesce(k.task_type, '{NONE}') AS task_type,
               CASE WHEN k.in_hard_subset THEN '{HARD[0]}' WHEN NOT k.in_hard_subset THEN '{HARD[1]}'
                    ELSE '{NONE}' END AS hard,
               coalesce(nullif(t.termination, 'none'), '{NONE}') AS termination, coalesce(l.label, '{NONE}') AS label,
               c.task_id IS NOT NULL AS defect
        FROM v
        LEFT JOIN tasks k ON k.task_id = v.task_id
        LEFT JOIN trajectories t ON t.run = v.run AND t.task_id = v.task_id AND t.is_answer
        LEFT JOIN labels l ON l.run = v.run AND l.task_id = v.task_id
        LEFT JOIN confirmed c ON c.run = v.run AND c.task_id = v.task_id
        WHERE list_contains($runs, v.run)
        ORDER BY v.run, v.task_id
        """,
        {"runs": list(runs)},
    )
    return df


def rates(frame: pd.DataFrame, by: str) -> pd.DataFrame:
    """Per run and value of column `by`: scored, successes, failures, errors, unscored, success_rate and
    its Wilson 95 % CI, and beside it `defects_moved`, `with_defects_rate`, `with_defects` (the failed
    tasks with a confirmed evaluator defect counted as passes, core.queries.defect_rate; a frame without
    a `defect` column moves none). Pure: the page, the HTML report and the tests aggregate the same way."""
    verdict = frame["verdict"]
    counted = frame.assign(
        scored=verdict.isin(("success", "failure", "error")).astype(int),
        successes=(verdict == "success").astype(int),
        failures=(verdict == "failure").astype(int),
        errors=(verdict == "error").astype(int),
        unscored=(verdict == "unscored").astype(int),
        defects_moved=(verdict.isin(FAILED) & frame.get("defect", False)).astype(int),
    )
    cols = ["scored", "successes", "failures", "errors", "unscored", "defects_moved"]
    grouped = counted.groupby(["run", by], sort=True)[cols].sum().reset_index().rename(columns={by: "value"})
    grouped = with_defect_columns(with_rate(grouped, "successes", "scored"))
    return grouped.sort_values(["run", "scored", "value"], ascending=[True, False, True]).reset_index(
        drop=True
    )


def breakdowns(store: Store, runs: Sequence[str]) -> pd.DataFrame:
    """Every breakdown of every run in one long table: run, dimension, value, triage_param, the counts,
    success_rate, ci_low, ci_high. Runs keep the order given."""
    frame = task_verdicts(store, runs)
    parts = []
    for dimension, (column, param) in DIMENSIONS.items():
        data = frame
        if column == "label":
            # A task labelled on several levels (task, steps, events) counts under each of its labels,
            # as Triage's label filter finds it under each.
            data = frame.assign(label=frame["label"].map(lambda cell: sorted(split_labels(cell)))).explode(
                "label"
            )
        part = rates(data, column).assign(dimension=dimension, triage_param=param)
        parts.append(part)
    columns = ["run", "dimension", "value", "triage_param", "scored", "successes", "failures", "errors",
               "unscored", "success_rate", "ci_low", "ci_high", "defects_moved", "with_defects_rate",
               "with_defects"]  # fmt: skip
    if not parts or frame.empty:
        return pd.DataFrame(columns=columns)
    table = pd.concat(parts, ignore_index=True)[columns]
    order = {run: i for i, run in enumerate(runs)}
    dim_order = {d: i for i, d in enumerate(DIMENSIONS)}
    table = table.assign(_r=table["run"].map(order), _d=table["dimension"].map(dim_order))
    return table.sort_values(["_d", "_r"], kind="stable").drop(columns=["_r", "_d"]).reset_index(drop=True)
