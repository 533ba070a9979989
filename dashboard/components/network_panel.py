"""The Network tab: the task's trace events (static resources hidden by default), a waterfall, the
events the evaluators matched, and one event's stored request (secrets were redacted at import)."""

from __future__ import annotations

import orjson
import streamlit as st

from core.queries import network as q
from dashboard import state
from dashboard.charts import waterfall
from dashboard.components import labels_panel, network_evidence
from dashboard.components.tables import show_table
from dashboard.db import read

MAX_TABLE_ROWS = 5_000


def render(run: str, task_id: int) -> None:
    count = read(q.event_count, run, task_id)
    if count is None:
        return
    if count["events"] == 0:
        st.info("No network trace for this task in this run (only WebArena-Verified runs carry one).")
        return
    network_evidence.render(run, task_id)
    cols = st.columns([1.6, 2, 2, 2, 3])
    show_static = state.url_toggle(
        cols[0],
        f"{count['static']} static",
        "static",
        help="Stylesheets, scripts, images, fonts and files under a versioned static path (e.g. "
        "/static/version1681922233/…) are hidden by default.",
    )
    methods = state.url_multiselect(cols[1], "Method", read(q.methods, run, task_id) or [], "method")
    statuses = state.url_multiselect(cols[2], "Status", q.STATUS_CLASSES, "status")
    types = state.url_multiselect(cols[3], "Type", q.EVENT_TYPES, "etype")
    needle = state.url_text(cols[4], "URL contains", "url")
    flt = q.EventFilter(show_static=show_static, methods=tuple(methods), status_classes=tuple(statuses),
                        event_types=tuple(types), url_contains=needle or "")  # fmt: skip
    events = read(q.events, run, task_id, flt)
    if events is None:
        return
    st.caption(
        f"{len(events)} of {count['events']} events shown"
        + (" (static resources hidden)" if not show_static else "")
    )
    if events.empty:
        st.info("No event matches these filters.")
        return
    if st.toggle("Waterfall", value=len(events) <= 400, key="waterfall"):
        st.plotly_chart(waterfall(events), config={"displaylogo": False}, key="waterfall-chart")
        if len(events) > 1500:
            st.caption("The waterfall shows the first 1,500 events of the filter.")
    table = events.head(MAX_TABLE_ROWS)
    picked = show_table(
        table, hide_index=True, on_select="rerun", selection_mode="single-row",
        key=f"events-{hash(flt)}",
        column_order=("seq", "start_ms", "time_ms", "method", "status", "event_type", "url", "step", "evaluator"),
        column_config={
            "start_ms": st.column_config.NumberColumn("at (ms)", format="%d"),
            "time_ms": st.column_config.NumberColumn("took (ms)", format="%.0f"),
            "event_type": "type", "url": st.column_config.TextColumn("URL", width="large"),
            "step": st.column_config.NumberColumn("during step", format="%d"),
        },
    )  # fmt: skip
    if len(events) > MAX_TABLE_ROWS:
        st.caption(
            f"Table limited to the first {MAX_TABLE_ROWS:,} events of the filter; narrow it to see more."
        )
    if picked.selection.rows:
        state.set_param("ev", int(table.iloc[picked.selection.rows[0]]["seq"]))
    seq = state.int_param("ev")
    if seq is not None:
        _detail(run, task_id, seq)


def _detail(run: str, task_id: int, seq: int) -> None:
    event = read(q.event_detail, run, task_id, seq)
    if event is None:
        st.caption(f"Event #{seq} is not in this trace.")
        return
    with st.container(border=True):
        st.markdown(
            f"**Event #{seq}** · {event['method']} · status {event['status']} · {event['event_type']}"
        )
        st.code(event["url"] or "", language=None, wrap_lines=True)
        labels_panel.render("event", run, task_id, event_seq=seq, what="event")
        for label, key in (("Referer", "referer"), ("Redirects to", "redirect_url")):
            if event.get(key):
                st.caption(label)
                st.code(event[key], language=None, wrap_lines=True)
        left, right = st.columns(2)
        with left:
            st.caption("Request headers (as stored: secrets redacted)")
            st.json(event.get("request_headers") or {}, expanded=False)
            if event.get("query"):
                st.caption("Query")
                st.json(event["query"], expanded=False)
        with right:
            st.caption("Request body" + (" (truncated)" if event["body_truncated"] else ""))
            if event["body_text"]:
                st.code(event["body_preview"], language=None, wrap_lines=True)
                st.download_button(
                    "Download body", event["body_text"].encode(), file_name=f"task{task_id}-event{seq}-body.txt",
                    key=f"body-{seq}",
                )  # fmt: skip
            else:
                st.caption("none")
        st.download_button(
            "Download event (JSON)", orjson.dumps(event, default=str, option=orjson.OPT_INDENT_2),
            file_name=f"task{task_id}-event{seq}.json", key=f"event-{seq}",
        )  # fmt: skip
