"""Label and note on one run, task, step or network event: the current ones (latest write wins), a small
editor in a popover, and the history. Hidden editor on a read-only instance."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.queries import annotations as qa
from core.review.annotations import annotate
from dashboard.components.tables import show_table
from dashboard.db import read, read_only, write
from dashboard.identity import ask_reviewer_name
from dashboard.text import escape_md

NO_LABEL = "(no label)"


def render(
    target: str,
    run: str,
    task_id: int | None = None,
    *,
    episode: str | None = None,
    step_idx: int | None = None,
    event_seq: int | None = None,
    what: str | None = None,
) -> None:
    """One line with the current label and note, then the popover to change them and the history."""
    where = {"episode": episode, "step_idx": step_idx, "event_seq": event_seq}
    key = "-".join(str(v) for v in (target, run, task_id, episode, step_idx, event_seq) if v is not None)
    what = what or target
    rows = read(qa.history, target, run, task_id, **where)
    if rows is None:
        return
    now = rows[0] if rows and (rows[0]["label"] or rows[0]["note"]) else None
    cols = st.columns([5, 1.2, 1.2], vertical_alignment="center")
    with cols[0]:
        if now:
            label = f"**Label:** `{escape_md(now['label'], 60)}`" if now["label"] else "**Label:** –"
            st.markdown(f"{label} · {escape_md(now['author'], 60)}, {now['created_at']:%Y-%m-%d %H:%M} UTC")
            if now["note"]:
                st.text(now["note"])
        else:
            st.caption(f"No reviewer label or note on this {what}.")
    if not read_only():
        with cols[1].popover("Label / note", icon=":material/label:", width="stretch"):
            _editor(target, run, task_id, where, key, now, what)
    if rows:
        with cols[2].popover(f"History ({len(rows)})", icon=":material/history:", width="stretch"):
            history = pd.DataFrame(rows)[["created_at", "author", "label", "note"]]
            show_table(history, hide_index=True, width="stretch",
                         column_config={"created_at": st.column_config.DatetimeColumn("when (UTC)")})  # fmt: skip


def _editor(
    target: str, run: str, task_id: int | None, where: dict, key: str, now: dict | None, what: str
) -> None:
    name = ask_reviewer_name(key=f"labels-{key}")
    vocabulary = [v["label"] for v in read(qa.vocabulary) or []]
    current = now["label"] if now else None
    options = [NO_LABEL, *vocabulary, *([current] if current and current not in vocabulary else [])]
    with st.form(f"labels-form-{key}", border=False):
        label = st.selectbox(f"Label of this {what}", options, index=options.index(current or NO_LABEL),
                             key=f"label-{key}", help="Edit the list on the Labels & judge page.")  # fmt: skip
        note = st.text_area("Note", value=(now or {}).get("note") or "", key=f"note-{key}", height=90,
                            placeholder="What you saw (free text)")  # fmt: skip
        saved = st.form_submit_button("Save", disabled=name is None, type="primary",
                                      help=None if name else "Say who you are first.")  # fmt: skip
    if saved and name:
        done = write(
            annotate, target, name, run=run, task_id=task_id, **where,
            label=None if label == NO_LABEL else label, note=note,
        )  # fmt: skip
        if done is not None:
            st.toast("Saved.", icon=":material/check:")
            st.rerun()
