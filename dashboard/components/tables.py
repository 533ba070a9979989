"""Every table of the app goes through `show_table`: a missing value reads '–' (never None, NaN or <NA>), and a
table of long text (run names, intents, sentences) wraps it over a few lines instead of cutting it. A table of
rates says each with its interval and n (`with_rate_text`) and configures those columns one way (`rate_columns`)."""

from __future__ import annotations

from typing import Any

import streamlit as st

from dashboard.components.formatting import rate_with_ci

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


def with_rate_text(table: Any, text: str, rate: str, n: str) -> Any:
    """`table` with column `text`: its `rate` in words with the 95 % interval (`ci_low`, `ci_high`) and the
    `n` it covers, '67.9 % [64.7–71.1] of 812'."""
    rows = table[[rate, "ci_low", "ci_high", n]].itertuples(index=False)
    return table.assign(**{text: [rate_with_ci(r, lo, hi, int(k)) for r, lo, hi, k in rows]})


def rate_columns(text: str, text_label: str, rate: str, rate_label: str) -> dict[str, Any]:
    """The column configuration every rate table shares: the rate in words with its interval, then the
    rate and its interval's ends as numbers to three decimals (the figures a download keeps)."""
    number = st.column_config.NumberColumn
    return {
        text: st.column_config.TextColumn(text_label),
        rate: number(rate_label, format="%.3f"),
        "ci_low": number("CI low", format="%.3f"),
        "ci_high": number("CI high", format="%.3f"),
    }
