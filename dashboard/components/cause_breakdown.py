"""Failures by suggested primary cause per run (Breakdowns): a chart whose bars open Triage on that run
and cause, a table with n and shares, and for runs not diagnosed yet, how to diagnose them."""

from __future__ import annotations

import streamlit as st

from core.queries import causes as q
from core.queries.triage import NONE
from dashboard import state
from dashboard.charts import cause_bars, export_config
from dashboard.components.downloads import table_downloads
from dashboard.components.tables import rate_columns, show_table, with_rate_text
from dashboard.db import read
from dashboard.text import escape_md


def render(runs: list[str], image: str) -> None:
    table = read(q.cause_breakdown, list(runs))
    missing = read(q.undiagnosed_runs, list(runs))
    if table is None or missing is None:
        return
    for run in missing:
        st.caption(escape_md(q.diagnose_hint(run), limit=None))
    if table.empty:
        if not missing:
            st.info("No failed task in these runs.")
        return
    for line in q.explained(table):
        st.markdown(f"**{escape_md(line.sentence(), limit=None)}**")
    st.caption("Share of each run's failed and errored tasks whose suggested primary cause is this one, with its "
               "95 % Wilson interval; (model): how many of them a model suggested where no rule decided. "
               "Click a bar to triage those tasks.")  # fmt: skip
    clicked = st.plotly_chart(
        cause_bars(table), on_select="rerun", selection_mode="points", key="breakdown-causes",
        config=export_config(image, "failures-by-cause"),
    )  # fmt: skip
    points = clicked.selection.points if clicked else []
    if points:
        run, name = points[0]["customdata"]
        code = next((c for c, n in zip(table["cause"], table["name"], strict=True) if n == name), None)
        state.go(state.TRIAGE_PAGE, {"run": run, "cause": code or NONE, "verdict": ["failure", "error"]})
    shown = with_rate_text(table, "share_text", "share", "failed")[
        ["run", "name", "tasks", "by_model", "failed", "share_text", "share", "ci_low", "ci_high"]
    ]
    show_table(
        shown, hide_index=True,
        column_config={
            "name": st.column_config.TextColumn("suggested cause"),
            "by_model": st.column_config.NumberColumn("(model)", help="of these, suggested by a model"),
            "failed": st.column_config.NumberColumn("failed tasks", help="failed and errored tasks of the run"),
            **rate_columns("share_text", "share of failures [95 % CI]", "share", "share"),
        },
    )  # fmt: skip
    table_downloads(st, shown.drop(columns=["share_text"]), "failures-by-cause")
