"""Above the Network tab's events: for each network evaluator, what it expected, the event it matched (or
the nearest one it named when it failed) and, beside it, the next-closest events with what each lacks —
what a reviewer reads to settle "did the agent miss, or is the evaluator too strict?"."""

from __future__ import annotations

import streamlit as st

from core.queries import network as q
from dashboard import state
from dashboard.components.formatting import verdict_label
from dashboard.db import read
from dashboard.text import escape_md


def _open(seq: int) -> None:
    state.set_param("ev", seq)


def _event(m: q.EventMatch, title: str, key: str) -> None:
    with st.container(border=True):
        st.markdown(f"**{title}** · #{m.seq} · {escape_md(m.method or '?')} · status {m.status}"
                    + (" · page navigation" if m.navigation else ""))  # fmt: skip
        st.code(m.url or "", language=None, wrap_lines=True)
        if m.differences:
            for d in m.differences:
                st.caption(f"✗ {escape_md(d, limit=200)}")
        else:
            st.caption("✓ has every expected field")
        st.button(f"Open event #{m.seq}", key=key, on_click=_open, args=(m.seq,))


def render(run: str, task_id: int) -> None:
    found = read(q.network_evidence, run, task_id) or []
    for e in found:
        st.markdown(f"**NetworkEventEvaluator #{e.idx}** · {verdict_label(e.status)}"
                    + (" · reads the last page navigation" if e.reads_last_navigation else ""))  # fmt: skip
        if e.explanation:
            st.caption(escape_md(e.explanation, limit=None))
        query = "&".join(
            f"{k}={'|'.join(map(str, v)) if isinstance(v, list) else v}" for k, v in e.expected_query.items()
        )
        st.code(e.expected_url + (f"?{query}" if query else ""), language=None, wrap_lines=True)
        left, right = st.columns(2)
        with left:
            if e.chosen is None:
                st.caption("The evaluator named no event.")
            else:
                title = "Matched event" if e.chosen_is_match else "Nearest event (the engine named it)"
                _event(e.chosen, title, f"ev-chosen-{e.idx}")
        with right:
            if not e.misses:
                st.caption("No other page or API request in the trace.")
            for i, m in enumerate(e.misses, start=1):
                _event(m, f"Near miss {i}", f"ev-miss-{e.idx}-{m.seq}")
