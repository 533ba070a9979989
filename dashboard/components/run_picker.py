"""The run a page shows: a select box whose value is the URL parameter `run`."""

from __future__ import annotations

import streamlit as st

from core.queries import runs as q
from dashboard import state
from dashboard.db import read


def pick_run(label: str = "Run") -> str | None:
    """The run named in the URL (or the most recent one, then written to the URL so the view stays
    linkable); None with a message when there is none or the named one does not exist."""
    names = read(q.run_names)
    if names is None:
        return None
    if not names:
        st.info("No runs imported yet: see the Runs page.")
        return None
    wanted = state.param("run")
    if wanted is not None and wanted not in names:
        st.error(f"No run named {wanted!r} in this database.")
        st.page_link(state.RUNS_PAGE, label="Back to all runs", icon=":material/arrow_back:")
        return None
    if wanted is None:
        state.set_param("run", names[0])
    return state.url_selectbox(st, label, names, "run", default=None)
