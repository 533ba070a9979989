"""Read models of the offline evaluation and answer-only flags, for the task review page and `show`."""

from __future__ import annotations

from typing import Any

from core.store import Store

_JSON = ("assertions", "expected", "actual", "expected_normalized", "actual_normalized")


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
