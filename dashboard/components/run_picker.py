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


def run_names_or_stop() -> list[str]:
    """Every run's name, most recent first; stops the page with one line when there is none."""
    names = read(q.run_names)
    if names is None:
        st.stop()
    if not names:
        st.info("No runs imported yet: see the Runs page.")
        st.stop()
    return names


def pick_runs(container, help: str, default_count: int = 3) -> list[str]:
    """The runs named by the URL parameter `runs` (default: the most recent `default_count`, then written
    to the URL); unknown names are said and left out; stops the page when none is chosen."""
    names = run_names_or_stop()
    if not state.list_param("runs"):
        state.set_param("runs", names[:default_count])
    chosen = state.url_multiselect(container, "Runs", names, "runs", help=help)
    unknown = [r for r in state.list_param("runs") if r not in names]
    if unknown:
        st.warning(f"No run named {', '.join(map(repr, unknown))} in this database: left out.")
    if not chosen:
        st.info("Choose one or more runs.")
        st.stop()
    return chosen
