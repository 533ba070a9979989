"""Overview: what the database holds — tasks per site and the imported runs."""

from __future__ import annotations

import streamlit as st

from core.queries import overview as reports
from dashboard.charts import tasks_per_site
from dashboard.db import db_path, read

st.title("Overview")
st.caption(f"Database: `{db_path().name}`")

per_site = read(reports.tasks_per_site)
if per_site is not None:
    if per_site.empty:
        st.info("No tasks loaded yet. Run `trajreview import tasks` to load the 812 WebArena-Verified tasks.")
    else:
        total = int(per_site["tasks"].sum())
        st.metric("Tasks", total)
        st.subheader("Tasks per site")
        st.caption(
            "Multi-site tasks form their own bucket (sorted sites joined with '-'), as the official scorer counts them."
        )
        st.plotly_chart(tasks_per_site(per_site), width="stretch")
        st.dataframe(per_site, hide_index=True, width="stretch")

runs = read(reports.runs_overview)
if runs is not None:
    st.subheader("Runs")
    if runs.empty:
        st.info("No runs imported yet. See `trajreview import --help`.")
    else:
        st.dataframe(runs, hide_index=True, width="stretch")
