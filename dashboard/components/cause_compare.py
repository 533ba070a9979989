"""Compare by suggested cause: per primary cause, the tasks run B fixed (failed in A with that cause,
passed in B) and broke (passed in A, failed in B with that cause), and the sentence that says it."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.queries import causes as q
from dashboard.components.downloads import table_downloads
from dashboard.components.tables import show_table
from dashboard.db import read
from dashboard.text import escape_md


def render(a: str, b: str) -> None:
    st.subheader("By suggested cause")
    cmp = read(q.compare_causes, a, b)
    if cmp is None:
        return
    for run, diagnosed in ((a, cmp.diagnosed_a), (b, cmp.diagnosed_b)):
        if not diagnosed:
            st.caption(escape_md(q.diagnose_hint(run), limit=None))
    if not cmp.diagnosed_a and not cmp.diagnosed_b:
        return
    st.markdown(escape_md(cmp.sentence(), limit=None))
    st.caption("Over the tasks both runs scored. Fixed: failed in A with this primary cause, passed in B. "
               "Broke: passed in A, failed in B with this primary cause (B's diagnosis).")  # fmt: skip
    if not cmp.changes:
        return
    table = pd.DataFrame([{"suggested cause": c.name, "fixed by B": c.fixed, "broken by B": c.broke}
                          for c in cmp.changes])  # fmt: skip
    show_table(table, hide_index=True)
    table_downloads(st, table, f"causes-{a}-vs-{b}")
