"""Showing untrusted text: agent output, page content and file names are data, never markup or HTML."""

from __future__ import annotations

import re

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")
# GitHub-flavoured Markdown turns a bare URL, www. name or e-mail address into a live link after the
# escapes are read; a word joiner (invisible, zero width) at its trigger keeps it as characters.
_AUTOLINK = re.compile(r"(?i)(?<=https:)(?=//)|(?<=http:)(?=//)|(?<=\bwww)(?=\.)|(?<=@)(?=[-\w])")
_WORD_JOINER = "\u2060"


def clip(text: object, limit: int) -> str:
    """One line of at most `limit` characters, `…` marking a cut (chart titles and axes do not wrap)."""
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def escape_md(text: object, limit: int | None = 300) -> str:
    """Text safe inside st.markdown/st.caption: every Markdown and HTML character escaped, one line,
    clipped. Links, images and tags written by an agent stay visible as characters."""
    s = clip(text, limit) if limit is not None else " ".join(str(text).split())
    return _MD_SPECIAL.sub(r"\\\1", _AUTOLINK.sub(_WORD_JOINER, s))
