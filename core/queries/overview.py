"""Read models of a run's overview: its failures, each with its one-sentence explanation."""

from __future__ import annotations

from core.store import Store


def failed_tasks(store: Store, run: str) -> list[dict]:
    """Failed or errored tasks of a run with their one-sentence explanation, cannot-pass ones flagged."""
    return store.query_dicts(
        """
        SELECT e.task_id, t.site_key, e.status, e.explanation, e.error, e.cannot_pass
        FROM evaluations e LEFT JOIN tasks t USING (task_id)
        WHERE e.run = ? AND e.status <> 'success'
        ORDER BY e.cannot_pass, e.status DESC, e.task_id
        """,
        [run],
    )
