"""The view's state lives in the URL: one module reads and writes it, so every view can be linked and
reopened cold.

Widgets that are part of a view are created through the `url_*` helpers: the URL parameter is the
truth, the widget is set from it on every run, and a change writes it back. (Streamlit's own
`bind="query-params"` is not used: a bound parameter cannot be carried by `st.switch_page`, and pages
carry the triage filters to the task page and back.) Values that are not widgets (the task a page shows)
are read with `param`/`int_param` and set by navigating with `go`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import streamlit as st

# Pages, as files relative to dashboard/app.py (st.switch_page and st.page_link take these).
RUNS_PAGE = "views/runs.py"
TRIAGE_PAGE = "views/triage.py"
TASK_PAGE = "views/task.py"
COMPARE_PAGE = "views/compare.py"
SEARCH_PAGE = "views/search.py"
DEFECTS_PAGE = "views/defects.py"

# Triage filters travel with the task page so previous/next follow the reviewer's list.
TRIAGE_KEYS = ("site", "verdict", "evaluator", "termination", "gold", "label", "q", "sort", "type", "hard",
               "cause")  # fmt: skip
TASK_TABS = ("Steps", "Alignment", "Network", "Evaluation", "Gold")


# -- reading ---------------------------------------------------------------------------------------
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


# -- writing ---------------------------------------------------------------------------------------
def set_param(name: str, value: Any) -> None:
    """Write one parameter (None, '' or an empty list removes it)."""
    if value is None or value == "" or (isinstance(value, (list, tuple)) and not value):
        if name in st.query_params:
            del st.query_params[name]
    elif isinstance(value, (list, tuple)):
        st.query_params[name] = [str(v) for v in value]
    else:
        st.query_params[name] = str(value)


def go(page: str, params: Mapping[str, Any]) -> None:
    """Navigate to a page with exactly these URL parameters (a page switch drops the others)."""
    clean = {k: ([str(x) for x in v] if isinstance(v, (list, tuple)) else str(v)) for k, v in params.items()
             if v not in (None, "", [], ())}  # fmt: skip
    st.switch_page(page, query_params=clean)


# -- links to the page they are on ----------------------------------------------------------------
_LINKED = "url:same-page links"  # the parameters of the same-page links the page's last run showed


def _params_key(params: Mapping[str, Any]) -> frozenset:
    return frozenset((k, tuple(v) if isinstance(v, (list, tuple)) else (v,)) for k, v in params.items())


def same_page_link(where, page: str, label: str, params: Mapping[str, Any], **kwargs: Any) -> None:
    """A link to the page it is on with other URL parameters (a filter dropped). Streamlit runs the page with
    them but leaves the address bar as it was (it writes the address only when the page changes), so a reload
    or a copied address brought the old view back: the page calls `follow_same_page_links` first thing."""
    clean = {k: ([str(x) for x in v] if isinstance(v, (list, tuple)) else str(v)) for k, v in params.items()
             if v not in (None, "", [], ())}  # fmt: skip
    st.session_state.setdefault(_LINKED, set()).add(_params_key(clean))
    where.page_link(page, label=label, query_params=clean, **kwargs)


def follow_same_page_links() -> None:
    """When this run was opened by one of the `same_page_link`s the page's last run showed, write its
    parameters to the address bar (sending them as they are: the browser shows the URL it is sent)."""
    linked = st.session_state.pop(_LINKED, set())
    if _params_key({k: st.query_params.get_all(k) for k in st.query_params}) in linked:
        st.query_params.update()


def triage_params() -> dict[str, Any]:
    """The triage filters currently in the URL (to carry to the task page and back)."""
    found: dict[str, Any] = {}
    for key in TRIAGE_KEYS:
        values = list_param(key)
        if values:
            found[key] = values if len(values) > 1 else values[0]
    return found


def task_params(run: str, task_id: int, **extra: Any) -> dict[str, Any]:
    """Parameters of a task view, carrying the triage filters in the URL."""
    params = {**triage_params(), "run": run, "task": str(task_id)}
    params.update({k: str(v) for k, v in extra.items() if v is not None})
    return params


# -- widgets whose value is a URL parameter ---------------------------------------------------------
def _widget_key(name: str) -> str:
    return f"url:{name}"


def _by_text(options: Sequence[Any]) -> dict[str, Any]:
    return {str(o): o for o in options}


def _sync(name: str, encode: Callable[[Any], Any]) -> None:
    set_param(name, encode(st.session_state[_widget_key(name)]))


def url_multiselect(where, label: str, options: Sequence[Any], name: str, **kwargs: Any) -> list[Any]:
    by_text = _by_text(options)
    st.session_state[_widget_key(name)] = [by_text[v] for v in list_param(name) if v in by_text]
    return where.multiselect(
        label, list(options), key=_widget_key(name), on_change=_sync, args=(name, lambda v: [str(x) for x in v]),
        **kwargs,
    )  # fmt: skip


def url_selectbox(
    where, label: str, options: Sequence[Any], name: str, default: Any = None, **kwargs: Any
) -> Any:
    """A select box; at `default` (None: nothing chosen) the parameter is left out of the URL."""
    by_text = _by_text(options)
    current = by_text.get(param(name) or "", default)
    st.session_state[_widget_key(name)] = current

    def encode(v: Any) -> str | None:
        return None if v is None or v == default else str(v)

    return where.selectbox(
        label,
        list(options),
        index=None,
        key=_widget_key(name),
        on_change=_sync,
        args=(name, encode),
        **kwargs,
    )


def url_radio(where, label: str, options: Sequence[Any], name: str, **kwargs: Any) -> Any:
    """Radio buttons; the first option is the default and is left out of the URL."""
    by_text = _by_text(options)
    st.session_state[_widget_key(name)] = by_text.get(param(name) or "", options[0])
    return where.radio(
        label, list(options), key=_widget_key(name), on_change=_sync,
        args=(name, lambda v: None if v == options[0] else str(v)), **kwargs,
    )  # fmt: skip


def url_text(where, label: str, name: str, **kwargs: Any) -> str:
    st.session_state[_widget_key(name)] = param(name, "")
    return (
        where.text_input(label, key=_widget_key(name), on_change=_sync, args=(name, str.strip), **kwargs)
        or ""
    )


def url_toggle(where, label: str, name: str, **kwargs: Any) -> bool:
    st.session_state[_widget_key(name)] = param(name) == "true"
    return where.toggle(
        label, key=_widget_key(name), on_change=_sync, args=(name, lambda v: "true" if v else None), **kwargs
    )


def url_select_slider(where, label: str, options: Sequence[Any], name: str, **kwargs: Any) -> Any:
    by_text = _by_text(options)
    st.session_state[_widget_key(name)] = by_text.get(param(name) or "", options[0])
    return where.select_slider(
        label, options=list(options), key=_widget_key(name), on_change=_sync,
        args=(name, lambda v: None if v == options[0] else str(v)), **kwargs,
    )  # fmt: skip


def url_tabs(labels: Sequence[str], name: str) -> Sequence[Any]:
    """Tabs whose open tab is the parameter `name` (the first tab when absent); `.open` says which."""
    current = param(name)
    st.session_state[_widget_key(name)] = current if current in labels else labels[0]
    return st.tabs(
        list(labels),
        key=_widget_key(name),
        on_change=_sync,
        args=(name, lambda v: None if v == labels[0] else v),
    )


def set_widget(name: str, value: Any) -> None:
    """Change a URL-state widget from a callback (previous/next buttons): the URL is the truth."""
    set_param(name, value)
