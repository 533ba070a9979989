"""Who is writing: the reviewer's name on every write.

Minimal version for the gold editor: a name asked once per browser session, kept in session state.
(The OIDC login path replaces this module; its two functions keep these signatures.)
"""

from __future__ import annotations

import streamlit as st

_KEY = "reviewer_name"


def reviewer_name() -> str | None:
    """The reviewer's name for this browser session, or None when not given yet."""
    name = st.session_state.get(_KEY)
    return name.strip() if isinstance(name, str) and name.strip() else None


def ask_reviewer_name() -> str | None:
    """A name field in the sidebar (asked once per session; editable); returns the name or None."""
    st.sidebar.text_input(
        "Your name (recorded on every save)", key=_KEY, placeholder="e.g. Ada Lovelace",
        help="Stored with each gold version you save, beside the time and your reason.",
    )  # fmt: skip
    return reviewer_name()
