"""The run a page shows: a select box bound to the URL parameter `run`."""

from __future__ import annotations

import streamlit as st

from core.queries import runs as q
from dashboard.db import read


def pick_run(label: str = "Run") -> str | None:
    """The run named in the URL (or the most recent one); None with a message when there is none."""
    names = read(q.run_names)
    if names is None:
        return None
    if not names:
        st.info("No runs imported yet: see the Runs page.")
        return None
    wanted = st.query_params.get("run")
    if wanted and wanted not in names:
        st.error(f"No run named {wanted!r} in this database.")
        st.page_link("views/runs.py", label="Back to all runs", icon=":material/arrow_back:")
        return None
    if not wanted and st.session_state.get("run") not in names:
        # No run in the URL: show the most recent one, and put it in the URL so the link stays this view
        # (a bound widget at its default is dropped from the URL, hence no default index).
        st.session_state["run"] = names[0]
    return st.selectbox(label, names, index=None, key="run", bind="query-params")
