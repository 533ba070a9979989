"""Suggested failure causes as the pages read them (`failure_causes`, written by `trajreview diagnose`):
one task's causes with their evidence and the reviewer's latest decision, the primary cause of every
failed task of a run, failures counted by primary cause, and two runs compared by cause.

A run is *diagnosed* when it has at least one row; a run without rows is "not diagnosed yet" and the pages
say how to diagnose it (`DIAGNOSE_HINT`). Shares of failures are over the run's failed and errored tasks
(the tasks diagnose covers), with their Wilson 95 % interval (given from n = 1, docs/dashboard.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import orjson
import pandas as pd

from core.diagnose.precision import RULE_PRECISION, RulePrecision
from core.diagnose.taxonomy import FALLBACK_RULE, NO_SPECIFIC, ORDER, PRECEDENCE, cause_name, cause_rank
from core.measure.stats import percent, wilson_ci
from core.queries.runs import verdicts_sql
from core.store import Store

FAILED = ("failure", "error")


def diagnose_hint(run: str) -> str:
    """What a page says about a run that has no suggested causes yet (plain text: pages escape it)."""
    return f"Run {run!r} is not diagnosed yet: trajreview diagnose --run {run} suggests the causes of its failures."


@dataclass(frozen=True)
class Evidence:
    """One thing a cause's sentence cites; `step_idx` links to the Steps tab, `seq` to a network event, a
    witness's `run` and `task_id` to that run's attempt."""

    kind: str
    """`step`, `event`, `evaluator`, `response`, `metric`, `template` or `witness`."""
    text: str
    step_idx: int | None = None
    seq: int | None = None
    status: int | None = None
    run: str | None = None
    task_id: int | None = None


@dataclass(frozen=True)
class SuggestedCause:
    """One suggested cause of a failed task."""

    cause: str
    """The taxonomy code (or `undecided`, primary only)."""
    name: str
    """The code in words."""
    is_primary: bool
    source: str
    """`rule` or `model` (shown as "suggested by a model", with its reasoning)."""
    rule: str | None
    summary: str
    """One plain sentence (may quote the agent: show it as text)."""
    evidence: tuple[Evidence, ...]
    reasoning: str | None
    diagnosis_version: str
    diagnosed_at: datetime

    @property
    def is_fallback(self) -> bool:
        """Found only by the rule of last resort: no specific cause, the answer differs from the reference."""
        return self.rule == FALLBACK_RULE

    @property
    def precision(self) -> RulePrecision | None:
        """How often this rule's suggestion agreed with our labels (None: a model's, or not measured)."""
        return RULE_PRECISION.get(self.rule or "") if self.source == "rule" else None


@dataclass(frozen=True)
class Decision:
    """The reviewer's latest decision on a task's suggestion (`annotations`, target `diagnosis`)."""

    decision: str
    """`accepted` or `rejected`."""
    cause: str
    author: str
    at: datetime


@dataclass(frozen=True)
class TaskCauses:
    """The suggested causes of one failed task, primary first, then the others in precedence order."""

    run: str
    task_id: int
    causes: tuple[SuggestedCause, ...]
    decision: Decision | None

    @property
    def primary(self) -> SuggestedCause:
        return self.causes[0]

    @property
    def others(self) -> tuple[SuggestedCause, ...]:
        return self.causes[1:]


def _evidence(raw: object) -> tuple[Evidence, ...]:
    items = orjson.loads(raw) if isinstance(raw, (str, bytes)) else (raw or [])
    return tuple(
        Evidence(
            kind=str(e.get("kind") or "step"), text=str(e.get("text") or ""), step_idx=e.get("step_idx"),
            seq=e.get("seq"), status=e.get("status"), run=e.get("run"), task_id=e.get("task_id"),
        )
        for e in items
        if isinstance(e, dict)
    )  # fmt: skip


def task_causes(store: Store, run: str, task_id: int) -> TaskCauses | None:
    """The task's suggested causes and the reviewer's latest decision; None when it has none."""
    rows = store.query(
        """SELECT cause, is_primary, source, rule, summary, evidence, reasoning, diagnosis_version, diagnosed_at
           FROM failure_causes WHERE run = ? AND task_id = ?""",
        [run, task_id],
    )
    if not rows:
        return None
    causes = sorted(
        (SuggestedCause(cause, cause_name(cause), bool(primary), source, rule, summary, _evidence(evidence),
                        reasoning, version, at)
         for cause, primary, source, rule, summary, evidence, reasoning, version, at in rows),
        key=lambda c: (not c.is_primary, cause_rank(c.cause)),
    )  # fmt: skip
    found = store.query(
        """SELECT label, note, author, created_at FROM annotations
           WHERE target = 'diagnosis' AND run = ? AND task_id = ? ORDER BY id DESC LIMIT 1""",
        [run, task_id],
    )
    decision = Decision(*found[0]) if found else None
    return TaskCauses(run, task_id, tuple(causes), decision)


def is_diagnosed(store: Store, run: str) -> bool:
    """The run has suggested causes (`trajreview diagnose --run` has run on it)."""
    return bool(store.query("SELECT 1 FROM failure_causes WHERE run = ? LIMIT 1", [run]))


def primary_causes_sql(runs: str = "run = $run") -> str:
    """(run, task_id, cause, by_model) of the primary causes of the runs matching `runs`; a `wrong_answer`
    found only by the rule of last resort is `no_specific_cause` until a reviewer accepts it."""
    return f"""
        SELECT run, task_id,
               CASE WHEN f.rule = '{FALLBACK_RULE}' AND d.decision IS DISTINCT FROM 'accepted' THEN '{NO_SPECIFIC}'
                    ELSE f.cause END AS cause,
               f.source = 'model' AS by_model
        FROM failure_causes f
        LEFT JOIN (SELECT run, task_id, arg_max(label, id) AS decision FROM annotations
                   WHERE target = 'diagnosis' GROUP BY run, task_id) d USING (run, task_id)
        WHERE f.is_primary AND {runs}"""


def cause_options(causes: pd.Series, failed: pd.Series, none: str) -> list[str]:
    """The primary causes a filter offers, in precedence order, and `none` when a failed task has none
    (Triage's column of causes and its failed flags); an empty list when nothing is diagnosed."""
    found = set(causes.dropna())
    if not found:
        return []
    return [c for c in ORDER if c in found] + ([none] if (causes.isna() & failed).any() else [])


def failed_tasks(store: Store, runs: list[str]) -> pd.DataFrame:
    """run, task_id, verdict, cause (None: no primary cause), by_model for every failed or errored task
    of the runs."""
    return store.query_df(
        f"""
        WITH v AS ({verdicts_sql(one_run=False)}), p AS ({primary_causes_sql("list_contains($runs, run)")})
        SELECT v.run, v.task_id, v.verdict, p.cause, coalesce(p.by_model, false) AS by_model
        FROM v LEFT JOIN p ON p.run = v.run AND p.task_id = v.task_id
        WHERE list_contains($runs, v.run) AND v.verdict IN ('failure', 'error')
        ORDER BY v.run, v.task_id
        """,
        {"runs": list(runs)},
    )


def cause_breakdown(store: Store, runs: list[str]) -> pd.DataFrame:
    """Failures by primary cause per diagnosed run: run, cause, name, tasks, by_model (of those, suggested
    by a model), failed (the run's failed and errored tasks), share, ci_low, ci_high (Wilson 95 %). Causes
    in precedence order, `undecided` and `not diagnosed` last; runs without causes are left out (see
    `undiagnosed_runs`)."""
    columns = ["run", "cause", "name", "tasks", "by_model", "failed", "share", "ci_low", "ci_high"]
    diagnosed = [r for r in runs if is_diagnosed(store, r)]
    frame = failed_tasks(store, diagnosed)
    rows = []
    for run in diagnosed:
        part = frame[frame["run"] == run]
        failed = len(part)
        for cause in (*ORDER, None):
            mine = part[part["cause"].isna()] if cause is None else part[part["cause"] == cause]
            if mine.empty:
                continue
            low, high = wilson_ci(len(mine), failed)
            rows.append({"run": run, "cause": cause, "name": cause_name(cause), "tasks": len(mine),
                         "by_model": int(mine["by_model"].sum()), "failed": failed, "share": len(mine) / failed,
                         "ci_low": low, "ci_high": high})  # fmt: skip
    return pd.DataFrame(rows, columns=columns)


@dataclass(frozen=True)
class Explained:
    """How many of a diagnosed run's failed tasks have a specific suggested cause: the headline share, in
    which the fallback (no specific cause found, unless a reviewer accepted it) and `undecided` do not count."""

    run: str
    specific: int
    failed: int
    no_specific: int

    def sentence(self) -> str:
        share = f" ({percent(self.specific / self.failed, 0)})" if self.failed else ""
        return (
            f"{self.run}: a specific cause for {self.specific} of {self.failed} failed tasks{share}; "
            f"{self.no_specific} with no specific cause found (the answer differs from the reference)."
        )


def explained(table: pd.DataFrame) -> list[Explained]:
    """Per run of a `cause_breakdown` table, the failed tasks with a specific cause (pure)."""
    out = []
    for run, part in table.groupby("run", sort=False):
        specific = int(part.loc[part["cause"].isin(PRECEDENCE), "tasks"].sum())
        no_specific = int(part.loc[part["cause"] == NO_SPECIFIC, "tasks"].sum())
        out.append(Explained(str(run), specific, int(part["failed"].iloc[0]), no_specific))
    return out


def undiagnosed_runs(store: Store, runs: list[str]) -> list[str]:
    """The runs (in the order given) that have no suggested causes yet."""
    return [r for r in runs if not is_diagnosed(store, r)]


@dataclass(frozen=True)
class CauseChange:
    """One cause in a comparison of run A with run B."""

    cause: str | None
    """The code (None: failed without a primary cause)."""
    name: str
    fixed: int
    """Tasks failing in A with this primary cause that pass in B."""
    broke: int
    """Tasks passing in A that fail in B with this primary cause."""


@dataclass(frozen=True)
class CauseComparison:
    """Run B against run A by primary cause, over the tasks both runs scored."""

    a: str
    b: str
    diagnosed_a: bool
    diagnosed_b: bool
    changes: tuple[CauseChange, ...]
    """Causes with a fixed or broken task, in precedence order."""

    @property
    def fixed(self) -> int:
        return sum(c.fixed for c in self.changes)

    @property
    def broke(self) -> int:
        return sum(c.broke for c in self.changes)

    def sentence(self) -> str:
        """'B fixed 3 of A's failures (2 environment broken, 1 answered wrong) and broke 4 of A's passes (4
        answered wrong).'"""

        def detail(counts: list[tuple[int, str]]) -> str:
            shown = [f"{n} {name}" for n, name in counts if n]
            return f" ({', '.join(shown)})" if shown else ""

        fixed = detail([(c.fixed, c.name) for c in self.changes])
        broke = detail([(c.broke, c.name) for c in self.changes])
        return (
            f"{self.b} fixed {self.fixed} of {self.a}'s failures{fixed} "
            f"and broke {self.broke} of {self.a}'s passes{broke}."
        )


def compare_causes(store: Store, a: str, b: str) -> CauseComparison:
    """Run B against run A by primary cause: per cause, the tasks B fixed (failed in A with that primary
    cause, passed in B) and broke (passed in A, failed in B with that primary cause). Only tasks both runs
    scored count (an error is a failure), as in the Compare page's 2x2."""
    rows = store.query(
        f"""
        WITH v AS ({verdicts_sql(one_run=False)}), p AS ({primary_causes_sql("run IN ($a, $b)")})
        SELECT va.verdict, vb.verdict, pa.cause, pb.cause
        FROM (SELECT * FROM v WHERE run = $a) va
        JOIN (SELECT * FROM v WHERE run = $b) vb ON va.task_id = vb.task_id
        LEFT JOIN p pa ON pa.run = $a AND pa.task_id = va.task_id
        LEFT JOIN p pb ON pb.run = $b AND pb.task_id = vb.task_id
        WHERE va.verdict IN ('success', 'failure', 'error') AND vb.verdict IN ('success', 'failure', 'error')
        """,
        {"a": a, "b": b},
    )
    fixed: dict[str | None, int] = {}
    broke: dict[str | None, int] = {}
    for verdict_a, verdict_b, cause_a, cause_b in rows:
        if verdict_a in FAILED and verdict_b == "success":
            fixed[cause_a] = fixed.get(cause_a, 0) + 1
        elif verdict_a == "success" and verdict_b in FAILED:
            broke[cause_b] = broke.get(cause_b, 0) + 1
    changes = tuple(
        CauseChange(cause, cause_name(cause), fixed.get(cause, 0), broke.get(cause, 0))
        for cause in (*ORDER, None)
        if fixed.get(cause) or broke.get(cause)
    )
    return CauseComparison(a, b, is_diagnosed(store, a), is_diagnosed(store, b), changes)
