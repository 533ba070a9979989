"""A step's pages and error as a reviewer needs them: the page the action was taken on beside the page it
led to (often the evidence), and the action's error with every line of its log block."""

from __future__ import annotations

from typing import Any

import streamlit as st

from core.values import is_missing
from dashboard.text import escape_md


def render(before: Any, after: Any) -> None:
    """The page before the action and the page after it, side by side (after: 'not recorded' when the
    source does not say)."""
    left, right = st.columns(2)
    with left:
        st.caption("Page (the action was taken here)")
        st.code(
            before if isinstance(before, str) and before else "not recorded", language=None, wrap_lines=True
        )
    with right:
        st.caption("Page after the action")
        shown = after if isinstance(after, str) and after else "not recorded by this run"
        st.code(shown, language=None, wrap_lines=True)


def error(text: Any) -> None:
    """The action's error whole: the first line as the alert, the whole text (log blocks) below it."""
    if is_missing(text) or not str(text).strip():
        return
    lines = str(text).rstrip().splitlines()
    st.error("The action failed: " + escape_md(lines[0], limit=300), icon=":material/error:")
    if len(lines) > 1 or len(lines[0]) > 300:
        st.code(str(text).rstrip(), language=None, wrap_lines=True)
