"""Runs (home): one row per run with its success rate and CI; success by site per run. A row opens
Triage on that run, a bar opens Triage on that run and site."""

from __future__ import annotations

import streamlit as st

from core.queries import defects as dq
from core.queries import runs as q
from core.queries.defect_rate import WITH_DEFECTS
from dashboard import state
from dashboard.charts import success_by_site
from dashboard.components import failures_by_cause, import_hint
from dashboard.components.formatting import rate_with_ci
from dashboard.components.tables import show_table
from dashboard.db import db_path, fingerprint, read
from dashboard.text import clip, escape_md

st.title("Runs")
runs = read(q.runs_table)
if runs is not None and not runs.empty:
    failures_by_cause.render()
if runs is None:
    st.stop()
if runs.empty:
    import_hint.render()
    st.stop()

st.subheader("Every run")
st.caption(
    f"{len(runs)} runs in `{db_path().name}`. Success rate = successes / scored tasks, with its 95 % "
    "Wilson interval; unscored tasks are left out and counted in *tasks − scored*. Select a row to triage it."
)
table = runs.assign(
    success=[rate_with_ci(r, lo, hi, n) for r, lo, hi, n in runs[["success_rate", "ci_low", "ci_high", "scored"]].itertuples(index=False)],
    metrics=runs["metrics"].fillna("none"),
)[["run", "success", "with_defects", "tasks", "scored", "failures", "errors", "import_problems", "agent", "model",
   "paradigm", "source", "verdict_sources", "metrics"]]  # fmt: skip
# Beside the official rate, never instead of it; only when a reviewer confirmed an evaluator defect somewhere.
if not (runs["defects_moved"] > 0).any():
    table = table.drop(columns=["with_defects"])
picked = show_table(
    table, wrap=True, on_select="rerun", selection_mode="single-row",
    key=f"runs-table-{hash(fingerprint())}",
    column_config={
        "run": st.column_config.TextColumn("run", width="medium"),
        "model": st.column_config.TextColumn("model", width="medium"),
        "success": st.column_config.TextColumn("success rate [95 % CI]", help="successes / scored tasks"),
        "with_defects": st.column_config.TextColumn(
            WITH_DEFECTS, help="the official rate with the failed tasks whose evaluator defect a reviewer "
            "confirmed counted as passes (+ tasks moved); empty: none confirmed"),
        "import_problems": st.column_config.NumberColumn("import problems"),
        "verdict_sources": st.column_config.TextColumn("verdict source", help="who decided pass/fail"),
        "metrics": st.column_config.TextColumn("metrics (gold / judge)"),
    },
)  # fmt: skip
if picked.selection.rows:
    state.go(state.TRIAGE_PAGE, {"run": table.iloc[picked.selection.rows[0]]["run"]})
defects = read(dq.defect_counts)
if defects is not None and not defects.empty:
    st.caption(
        "Suspected evaluator defects (the benchmark's check refused an answer that looks right), per run:"
    )
    cols = st.columns(min(len(defects), 4))
    for i, row in enumerate(defects.itertuples(index=False)):
        cols[i % len(cols)].page_link(
            state.DEFECTS_PAGE, label=f"{escape_md(row.run, 60)}: {row.suspected} suspected · {row.confirmed} confirmed",
            query_params={"run": row.run}, icon=":material/gavel:",
        )  # fmt: skip

st.subheader("Success rate by site")
st.caption(q.MULTI_SITE_RULE + " Bars show successes/scored tasks; click a bar to triage that site.")
all_runs = runs["run"].tolist()
if not state.list_param("chart"):
    state.set_param("chart", all_runs[:3])
charted = state.url_multiselect(
    st,
    "Runs to chart",
    all_runs,
    "chart",
    help="Every chart is one run; the selection is part of the page's URL.",
)
# One tab per charted run; only the open tab builds its chart (a page of many Plotly charts makes every
# click on this page slow in the browser).
if charted:
    for run, tab in zip(charted, state.url_tabs(charted, "site_chart"), strict=True):
        if not tab.open:
            continue
        with tab:
            per_site = read(q.success_by_site, run)
            if per_site is None or per_site["scored"].sum() == 0:
                st.info(f"{run}: no scored task to chart.")
                continue
            row = runs[runs["run"] == run].iloc[0]
            title = f"{clip(run, 60)} — {rate_with_ci(row.success_rate, row.ci_low, row.ci_high, int(row.scored))}"
            if row.defects_moved:
                st.caption(escape_md(f"{WITH_DEFECTS}: {row.with_defects}", limit=None))
            clicked = st.plotly_chart(
                success_by_site(per_site, title), on_select="rerun", selection_mode="points",
                key=f"site-chart-{run}", config={"displaylogo": False},
            )  # fmt: skip
            points = clicked.selection.points if clicked else []
            if points:
                state.go(state.TRIAGE_PAGE, {"run": run, "site": points[0]["customdata"]})
