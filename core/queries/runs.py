"""Read models about runs: what was imported, its problems, its attempts."""

from __future__ import annotations

from typing import Any

from core.store import Store


def problems_of(store: Store, run: str) -> list[dict[str, Any]]:
    return store.query_dicts(
        "SELECT task_id, source_path, kind, message FROM import_problems WHERE run = ? ORDER BY task_id NULLS FIRST",
        [run],
    )


def several_attempts(store: Store, run: str) -> list[dict[str, Any]]:
    """Tasks of `run` with more than one episode, and which episode is the run's answer for each."""
    return store.query_dicts(
        "SELECT task_id, count(*) AS attempts, any_value(episode) FILTER (WHERE is_answer) AS answer"
        " FROM trajectories WHERE run = ? GROUP BY task_id HAVING count(*) > 1 ORDER BY task_id",
        [run],
    )
