"""The Gold tab's history: every version with author, time and reason; a side-by-side diff of any two
versions; restore an old version as a new one."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from core.gold import editing as ge
from dashboard import state
from dashboard.components.tables import show_table
from dashboard.db import read, write

KIND_COLOURS = {"added": "#e6f4ea", "removed": "#fce8e6", "changed": "#fef7e0", "moved": "#e8f0fe"}
KIND_LABELS = {
    "same": "",
    "added": "+ added",
    "removed": "− removed",
    "changed": "~ changed",
    "moved": "↕ moved",
}


def _cell(value: Any) -> str:
    return "" if value is None else str(value)


def diff_frame(rows: list[dict[str, Any]]):
    """Diff rows as a styled table: old step | change | new step, coloured by kind (text stays data)."""
    frame = pd.DataFrame(
        [{"alt": r["alternative"], "old #": _cell(r["old_idx"]), "old step": _cell(r["old_text"]),
          "old flags": _cell(r["old_flags"]), "change": KIND_LABELS[r["kind"]], "new #": _cell(r["new_idx"]),
          "new step": _cell(r["new_text"]), "new flags": _cell(r["new_flags"])} for r in rows],
        columns=["alt", "old #", "old step", "old flags", "change", "new #", "new step", "new flags"],
    )  # fmt: skip
    kinds = [r["kind"] for r in rows]

    def colour(row: pd.Series) -> list[str]:
        background = KIND_COLOURS.get(kinds[row.name], "")
        return [f"background-color: {background}" if background else ""] * len(row)

    return frame.style.apply(colour, axis=1)


def show_diff(rows: list[dict[str, Any]]) -> None:
    """The side-by-side diff table: the old version's steps on the left, the new one's on the right."""
    show_table(
        diff_frame(rows), hide_index=True, width="stretch",
        column_config={
            "alt": st.column_config.NumberColumn("alt", width="small"),
            "old #": st.column_config.TextColumn("old #", width="small"),
            "new #": st.column_config.TextColumn("new #", width="small"),
            "old step": st.column_config.TextColumn("old step", width="large"),
            "new step": st.column_config.TextColumn("new step", width="large"),
            "change": st.column_config.TextColumn("change", width="small"),
        },
    )  # fmt: skip


def render(
    run: str, task_id: int, gold_set: str, versions: list[dict[str, Any]], current: int, name: str | None
) -> None:
    st.subheader("History", divider="gray")
    if not versions:
        st.caption("No version yet: the first save writes version 1.")
        return
    show_table(
        pd.DataFrame(versions),
        hide_index=True,
        width="stretch",
        column_order=("version", "author", "created_at", "reason", "alternatives", "steps"),
        column_config={
            "version": st.column_config.NumberColumn("version", format="%d", width="small"),
            "created_at": st.column_config.DatetimeColumn("saved at (UTC)", format="YYYY-MM-DD HH:mm:ss"),
        },
    )
    numbers = [v["version"] for v in versions]  # newest first
    if len(numbers) > 1:
        cols = st.columns(2)
        old = state.url_selectbox(cols[0], "Compare version", numbers, "gfrom", default=numbers[1])
        new = state.url_selectbox(cols[1], "with version", numbers, "gto", default=numbers[0])
        old = numbers[1] if old is None else old
        new = numbers[0] if new is None else new
        rows = read(ge.diff_versions, gold_set, task_id, old, new)
        if rows is not None:
            changes = [r for r in rows if r["kind"] != "same"]
            only = st.toggle("Only changed steps", value=True, key=f"gold-diff-only:{task_id}:{gold_set}")
            shown = changes if only else rows
            st.caption(f"Version {old} (left) → version {new} (right): {len(changes)} step change(s)")
            if shown:
                show_diff(shown)
    if name is not None and len(numbers) > 1:
        cols = st.columns([2, 3])
        older = [n for n in numbers if n != current]
        pick = cols[0].selectbox("Restore version", older, key=f"gold-restore-pick:{task_id}:{gold_set}")
        same = read(ge.version_content, gold_set, task_id, pick) == read(
            ge.version_content, gold_set, task_id, current
        )
        cols[1].write("")
        if cols[1].button(
            f"Restore version {pick} as version {current + 1}", key="gold-restore", icon=":material/history:",
            help="Writes that version's content as a new version; nothing is overwritten", disabled=same,
        ):  # fmt: skip
            version = write(ge.restore, gold_set, task_id, pick, name, current)
            if version is not None:
                for key in [
                    k for k in st.session_state if str(k).startswith(f"gold:{run}:{task_id}:{gold_set}:")
                ]:
                    del st.session_state[key]  # the draft restarts from the restored content
                # The diff shows what the restore changed: the version it replaced against the new one.
                state.set_param("gfrom", current)
                state.set_param("gto", version)
                st.toast(f"Restored version {pick} as version {version}.")
                st.rerun()
        if same:
            cols[1].caption(
                f"Version {pick} is the same as the current version {current}: nothing to restore."
            )
