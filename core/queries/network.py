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
# What the Network tab hides as "static" unless asked: the engine's suffix rule (`is_static_asset`), plus
# files served from a versioned static directory (Magento's /static/version1681922233/…, /pub/static/,
# /static/_cache/ — templates and translations the suffix rule misses) and responses typed as a
# stylesheet, script, image or font. The engine's own rule (the column) is unchanged.
STATIC_SQL = r"""(coalesce(e.is_static_asset, false)
    OR regexp_matches(coalesce(e.url_path, ''), '/(pub/)?static/(version[0-9]+|_cache|frontend|adminhtml)/')
    OR regexp_matches(lower(coalesce(e.mime_type, '')),
                      '^(image/|font/|text/css|(application|text)/(x-)?javascript|application/font)'))"""
# Idle stretches of a trace longer than this are collapsed in the waterfall to GAP_KEPT_MS.
GAP_MS = 1_000
GAP_KEPT_MS = 150
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
        f"SELECT count(*), count(*) FILTER (WHERE {STATIC_SQL}) FROM network_events e WHERE run = ? AND task_id = ?",
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
        where.append(f"NOT {STATIC_SQL}")
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


# -- what each network evaluator matched, and the nearest misses beside it --------------------------
MISSES = 3


@dataclass(frozen=True)
class EventMatch:
    """One event as a network evaluator's evidence: what it is and how it differs from what was expected."""

    seq: int
    method: str | None
    url: str | None
    status: int | None
    navigation: bool
    differences: tuple[str, ...]
    """Each expected field the event does not have, in words; empty when it matches every one."""


@dataclass(frozen=True)
class NetworkEvidence:
    """A network evaluator of the task: what it expected, the event it matched (or the nearest one the
    engine named when it failed), and the next-closest events beside it."""

    idx: int
    status: str
    explanation: str | None
    expected_url: str
    expected_query: dict[str, Any]
    reads_last_navigation: bool
    """A navigate task: the engine compares only the last page navigation."""
    chosen: EventMatch | None
    """The matched event (success), else the nearest one the engine named."""
    chosen_is_match: bool
    misses: tuple[EventMatch, ...]
    """Up to MISSES other events closest to what was expected (same path first, then fewest differences)."""


def _expected_path(url: str) -> str:
    """The path an expected URL names, without its site placeholder, regex anchors or query."""
    text = url.strip().removeprefix("^").removesuffix("$").removesuffix(".*")
    text = text.split("?", 1)[0]
    if text.startswith("__"):
        text = text.split("__", 2)[-1]
    return "/" + text.strip("/")


def _values(value: Any) -> list[str]:
    return [str(v) for v in (value if isinstance(value, list) else [value])]


def differences(expected: dict[str, Any], event: dict[str, Any], navigation_only: bool) -> list[str]:
    """What an event lacks of an evaluator's expected event, field by field, in words."""
    diffs = []
    want_path = _expected_path(str(expected.get("url") or ""))
    got_path = "/" + str(event.get("url_path") or "").strip("/")
    if not got_path.endswith(want_path):
        diffs.append(f"path {got_path}, expected …{want_path}")
    method = expected.get("http_method")
    if method and str(method).upper() != str(event.get("method") or "").upper():
        diffs.append(f"method {event.get('method')}, expected {str(method).upper()}")
    status = expected.get("response_status")
    if status is not None and str(status) != str(event.get("status")):
        diffs.append(f"status {event.get('status')}, expected {status}")
    query = event.get("query") or {}
    for name, want in (expected.get("query_params") or {}).items():
        got = query.get(name)
        if got is None:
            diffs.append(f"no {name} (expected {', '.join(_values(want))!r})")
        elif sorted(_values(got)) != sorted(_values(want)):
            diffs.append(f"{name} {', '.join(_values(got))!r}, expected {', '.join(_values(want))!r}")
    if navigation_only and not event.get("is_navigation"):
        diffs.append("not a page navigation (the engine reads the last navigation)")
    return diffs


