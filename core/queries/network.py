"""The Network tab: a task's trace events, filtered in the database, with the events the evaluators
matched, and each event placed under the step during which it happened."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import orjson
import pandas as pd

from core.store import Store

EVENT_TYPES = ("navigation", "mutation", "other")
STATUS_CLASSES = ("2xx", "3xx", "4xx", "5xx", "none")
BODY_PREVIEW_CHARS = 2_000


@dataclass(frozen=True)
class EventFilter:
    show_static: bool = False
    methods: tuple[str, ...] = ()
    status_classes: tuple[str, ...] = ()
    event_types: tuple[str, ...] = ()
    url_contains: str = ""


def event_count(store: Store, run: str, task_id: int) -> dict[str, int]:
    """Events in the task's trace: all, and how many are static resources (hidden by default)."""
    total, static = store.query(
        "SELECT count(*), count(*) FILTER (WHERE is_static_asset) FROM network_events WHERE run = ? AND task_id = ?",
        [run, task_id],
    )[0]
    return {"events": total, "static": static}


def methods(store: Store, run: str, task_id: int) -> list[str]:
    return [
        m
        for (m,) in store.query(
            "SELECT DISTINCT method FROM network_events WHERE run = ? AND task_id = ? AND method IS NOT NULL ORDER BY 1",
            [run, task_id],
        )
    ]


def matched_events(store: Store, run: str, task_id: int) -> dict[int, list[str]]:
    """seq -> what points at it: 'matched by <evaluator>' or 'nearest candidate for <evaluator>'."""
    found: dict[int, list[str]] = {}
    for evaluator, idx, matched, nearest in store.query(
        "SELECT evaluator, idx, matched_event_seq, nearest_event_seq FROM evaluator_results"
        " WHERE run = ? AND task_id = ? ORDER BY idx",
        [run, task_id],
    ):
        name = f"{evaluator} #{idx}"
        if matched is not None:
            found.setdefault(int(matched), []).append(f"matched by {name}")
        if nearest is not None:
            found.setdefault(int(nearest), []).append(f"nearest candidate for {name}")
    return found


def events(store: Store, run: str, task_id: int, f: EventFilter = EventFilter()) -> pd.DataFrame:
    """Filtered events in trace order: seq, offset from the first event (ms), duration, method, status,
    type, URL, size, the step during which it happened (when step times exist), evaluator marks."""
    where = ["e.run = $run", "e.task_id = $task"]
    params: dict[str, Any] = {"run": run, "task": task_id}
    if not f.show_static:
        where.append("NOT coalesce(e.is_static_asset, false)")
    if f.methods:
        where.append("list_contains($methods, e.method)")
        params["methods"] = list(f.methods)
    if f.status_classes:
        where.append(
            "list_contains($classes, CASE WHEN e.status IS NULL OR e.status <= 0 THEN 'none'"
            " ELSE CAST(e.status // 100 AS VARCHAR) || 'xx' END)"
        )
        params["classes"] = list(f.status_classes)
    if f.event_types:
        where.append("list_contains($types, e.event_type)")
        params["types"] = list(f.event_types)
    if f.url_contains.strip():
        where.append("contains(lower(e.url), $needle)")
        params["needle"] = f.url_contains.strip().lower()
    df = store.query_df(
        f"""
        WITH first AS (SELECT min(started_at) AS t0 FROM network_events WHERE run = $run AND task_id = $task),
        answer AS (SELECT episode FROM trajectories WHERE run = $run AND task_id = $task AND is_answer),
        step_times AS (
            SELECT s.idx, s.started_at FROM steps s JOIN answer USING (episode)
            WHERE s.run = $run AND s.task_id = $task AND s.started_at IS NOT NULL
        )
        SELECT e.seq, date_diff('millisecond', first.t0, e.started_at) AS start_ms, e.time_ms,
               e.method, e.status, e.event_type, e.url, e.mime_type, e.size, e.is_static_asset,
               (SELECT max(st.idx) FROM step_times st WHERE st.started_at <= e.started_at) AS step
        FROM network_events e, first
        WHERE {" AND ".join(where)}
        ORDER BY e.seq
        """,
        params,
    )
    marks = matched_events(store, run, task_id)
    df["evaluator"] = [", ".join(marks.get(int(s), [])) or None for s in df["seq"]]
    return df


def event_detail(store: Store, run: str, task_id: int, seq: int) -> dict[str, Any] | None:
    """One event as stored (secrets already redacted at import), its body preview and full body."""
    rows = store.query_dicts(
        "SELECT * FROM network_events WHERE run = ? AND task_id = ? AND seq = ?", [run, task_id, seq]
    )
    if not rows:
        return None
    event = rows[0]
    for key in ("query", "post_data", "request_headers"):
        if isinstance(event.get(key), str):
            with contextlib.suppress(orjson.JSONDecodeError):
                event[key] = orjson.loads(event[key])
    body = event.get("post_data")
    body_text = (
        ""
        if body is None
        else (body if isinstance(body, str) else orjson.dumps(body, option=orjson.OPT_INDENT_2).decode())
    )
    event["body_text"] = body_text
    event["body_preview"] = body_text[:BODY_PREVIEW_CHARS]
    event["body_truncated"] = len(body_text) > BODY_PREVIEW_CHARS
    return event
