"""The view's state lives in the URL: every page reads its parameters here and links through `go`.

Widgets that are part of a view are bound to the URL (`bind="query-params"`, key = parameter name), so
changing a filter updates the address bar and opening that address restores the view. Values that are
not widgets (the run and task a page shows) are read with `param`/`int_param` and set by navigating.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import streamlit as st

# Pages, as files relative to dashboard/app.py (st.switch_page and st.page_link take these).
RUNS_PAGE = "views/runs.py"
TRIAGE_PAGE = "views/triage.py"
TASK_PAGE = "views/task.py"

# Triage filters travel with the task page so previous/next follow the reviewer's list.
TRIAGE_KEYS = ("site", "verdict", "evaluator", "termination", "gold", "label", "q", "sort")
TASK_TABS = ("Steps", "Alignment", "Network", "Evaluation")


def param(name: str, default: str | None = None) -> str | None:
    value = st.query_params.get(name)
    return value if value not in (None, "") else default


def int_param(name: str) -> int | None:
    """An integer parameter, None when missing or not an integer (a hand-edited URL never crashes)."""
    value = param(name)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def list_param(name: str) -> list[str]:
    return [v for v in st.query_params.get_all(name) if v != ""]


def triage_params() -> dict[str, Any]:
    """The triage filters currently in the URL (to carry to the task page and back)."""
    found: dict[str, Any] = {}
    for key in TRIAGE_KEYS:
        values = list_param(key)
        if values:
            found[key] = values if len(values) > 1 else values[0]
    return found


def task_params(
    run: str, task_id: int, carry: Mapping[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    """Parameters of a task view, carrying the triage filters (`carry`, default: those in the URL)."""
    carried = (
        triage_params() if carry is None else {k: v for k, v in carry.items() if v not in (None, "", [], ())}
    )
    params = {**carried, "run": run, "task": str(task_id)}
    params.update({k: str(v) for k, v in extra.items() if v is not None})
    return params


def go(page: str, params: Mapping[str, Any]) -> None:
    """Navigate to a page with exactly these URL parameters (a page switch drops the others)."""
    st.switch_page(page, query_params=dict(params))
