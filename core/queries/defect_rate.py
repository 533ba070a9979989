"""The success rate with confirmed evaluator defects counted as passes, shown beside the official rate,
never instead of it (docs/failure-causes.md, "Evaluator defects").

A task's evaluator defect is *confirmed* when a reviewer said the benchmark's check refused a right answer:
the task's current label (the latest `annotations` row with target `task`, core/queries/annotations.py)
is `evaluator too strict` — what Accept on an `evaluator_strict` suggestion writes — and no rejection of
that suggestion (a `diagnosis` row, label `rejected`, note `evaluator_strict`) came after the label. A
later label, a cleared label or a rejection un-confirms it. Only a failed or errored task can move: a
confirmed defect on a passed task changes nothing. One computation (`DefectRate`) serves the Runs page,
Breakdowns, Compare, the HTML report and the CLI.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import pandas as pd

from core.diagnose.taxonomy import CAUSE_LABEL
from core.measure.stats import rate_text, wilson_ci
from core.queries.annotations import latest_sql
from core.store import Store

DEFECT_CAUSE = "evaluator_strict"
CONFIRMED_LABEL = CAUSE_LABEL[DEFECT_CAUSE]
FAILED = ("failure", "error")
SCORED = ("success", *FAILED)
WITH_DEFECTS = "with confirmed defects counted as passes"


def confirmed_defects_sql(runs: str = "run = $run") -> str:
    """(run, task_id, decided_by, decided_at) of the tasks of the runs matching `runs` whose evaluator
    defect a reviewer confirmed (verdict not read: join the verdicts to keep failed tasks only)."""
    return f"""
        WITH label AS ({latest_sql(f"target = 'task' AND {runs}")}),
        rejected AS (
            SELECT run, task_id, max(id) AS id FROM annotations
            WHERE target = 'diagnosis' AND label = 'rejected' AND note = '{DEFECT_CAUSE}' AND {runs}
            GROUP BY run, task_id
        )
        SELECT l.run, l.task_id, l.author AS decided_by, l.created_at AS decided_at
        FROM label l LEFT JOIN rejected r ON r.run = l.run AND r.task_id = l.task_id
        WHERE l.label = '{CONFIRMED_LABEL}' AND (r.id IS NULL OR r.id < l.id)"""


def confirmed_tasks(store: Store, runs: Iterable[str]) -> set[tuple[str, int]]:
    """(run, task_id) of every task of the runs with a confirmed evaluator defect (any verdict)."""
    rows = store.query(
        f"SELECT run, task_id FROM ({confirmed_defects_sql('list_contains($runs, run)')})",
        {"runs": list(runs)},
    )
    return {(run, int(task_id)) for run, task_id in rows}


@dataclass(frozen=True)
class DefectRate:
    """Success over `scored` tasks as the official rate counts it, and with the `moved` failed or errored
    tasks whose evaluator defect a reviewer confirmed counted as passes."""

    scored: int
    successes: int
    moved: int

    @property
    def official(self) -> float | None:
        return self.successes / self.scored if self.scored else None

    @property
    def rate(self) -> float | None:
        return (self.successes + self.moved) / self.scored if self.scored else None

    @property
    def ci(self) -> tuple[float | None, float | None]:
        return wilson_ci(self.successes + self.moved, self.scored)

    def official_text(self) -> str:
        """The official rate as every page writes it: '39.4 % [24.7–56.3] of 33'."""
        low, high = wilson_ci(self.successes, self.scored)
        return rate_text(self.official, low, high, self.scored)

    def text(self) -> str:
        """'48.5 % [32.5–64.8] of 33 (+2 tasks)'; '' when no confirmed defect moves a task (the official
        rate is the whole story: no second, equal number is shown)."""
        if not self.moved:
            return ""
        low, high = self.ci
        return f"{rate_text(self.rate, low, high, self.scored)} (+{self.moved} task{'s' if self.moved > 1 else ''})"

    def sentence(self) -> str:
        """'with confirmed defects counted as passes: 48.5 % [32.5–64.8] of 33 (+2 tasks)', or ''."""
        return f"{WITH_DEFECTS}: {self.text()}" if self.moved else ""


def defect_rate(verdicts: Iterable[str], confirmed: Iterable[bool]) -> DefectRate:
    """The figure over tasks given as their verdicts and whether each has a confirmed defect (pure):
    unscored tasks are left out, only failed and errored tasks move."""
    pairs = [(v, bool(c)) for v, c in zip(verdicts, confirmed, strict=True) if v in SCORED]
    return DefectRate(
        scored=len(pairs),
        successes=sum(v == "success" for v, _ in pairs),
        moved=sum(v in FAILED and c for v, c in pairs),
    )


def with_defect_columns(df: pd.DataFrame, successes: str = "successes", n: str = "scored") -> pd.DataFrame:
    """Add `with_defects_rate` and `with_defects` (the figure in words), both NULL where nothing moves, to a
    frame of counts that has `defects_moved` beside `successes` and `n`."""
    figures = [
        DefectRate(int(k), int(s), int(m))
        for s, k, m in zip(df[successes], df[n], df["defects_moved"], strict=True)
    ]
    df["with_defects_rate"] = [f.rate if f.moved else None for f in figures]
    df["with_defects"] = [f.text() or None for f in figures]
    return df
