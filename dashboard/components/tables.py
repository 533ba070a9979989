"""Every table of the app goes through `show_table`: a missing value reads '–' (never None, NaN or <NA>), and a
table of long text (run names, intents, sentences) wraps it over a few lines instead of cutting it."""

from __future__ import annotations

from typing import Any

import streamlit as st

MISSING = "–"
# Streamlit's grid wraps a cell's text only in rows taller than 4rem (64 px): three lines fit in 72.
WRAP_ROW_HEIGHT = 72


def show_table(data: Any, where: Any = None, *, wrap: bool = False, **kwargs: Any) -> Any:
    """`st.dataframe` (in `where`, default the page) with the app's missing-value mark, no index unless
    asked, and wrapped text when `wrap`; returns what st.dataframe returns (the selection)."""
    kwargs.setdefault("placeholder", MISSING)
    kwargs.setdefault("hide_index", True)
    if wrap:
        kwargs.setdefault("row_height", WRAP_ROW_HEIGHT)
    return (where or st).dataframe(data, **kwargs)
