"""Run the offline evaluators (core.offline_eval) over a stored run and store what they decide.

Called inside an import's own transaction (so a run lands with its sentences) and by
`trajreview evaluate --run R --offline`. Runs scored by the official engine are left alone.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import duckdb
import orjson

from core.offline_eval import (
    OFFLINE_SOURCES,
    SOURCE_ORIGINAL,
    SOURCE_RECORDED,
    TaskInput,
    TaskOutcome,
    evaluate_task,
    original_config,
    recorded_config,
)
from core.store import Store, insert_rows

ENGINE_SOURCE = "webarena-verified"


@dataclass
class OfflineSummary:
    run: str
    tasks: int = 0
    statuses: Counter = field(default_factory=Counter)  # offline status -> tasks
    decidable: int = 0  # tasks whose every evaluator was decidable offline
    compared: int = 0  # decidable tasks that also have the run's own verdict
    agree: int = 0
    disagreements: list[tuple[int, str, str]] = field(default_factory=list)  # (task, run verdict, offline)
    by_evaluator: Counter = field(default_factory=Counter)  # (evaluator, status) -> count

    @property
    def agreement(self) -> float | None:
        return self.agree / self.compared if self.compared else None


def _inputs(cur: duckdb.DuckDBPyConnection, run: str) -> list[TaskInput]:
    rows = cur.execute(
        """
        WITH pages AS (
            SELECT task_id, episode, arg_max(url, idx) AS last_url, arg_min(url, idx) AS first_url
            FROM steps WHERE run = $run AND url IS NOT NULL GROUP BY task_id, episode
        )
        SELECT t.task_id, t.task_config, t.final_answer, coalesce(t.answer_only, false) AS answer_only,
               p.last_url, p.first_url,
               o.task_id AS o_task_id, o.intent, o.sites, o.start_url, o.eval_types, o.reference_answers,
               o.reference_url, o.program_html, o.string_note
        FROM trajectories t LEFT JOIN original_tasks o ON o.task_id = t.task_id
        LEFT JOIN pages p ON p.task_id = t.task_id AND p.episode = t.episode
        WHERE t.run = $run AND t.is_answer ORDER BY t.task_id
        """,
        {"run": run},
    ).fetchall()
    names = [d[0] for d in cur.description]
    inputs = []
    for values in rows:
        row = dict(zip(names, values, strict=True))
        config, source = recorded_config(row["task_config"]), SOURCE_RECORDED
        if config is None and row["o_task_id"] is not None:
            config, source = original_config({**row, "task_id": row["o_task_id"]}), SOURCE_ORIGINAL
        if config is None:
            continue
        inputs.append(
            TaskInput(
                row["task_id"],
                config,
                source,
                row["final_answer"],
                row["last_url"],
                row["first_url"],
                bool(row["answer_only"]),
            )
        )
    return inputs


def write_offline(cur: duckdb.DuckDBPyConnection, run: str) -> OfflineSummary:
    """Inside the caller's transaction: evaluate every answer attempt of `run` offline, replace the run's
    offline evaluator rows, and record the offline status, the disagreement flag and — where the run's
    verdict is not a success and carries no sentence — the sentence, on its `evaluations` rows."""
    summary = OfflineSummary(run)
    engine = cur.execute(
        "SELECT count(*) FROM evaluations WHERE run = ? AND source = ?", [run, ENGINE_SOURCE]
    ).fetchall()[0][0]
    if engine:
        return summary  # scored by the official engine: its own sentences stand
    outcomes: list[TaskOutcome] = [evaluate_task(t) for t in _inputs(cur, run)]
    verdicts = dict(cur.execute("SELECT task_id, status FROM evaluations WHERE run = ?", [run]).fetchall())
    cur.execute(
        "DELETE FROM evaluator_results WHERE run = ? AND list_contains(?, source)",
        [run, list(OFFLINE_SOURCES)],
    )
    rows = []
    updates = []
    for o in outcomes:
        summary.tasks += 1
        summary.statuses[o.status] += 1
        for idx, e in enumerate(o.evaluators):
            summary.by_evaluator[(e.evaluator, e.status)] += 1
            rows.append({
                "run": run, "task_id": o.task_id, "idx": idx, "evaluator": e.evaluator, "status": e.status,
                "score": {"success": 1.0, "failure": 0.0}.get(e.status),
                "expected": orjson.dumps(e.expected, default=str).decode(),
                "actual": orjson.dumps(e.actual, default=str).decode(),
                "explanation": e.explanation, "source": o.config_source,
            })  # fmt: skip
        own = verdicts.get(o.task_id)
        disagrees = None
        if o.decidable:
            summary.decidable += 1
            if own in ("success", "failure"):
                summary.compared += 1
                disagrees = own != o.status
                if disagrees:
                    summary.disagreements.append((o.task_id, own, o.status))
                else:
                    summary.agree += 1
        updates.append((o.task_id, o.status, disagrees, _sentence(o, own, disagrees)))
    insert_rows(cur, "evaluator_results", rows)
    if updates:
        cur.execute(
            "CREATE TEMP TABLE _offline (task_id INTEGER, offline_status VARCHAR, disagrees BOOLEAN, sentence VARCHAR)"
        )
        try:
            cur.executemany("INSERT INTO _offline VALUES (?, ?, ?, ?)", updates)
            cur.execute(
                """UPDATE evaluations e SET offline_status = o.offline_status, verdict_disagrees = o.disagrees,
                          explanation = CASE WHEN e.status <> 'success' AND e.explanation IS NULL THEN o.sentence
                                             WHEN o.disagrees AND e.explanation IS NULL THEN o.sentence
                                             ELSE e.explanation END
                   FROM _offline o WHERE e.run = ? AND e.task_id = o.task_id""",
                [run],
            )
        finally:
            cur.execute("DROP TABLE _offline")
    return summary


def _sentence(o: TaskOutcome, own: str | None, disagrees: bool | None) -> str | None:
    """The task's sentence: why it failed offline, what could not be checked, or the disagreement."""
    if disagrees and own == "failure":
        checked = ", ".join(e.evaluator for e in o.evaluators)
        return (f"the run's own verdict is a failure, but offline every check passes ({checked}, with the "
                "recorded answer and last page): the run's evaluator and WebArena's disagree here")  # fmt: skip
    text = o.sentence()
    if disagrees and own == "success" and text:
        return f"offline check fails although the run says it passed: {text}"
    return text


def evaluate_offline(store: Store, run: str) -> OfflineSummary:
    """`trajreview evaluate --run R --offline`: re-run the offline evaluators of a stored run."""
    from core.errors import TrajreviewError

    if not store.query("SELECT 1 FROM runs WHERE name = ?", [run]):
        raise TrajreviewError(f"no run named {run!r}")
    with store.transaction() as cur:
        return write_offline(cur, run)


def offline_results(store: Store, run: str) -> list[dict[str, Any]]:
    """Per task: the run's verdict, the offline status, the disagreement flag (for reports and tests)."""
    return store.query_dicts(
        "SELECT task_id, status, offline_status, verdict_disagrees, explanation FROM evaluations"
        " WHERE run = ? ORDER BY task_id",
        [run],
    )