def network_evidence(store: Store, run: str, task_id: int) -> list[NetworkEvidence]:
    """Per network evaluator of the task: the event it matched or the nearest one it named, and the
    events closest to what it expected beside it, each with its differences."""
    evaluators = store.query_dicts(
        "SELECT r.idx, r.status, r.explanation, r.expected, r.matched_event_seq, r.nearest_event_seq,"
        " k.task_type FROM evaluator_results r LEFT JOIN tasks k USING (task_id)"
        " WHERE r.run = ? AND r.task_id = ? AND r.evaluator = 'NetworkEventEvaluator' ORDER BY r.idx",
        [run, task_id],
    )
    if not evaluators:
        return []
    events = store.query_dicts(
        "SELECT seq, method, url, url_path, query, status, is_navigation, event_type FROM network_events e"
        f" WHERE run = ? AND task_id = ? AND (NOT {STATIC_SQL} OR seq IN (SELECT unnest([?, ?]))) ORDER BY seq",
        [run, task_id, *_chosen_seqs(evaluators)],
    )
    for e in events:
        e["query"] = orjson.loads(e["query"]) if isinstance(e["query"], str) else (e["query"] or {})
    by_seq = {e["seq"]: e for e in events}
    found = []
    for ev in evaluators:
        expected = orjson.loads(ev["expected"]) if isinstance(ev["expected"], str) else (ev["expected"] or {})
        navigation_only = ev["task_type"] == "navigate"
        chosen_seq = (
            ev["matched_event_seq"] if ev["matched_event_seq"] is not None else ev["nearest_event_seq"]
        )
        others = sorted(
            (_match(e, expected, navigation_only) for e in events if e["seq"] != chosen_seq),
            key=lambda m: (any(d.startswith("path") for d in m.differences), len(m.differences), -m.seq),
        )
        chosen = by_seq.get(chosen_seq)
        found.append(
            NetworkEvidence(
                idx=ev["idx"], status=ev["status"], explanation=ev["explanation"],
                expected_url=str(expected.get("url") or ""), expected_query=expected.get("query_params") or {},
                reads_last_navigation=navigation_only,
                chosen=_match(chosen, expected, navigation_only) if chosen else None,
                chosen_is_match=ev["matched_event_seq"] is not None, misses=tuple(others[:MISSES]),
            )
        )  # fmt: skip
    return found


def _chosen_seqs(evaluators: list[dict[str, Any]]) -> list[int | None]:
    """The first matched and nearest event seqs (kept even if static: the engine named them)."""
    seqs = [e["matched_event_seq"] for e in evaluators] + [e["nearest_event_seq"] for e in evaluators]
    return ([s for s in seqs if s is not None] + [None, None])[:2]


def collapse_gaps(
    starts: list[float], ends: list[float], gap_ms: float = GAP_MS, kept_ms: float = GAP_KEPT_MS
) -> tuple[list[float], list[tuple[float, float]]]:
    """Waterfall positions with idle stretches squeezed out: events in start order; wherever nothing is
    in flight for more than `gap_ms`, the stretch is shortened to `kept_ms`. Returns each event's shifted
    start and the collapsed gaps as (position on the new axis, idle ms)."""
    order = sorted(range(len(starts)), key=lambda i: starts[i])
    shifted = [0.0] * len(starts)
    gaps: list[tuple[float, float]] = []
    removed = 0.0
    busy_until: float | None = None
    for i in order:
        if busy_until is not None and starts[i] - busy_until > gap_ms:
            idle = starts[i] - busy_until
            removed += idle - kept_ms
            gaps.append((busy_until - (removed - (idle - kept_ms)) + kept_ms / 2, idle))
        shifted[i] = starts[i] - removed
        busy_until = max(busy_until if busy_until is not None else ends[i], ends[i])
    return shifted, gaps


def _match(event: dict[str, Any], expected: dict[str, Any], navigation_only: bool) -> EventMatch:
    return EventMatch(event["seq"], event["method"], event["url"], event["status"], bool(event["is_navigation"]),
                      tuple(differences(expected, event, navigation_only)))  # fmt: skip
