"""Shared pieces of the Streamlit AppTest page tests: the app's entry point and the text a reviewer reads."""

from __future__ import annotations

from core.paths import REPO_ROOT

APP = str(REPO_ROOT / "dashboard" / "app.py")
NAME_KEY = "trajreview_reviewer_name"  # where dashboard/identity.py keeps a name asked once per session


def page_texts(at) -> str:
    """Every text element of a page run, joined. Agent text reaches Markdown escaped (`task\\_type`):
    compare what the reviewer reads."""
    parts = [
        e.value
        for kind in ("markdown", "caption", "info", "warning", "error", "text", "code")
        for e in getattr(at, kind)
    ]
    return "\n".join(str(p) for p in parts).replace("\\", "")
