"""Who is writing: the reviewer's name that goes on every write.

With Streamlit's built-in OIDC login configured (an `[auth]` section in `.streamlit/secrets.toml`), the
name is the logged-in user's (name, else email, else subject); nobody writes without logging in.
Without it, the reviewer types a name once per browser session (kept in `st.session_state`, so a new
tab or a reload asks again). See docs/reviewers.md.
"""

from __future__ import annotations

import streamlit as st

from dashboard.db import read_only
from dashboard.text import escape_md

_SESSION_KEY = "trajreview_reviewer_name"


def oidc_configured() -> bool:
    """True when secrets.toml has an [auth] section (Streamlit then offers st.login)."""
    try:
        return "auth" in st.secrets
    except Exception:  # no secrets file, or one that does not parse: no login configured
        return False


def _logged_in_name() -> str | None:
    user = st.user
    if not user.get("is_logged_in"):
        return None
    for field in ("name", "email", "preferred_username", "sub"):
        value = user.get(field)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def reviewer_name() -> str | None:
    """The name to write with, or None when nobody has said who they are (renders nothing)."""
    if oidc_configured():
        return _logged_in_name()
    name = st.session_state.get(_SESSION_KEY)
    return name if isinstance(name, str) and name.strip() else None


def _set_name(widget_key: str) -> None:
    st.session_state[_SESSION_KEY] = " ".join(str(st.session_state.get(widget_key) or "").split())[:200]


def ask_reviewer_name(key: str = "reviewer") -> str | None:
    """The reviewer's name; when unknown, renders the way to give it (a name field, or the login button
    with OIDC) and returns None. `key` keeps two prompts on one page apart. Nothing in read-only mode."""
    if read_only():
        return None
    name = reviewer_name()
    if name:
        return name
    if oidc_configured():
        st.button("Log in to write", key=f"login-{key}", icon=":material/login:", on_click=st.login,
                  help="Writes carry the name of the logged-in reviewer.")  # fmt: skip
        return None
    st.text_input(
        "Your name (goes on every save)", key=f"name-{key}", on_change=_set_name, args=(f"name-{key}",),
        placeholder="e.g. Ada Lovelace", help="Asked once per browser session.",
    )  # fmt: skip
    return reviewer_name()


def sidebar() -> None:
    """Who writes, in the sidebar: the name and, with OIDC, a log-out button."""
    if read_only():
        st.sidebar.caption("Read-only instance: nothing can be saved here.")
        return
    name = reviewer_name()
    if name:
        st.sidebar.caption(f"Writing as **{escape_md(name, limit=80)}**")
        if oidc_configured():
            st.sidebar.button("Log out", key="logout", on_click=st.logout, icon=":material/logout:")
        else:
            st.sidebar.button(
                "Change name", key="forget-name", on_click=st.session_state.pop, args=(_SESSION_KEY,)
            )
    elif oidc_configured():
        st.sidebar.button("Log in to write", key="login-sidebar", on_click=st.login, icon=":material/login:")
