"""What a search or a filtered list that found nothing offers next, never a dead end: the same view without
each filter in use, as links (the view is its URL), and Triage's words searched over every run."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import streamlit as st

from core.queries.causes import cause_name
from core.queries.triage import NONE
from dashboard import state
from dashboard.text import escape_md


def drop_filter_links(page: str, params: Mapping[str, Any], labels: Mapping[str, str]) -> None:
    """One link per filter of `labels` (URL parameter → the link's words): `page` with `params` but that one.
    `page` is the page they are on (`state.same_page_link`)."""
    for key, label in labels.items():
        others = {k: v for k, v in params.items() if k != key}
        state.same_page_link(st, page, escape_md(label, 160), others, icon=":material/filter_alt_off:")


# Triage's filters (URL parameters, state.TRIAGE_KEYS but the sort), and what the list shows once one is dropped.
TRIAGE_FILTERS = {
    "site": "every site", "verdict": "any verdict", "evaluator": "any failing evaluator",
    "termination": "any termination", "gold": "with or without gold", "label": "any reviewer label",
    "type": "any task type", "hard": "hard or not", "cause": "any suggested cause",
}  # fmt: skip


def _values(key: str, values: list[str]) -> str:
    return ", ".join(cause_name(v) if key == "cause" and v != NONE else v for v in values)


def triage_labels(params: Mapping[str, Any]) -> dict[str, str]:
    """The words of the link that drops each Triage filter in use: 'Same list, any verdict (not only
    success)', 'Same list without the words "customer"'."""
    labels = {}
    for key, value in params.items():
        values = [value] if isinstance(value, str) else list(value)
        if key == "q":
            labels[key] = f"Same list without the words “{value}”"
        elif key in TRIAGE_FILTERS:
            labels[key] = f"Same list, {TRIAGE_FILTERS[key]} (not only {_values(key, values)})"
    return labels


def triage_nothing(run: str) -> None:
    """Triage found no task of `run`: each filter in use as a link to the same list without it, and the words
    searched for, if any, as a search of every run (the Search page: every text of every run)."""
    params = {"run": run, **state.triage_params()}
    words = params.get("q")
    st.info(
        "No task matches these filters. Drop one (below)"
        + (", or search every run for the words." if words else ".")
    )
    drop_filter_links(state.TRIAGE_PAGE, params, triage_labels(params))
    if words:
        st.page_link(state.SEARCH_PAGE, label=escape_md(f"Search every run for “{words}”", 160),
                     query_params={"query": words}, icon=":material/manage_search:")  # fmt: skip
