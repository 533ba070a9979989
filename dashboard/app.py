"""trajreview dashboard entry point: `streamlit run dashboard/app.py` (or `trajreview serve`).

Navigation only: each page is one file in dashboard/views/, reachable at its own URL path.
"""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

# `streamlit run` puts this file's folder on sys.path, not the repository root.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

st.set_page_config(page_title="trajreview", page_icon=":material/fact_check:", layout="wide")

VIEWS = Path(__file__).parent / "views"


def _home() -> None:
    # The default page answers only at "/": Runs has its own path (/runs) so its links work too.
    st.switch_page(VIEWS / "runs.py", query_params=dict(st.query_params))


pages = {
    "": [st.Page(_home, title="Home", url_path="home", default=True, visibility="hidden")],
    "Review": [
        st.Page(VIEWS / "runs.py", title="Runs", icon=":material/table_rows:", url_path="runs"),
        st.Page(VIEWS / "triage.py", title="Triage", icon=":material/checklist:", url_path="triage"),
        st.Page(VIEWS / "task.py", title="Task review", icon=":material/search:", url_path="task"),
        st.Page(VIEWS / "judge.py", title="Labels & judge", icon=":material/rule:", url_path="judge"),
        st.Page(VIEWS / "search.py", title="Search", icon=":material/manage_search:", url_path="search"),
        st.Page(VIEWS / "defects.py", title="Evaluator defects", icon=":material/gavel:", url_path="defects"),
    ],
    "Present": [
        st.Page(
            VIEWS / "breakdowns.py", title="Breakdowns", icon=":material/bar_chart:", url_path="breakdowns"
        ),
        st.Page(VIEWS / "compare.py", title="Compare", icon=":material/compare_arrows:", url_path="compare"),
        st.Page(VIEWS / "metrics.py", title="Metrics", icon=":material/table_chart:", url_path="metrics"),
    ],
}
from dashboard import identity, prewarm  # noqa: E402 - after the sys.path line above
from dashboard.db import page_run, unexpected  # noqa: E402

with page_run() as run:
    try:
        page = st.navigation(pages, position="sidebar")
        run.page = page.url_path
        identity.sidebar()
        try:
            page.run()
        except Exception as exc:  # st.stop, st.rerun and page switches are not Exceptions: they pass
            unexpected(exc, "This page stopped on an unexpected error")
    finally:  # also after st.stop: the reads Runs and Triage made are what the warm computes after a write
        prewarm.remember(run.page, run.calls)
