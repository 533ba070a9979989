"""Read models of the offline evaluation and answer-only flags, for the task review page and `show`."""

from __future__ import annotations

from typing import Any

import orjson

from core.store import Store

_JSON = ("assertions", "expected", "actual", "expected_normalized", "actual_normalized")


def task_evaluators(store: Store, run: str, task_id: int) -> list[dict[str, Any]]:
    """Every evaluator row of a task, the engine's and the offline ones (`source` says which), in order;
    JSON columns decoded."""
    rows = store.query_dicts(
        """SELECT idx, evaluator, source, status, score, unresolved_reason, explanation, error, assertions,
                  expected, actual, expected_normalized, actual_normalized
           FROM evaluator_results WHERE run = ? AND task_id = ? ORDER BY source, idx""",
        [run, task_id],
    )
    for row in rows:
        for column in _JSON:
            if isinstance(row[column], str):
                row[column] = orjson.loads(row[column])
    return rows


def task_verdicts(store: Store, run: str, task_id: int) -> dict[str, Any] | None:
    """The run's own verdict with its source and sentence, beside the offline status and the flag;
    plus whether the task's answer attempt is answer-only. None when the run has no such task."""
    rows = store.query_dicts(
        """SELECT t.task_id, t.answer_only, t.final_url, e.status, e.score, e.source, e.explanation,
                  e.explanation_source, e.offline_status, e.offline_config, e.offline_disagrees
           FROM trajectories t LEFT JOIN evaluations e ON e.run = t.run AND e.task_id = t.task_id
           WHERE t.run = ? AND t.task_id = ? AND t.is_answer""",
        [run, task_id],
    )
    return rows[0] if rows else None


def disagreements(store: Store, run: str) -> list[dict[str, Any]]:
    """Tasks whose offline status is decided and differs from the run's own verdict (flagged)."""
    return store.query_dicts(
        """SELECT task_id, status, source, offline_status, offline_config, explanation FROM evaluations
           WHERE run = ? AND offline_disagrees ORDER BY task_id""",
        [run],
    )


def answer_only_tasks(store: Store, run: str) -> list[int]:
    """Task ids whose answer attempt records only the final answer (step metrics NULL, `answer_only`)."""
    return [t for (t,) in store.query(
        "SELECT task_id FROM trajectories WHERE run = ? AND is_answer AND answer_only ORDER BY task_id", [run])]  # fmt: skip
