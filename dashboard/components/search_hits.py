"""The hits of a search: each a link to the task page at its step (or network event), then the matching
words in their context. Agent text is shown as text: escaped, with only the match marked. No hit: what to
try next, each filter in use as a link to the same search without it."""

from __future__ import annotations

from collections.abc import Mapping

import streamlit as st

from core.queries.causes import cause_name
from core.queries.search import SearchHit, SearchResult, Snippet
from dashboard import state
from dashboard.components.no_match import drop_filter_links
from dashboard.text import escape_md


def task_link_params(hit: SearchHit) -> dict[str, str]:
    """The task page's URL parameters that open the hit where it is."""
    params = {"run": hit.run, "task": str(hit.task_id)}
    if hit.episode:
        params["episode"] = hit.episode
    if hit.step is not None:
        params["step"] = str(hit.step)
    elif hit.event_seq is not None:
        params.update(tab="Network", ev=str(hit.event_seq))
    elif hit.kind in ("evaluator", "cause"):
        params["tab"] = "Evaluation"
    return params


def _where(hit: SearchHit) -> str:
    at = f"step {hit.step}" if hit.step is not None else (
        f"event {hit.event_seq}" if hit.event_seq is not None else "task")  # fmt: skip
    cause = hit.cause_text()
    return " · ".join(
        p
        for p in (hit.run, f"task {hit.task_id}", at, hit.kind, hit.outcome, cause and f"cause: {cause}")
        if p
    )


# The search page's filters (URL parameters), and what the search says once one is dropped.
FILTERS = {"run": "every run", "site": "every site", "outcome": "any outcome", "cause": "any primary cause"}


def count_text(total: int, shown: int) -> str:
    """'1 matching text; 1 shown.', '120 matching texts; 50 shown (raise the limit for more).'"""
    more = " (raise the limit for more)." if shown < total else "."
    return f"{total} matching text{'' if total == 1 else 's'}; {shown} shown{more}"


def render(result: SearchResult, params: Mapping[str, str | None]) -> None:
    """`params`: the search's URL parameters (query, filters, limit), for the links that drop a filter."""
    shown = len(result.hits)
    st.caption(count_text(result.total, shown))
    if not result.total:
        _nothing_found(params)
    if result.not_indexed:
        st.warning(
            "Not in the search index (their steps, answers and URLs are not searched): "
            f"{escape_md(', '.join(result.not_indexed))}. Run `trajreview search --reindex`."
        )
    for i, hit in enumerate(result.hits):
        with st.container(key=f"hit-{i}"):
            st.page_link(
                state.TASK_PAGE, label=escape_md(_where(hit), 160), query_params=task_link_params(hit)
            )
            st.markdown(snippet_markdown(hit.snippet))


def snippet_markdown(snippet: Snippet) -> str:
    """The snippet as Markdown, its text escaped and the match in bold orange inside it: no highlighted
    background (its padding read as spaces around a match inside a URL: 'admin/ customer /index/'), and the
    spaces on either side of the match kept (escaping each part alone dropped them: 'thecustomerservice')."""

    def part(text: str) -> str:
        lead, trail = (" " if text[:1].isspace() else ""), (" " if text[-1:].isspace() else "")
        return lead + escape_md(text, None) + trail if text.strip() else lead

    return f"{part(snippet.before)}:orange[**{escape_md(snippet.match, None)}**]{part(snippet.after)}"


def _nothing_found(params: Mapping[str, str | None]) -> None:
    used = {key: params[key] for key in FILTERS if params.get(key)}
    st.info(
        "Nothing matches. "
        + ("Drop a filter (below), or broaden" if used else "Broaden")
        + " the words: fewer of them, a shorter phrase, or words without quotes."
    )
    # The URL keeps a cause's code, the link says its name.
    labels = {key: f"Same search, {FILTERS[key]} (not only {cause_name(v) if key == 'cause' else v})"
              for key, v in used.items()}  # fmt: skip
    drop_filter_links(state.SEARCH_PAGE, {k: v for k, v in params.items() if v}, labels)
