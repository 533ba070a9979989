"""Showing untrusted text: agent output, page content and file names are data, never markup or HTML."""

from __future__ import annotations

import re

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")


def escape_md(text: object, limit: int | None = 300) -> str:
    """Text safe inside st.markdown/st.caption: every Markdown and HTML character escaped, one line,
    clipped. Links, images and tags written by an agent stay visible as characters."""
    s = " ".join(str(text).split())
    if limit is not None and len(s) > limit:
        s = s[: limit - 1] + "…"
    return _MD_SPECIAL.sub(r"\\\1", s)
