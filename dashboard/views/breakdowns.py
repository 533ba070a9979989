"""Breakdowns: `?runs=…&dim=…&img=svg` — success rate with its 95 % CI per run by site, task type, hard
subset, termination and reviewer label, and failures by suggested cause; every bar opens Triage on that
run filtered to that value."""

from __future__ import annotations

import streamlit as st

from core.queries import breakdowns as q
from core.queries import runs as rq
from core.queries.defect_rate import WITH_DEFECTS
from dashboard import state
from dashboard.charts import export_config, rate_bars
from dashboard.components import cause_breakdown
from dashboard.components.downloads import table_downloads
from dashboard.components.run_picker import pick_runs
from dashboard.components.tables import rate_columns, show_table, with_rate_text
from dashboard.db import read

st.title("Breakdowns")
cols = st.columns([5, 1.2])
chosen = pick_runs(cols[0], help="The runs side by side; part of the URL.")
image = state.url_selectbox(cols[1], "Chart download", ("png", "svg"), "img", default="png",
                            help="Format of the camera button above each chart")  # fmt: skip

table = read(q.breakdowns, tuple(chosen))
if table is None:
    st.stop()
st.caption(
    "Success rate = successes / scored tasks (success, failure, error), with its 95 % Wilson interval; "
    "unscored tasks are left out and counted in *unscored*. Bars say rate · successes/scored. "
    f"Click a bar to triage those tasks. {rq.MULTI_SITE_RULE} `{q.NONE}`: not recorded."
)
CAUSES_TAB = "failure cause"  # failures by suggested cause: shares of failed tasks, not success rates
dimensions = [*q.DIMENSIONS, CAUSES_TAB]
# Only the open tab builds its chart (many Plotly charts make every click on a page slow).
for dimension, tab in zip(dimensions, state.url_tabs(dimensions, "dim"), strict=True):
    if not tab.open:
        continue
    if dimension == CAUSES_TAB:
        with tab:
            cause_breakdown.render(chosen, image or "png")
        continue
    with tab:
        part = table[table["dimension"] == dimension]
        if part["scored"].sum() == 0:
            st.info("No scored task in these runs.")
            continue
        clicked = st.plotly_chart(
            rate_bars(part), on_select="rerun", selection_mode="points", key=f"breakdown-{dimension}",
            config=export_config(image or "png", f"success-by-{dimension.replace(' ', '-')}"),
        )  # fmt: skip
        points = clicked.selection.points if clicked else []
        if points:
            run, value = points[0]["customdata"]
            state.go(state.TRIAGE_PAGE, {"run": run, q.DIMENSIONS[dimension][1]: value})
        # Beside the official rate, only where a reviewer confirmed an evaluator defect (core.queries.defect_rate).
        defects = ["with_defects", "defects_moved"] if part["defects_moved"].any() else []
        shown = with_rate_text(part, "success", "success_rate", "scored")[
            ["run", "value", "success", *defects, "scored", "successes", "failures", "errors", "unscored",
             "success_rate", "ci_low", "ci_high"]
        ].rename(columns={"value": dimension})  # fmt: skip
        show_table(
            shown,
            hide_index=True,
            column_config={
                "with_defects": st.column_config.TextColumn(WITH_DEFECTS, help="failed tasks with a confirmed evaluator defect counted as passes"),
                "defects_moved": st.column_config.NumberColumn("moved", help="failed tasks a confirmed evaluator defect moves"),
                **rate_columns("success", "success rate [95 % CI]", "success_rate", "rate"),
            },
        )  # fmt: skip
        table_downloads(st, shown.drop(columns=["success"]), f"success-by-{dimension}")
