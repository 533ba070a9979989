"""The landing page's first answer: the latest run's failures grouped by what is known of their cause, one
group's tasks at a time (`?group=`), each task one click from its task page and its plain-sentence reason.
Groups come from `core.queries.failures`: the suggested primary causes once the run is diagnosed, else the
failing evaluator and the shape of its sentence."""

from __future__ import annotations

import streamlit as st

from core.queries import failures as q
from core.queries.triage import NONE
from dashboard import state
from dashboard.db import read
from dashboard.text import escape_md

GROUPS = 8  # groups shown; the rest are counted and reachable through Triage
TASKS = 10  # task links per group


def _task_link(run: str, item: q.FailureItem) -> None:
    sentence = item.sentence or f"ended: {item.termination or 'not recorded'}"
    if item.cause_by_model:
        sentence = f"(cause suggested by a model) {sentence}"
    st.page_link(
        state.TASK_PAGE, label=f"Task {item.task_id} · {escape_md(item.site or '?')} — {escape_md(sentence, 160)}",
        query_params={"run": run, "task": str(item.task_id), "verdict": "failure"}, icon=":material/report:",
    )  # fmt: skip


def _group_label(g: q.FailureGroup) -> str:
    who = f" ({escape_md(g.evaluators)})" if g.evaluators else ""
    return f"**{len(g.items)}** · {escape_md(g.cause, 140)}{who}"


def render() -> None:
    run = read(q.latest_run)
    if run is None:
        return
    groups = read(q.failures_by_cause, run)
    if groups is None:
        return
    total = sum(len(g.items) for g in groups)
    st.subheader(f"Why the latest run's tasks failed: {escape_md(run, 80)}")
    if not groups:
        st.caption("Every scored task of this run passed.")
        return
    diagnosed = any(item.cause for g in groups for item in g.items)
    grouping = ("by their suggested primary cause (`trajreview diagnose`)" if diagnosed else
                "by their failing evaluator and the shape of its sentence (values left out)")  # fmt: skip
    st.caption(f"{total} failed tasks in {len(groups)} groups {grouping}. Pick a group, then a task: its page "
               "starts with the reason.")  # fmt: skip
    # One group's task links at a time (the choice is in the URL): every group's links at once made the
    # landing page draw ~80 links, most of it the browser's work (bench page_settle).
    shown = groups[:GROUPS]
    left, right = st.columns([1, 2])
    chosen = state.url_radio(left, "Groups", list(range(len(shown))), "group",
                             format_func=lambda i: _group_label(shown[i]), label_visibility="collapsed")  # fmt: skip
    with right.container(border=True):
        g = shown[chosen]
        for item in g.items[:TASKS]:
            _task_link(run, item)
        more = len(g.items) - TASKS
        if diagnosed:  # the group is one cause: Triage lists exactly its tasks
            cause = {"cause": g.items[0].cause or NONE, "verdict": ["failure", "error"]}
            st.page_link(state.TRIAGE_PAGE, label=f"All {len(g.items)} in Triage" + (f" ({more} more)" if more > 0 else ""),
                         query_params={"run": run, **cause}, icon=":material/filter_alt:")  # fmt: skip
        elif more > 0:
            st.caption(f"… and {more} more of this kind in Triage.")
    rest = sum(len(g.items) for g in groups[GROUPS:])
    params = {"run": run, "verdict": "failure"}
    label = f"All {total} failed tasks in Triage" + (
        f" ({rest} in {len(groups) - GROUPS} smaller groups)" if rest else ""
    )
    st.page_link(state.TRIAGE_PAGE, label=label, query_params=params, icon=":material/checklist:")
