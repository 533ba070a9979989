"""Task review: `?run=&task=&episode=&tab=&step=` — header with the suggested cause (Accept/Reject),
previous/next failed task, and the tabs
Steps, Alignment, Network, Evaluation and Gold (only the open tab is built; Gold takes `goldset`,
`galt`, `gfrom`, `gto`)."""

from __future__ import annotations

import streamlit as st

from core.queries import causes as cq
from core.queries import task as q
from core.queries import triage as tq
from core.queries.runs import run_exists
from dashboard import state
from dashboard.components import (
    alignment_panel,
    evaluation_panel,
    gold_editor,
    labels_panel,
    network_panel,
    steps_panel,
    task_header,
)
from dashboard.components.formatting import verdict_label
from dashboard.db import prefetch, read
from dashboard.text import escape_md

run, task_id = state.param("run"), state.int_param("task")


def _back_to_triage(label: str = "Back to triage") -> None:
    params = {**state.triage_params(), **({"run": run} if run else {})}
    st.page_link(state.TRIAGE_PAGE, label=label, icon=":material/arrow_back:", query_params=params)


raw_task = state.param("task")
if raw_task is not None and task_id is None:
    st.title("Task review")
    st.error(f"This link is bad: task {escape_md(raw_task, 40)} is not a task id (a whole number).")
    _back_to_triage("Open triage")
    st.stop()
if not run or task_id is None:
    st.title("Task review")
    st.info("Pick a task in Triage: this page shows one task of one run (`?run=…&task=…`).")
    _back_to_triage("Open triage")
    st.stop()
# A cold view's independent reads, started together (they overlap on two cores); each is read below.
wanted = tq.filter_from_params(state.list_param)
prefetch((q.task_header, run, task_id), (tq.failed_neighbours, run, task_id, wanted), (q.other_runs, task_id),
         (q.episodes, run, task_id), (cq.task_causes, run, task_id), (cq.is_diagnosed, run))  # fmt: skip
exists = read(run_exists, run)
if exists is None:
    st.stop()
if not exists:
    st.error(f"No run named {run!r} in this database.")
    st.page_link(state.RUNS_PAGE, label="All runs", icon=":material/arrow_back:")
    st.stop()
header = read(q.task_header, run, task_id)
if header is None:
    st.error(f"Run {run!r} has no task {task_id}.")
    _back_to_triage()
    st.stop()

prev_task, next_task = read(tq.failed_neighbours, run, task_id, wanted) or (None, None)
nav = st.columns([1.3, 1.3, 1.3, 4])
with nav[0]:
    _back_to_triage()
if nav[1].button("◀ previous failed", key="prev-task", shortcut="K", disabled=prev_task is None,
                 help="Previous failed task of your triage list (K)"):  # fmt: skip
    state.go(state.TASK_PAGE, state.task_params(run, prev_task))
if nav[2].button("next failed ▶", key="next-task", shortcut="J", disabled=next_task is None,
                 help="Next failed task of your triage list (J)"):  # fmt: skip
    state.go(state.TASK_PAGE, state.task_params(run, next_task))
others = read(q.other_runs, task_id)
if others is not None and len(others) > 1:
    with nav[3].popover(f"Task {task_id} in {len(others) - 1} other run(s)"):
        for row in others.itertuples(index=False):
            if row.run != run:
                st.page_link(state.TASK_PAGE, label=f"{row.run}: {verdict_label(row.verdict)}",
                             query_params={"run": row.run, "task": str(task_id)})  # fmt: skip

task_header.render(header, run, with_cause=True)
labels_panel.render("task", run, task_id, what="task")

attempts = read(q.episodes, run, task_id) or []
episode = None
if attempts:
    names = [a["episode"] for a in attempts]
    wanted = state.param("episode")
    episode = wanted if wanted in names else names[0]
    if len(attempts) > 1:
        episode = state.url_selectbox(
            st, "Attempt", names, "episode", default=names[0],
            format_func=lambda e: e + (" (the run's answer)" if e == names[0] and attempts[0]["is_answer"] else ""),
        )  # fmt: skip

tabs = state.url_tabs(state.TASK_TABS, "tab")
steps_tab, alignment_tab, network_tab, evaluation_tab, gold_tab = tabs
if steps_tab.open:
    with steps_tab:
        steps_panel.render(run, task_id, episode)
if alignment_tab.open:
    with alignment_tab:
        alignment_panel.render(run, task_id, has_attempt=episode is not None)
if network_tab.open:
    with network_tab:
        network_panel.render(run, task_id)
if evaluation_tab.open:
    with evaluation_tab:
        evaluation_panel.render(run, task_id, header)
if gold_tab.open:
    with gold_tab:
        gold_editor.render(run, task_id, episode)
