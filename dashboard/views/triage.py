"""Triage: every task of a run from summary columns only; filter, search, sort, select to review."""

from __future__ import annotations

from urllib.parse import urlencode

import streamlit as st

from core.queries import defects as dq
from core.queries import triage as q
from core.queries.causes import cause_name, diagnose_hint
from dashboard import state
from dashboard.components import labels_panel, no_match
from dashboard.components.formatting import VERDICT_ICONS
from dashboard.components.run_picker import pick_run
from dashboard.components.tables import WRAP_ROW_HEIGHT, show_table
from dashboard.db import read, read_only
from dashboard.text import escape_md

st.title("Triage")
state.follow_same_page_links()  # a "same list without …" link below
run = pick_run()
if run is None:
    st.stop()
labels_panel.render("run", run, what="run")
defects = read(dq.defect_counts)
mine = defects[defects["run"] == run] if defects is not None else None
if mine is not None and not mine.empty:
    n, confirmed = int(mine.iloc[0]["suspected"]), int(mine.iloc[0]["confirmed"])
    st.page_link(state.DEFECTS_PAGE, label=f"{n} suspected evaluator defect{'s' if n > 1 else ''} in "
                 f"{escape_md(run, 60)} ({confirmed} confirmed): the list for the benchmark's maintainers",
                 query_params={"run": run}, icon=":material/gavel:")  # fmt: skip
table = read(q.triage_table, run)
if table is None:
    st.stop()
if table.empty:
    st.info(f"Run {run!r} has no tasks.")
    st.stop()

opts = q.options(table)
cols = st.columns([2, 2, 2, 2, 1.4, 1.6])
sites = state.url_multiselect(cols[0], "Site", opts["sites"], "site")
verdicts = state.url_multiselect(cols[1], "Verdict", opts["verdicts"], "verdict")
evaluators = state.url_multiselect(cols[2], "Failing evaluator", opts["evaluators"], "evaluator")
terminations = state.url_multiselect(cols[3], "Termination", opts["terminations"], "termination")
has_gold = state.url_selectbox(cols[4], "Gold", q.HAS_GOLD, "gold", placeholder="any")
labels = state.url_multiselect(cols[5], "Reviewer label", opts["labels"], "label")
cols = st.columns([3, 2, 2, 1.4, 2.6])
text = state.url_text(cols[0], "Search intent, answer and explanation", "q", placeholder="words or a task id")
sort = state.url_selectbox(cols[1], "Sort", list(q.SORTS), "sort", default=list(q.SORTS)[0])
task_types = state.url_multiselect(cols[2], "Task type", opts["task_types"], "type")
hard = state.url_selectbox(cols[3], "Hard subset", q.HARD, "hard", placeholder="any")
causes = state.url_multiselect(
    cols[4], "Suggested cause", opts["causes"], "cause", format_func=lambda c: c if c == q.NONE else cause_name(c),
    placeholder="any" if opts["causes"] else "not diagnosed", disabled=not opts["causes"],
    help=None if opts["causes"] else diagnose_hint(run),
)  # fmt: skip

flt = q.TriageFilter(
    sites=tuple(sites), verdicts=tuple(verdicts), evaluators=tuple(evaluators), terminations=tuple(terminations),
    has_gold=has_gold, labels=tuple(labels), text=text or "", sort=sort, task_types=tuple(task_types), hard=hard,
    causes=tuple(causes),
)  # fmt: skip
shown = q.apply_filter(table, flt)
c = q.counts(shown)
metric_config = table.metric_config
st.caption(
    f"**{c['tasks']}** of {len(table)} tasks · {c['failure']} failed · {c['error']} errors · "
    f"{c['success']} passed · {c['unscored']} unscored"
    + (
        f" · SSR/EAR from {' / '.join(metric_config)}"
        if metric_config
        else " · no metrics computed for this run"
    )
)
if shown.empty:
    no_match.triage_nothing(run)
    st.stop()

# The columns are the fields of q.TriageRow (`frame()`); the page only decorates the verdict.
view = shown.frame().assign(
    verdict=[f"{VERDICT_ICONS.get(r.verdict, '')} {r.verdict}" for r in shown.rows],
    cause=[cause_name(r.cause) + (" (model)" if r.cause_by_model else "") if r.cause else None for r in shown.rows],
)  # fmt: skip
# Tasks without gold link straight to the task page's Gold tab, to write one (not on a read-only instance).
writable = not read_only()
if writable:
    view = view.assign(write_gold=[
        None if r.has_gold else "task?" + urlencode({"run": run, "task": r.task_id, "tab": "Gold"})
        for r in shown.rows
    ])  # fmt: skip
# Keyed by the filter: a selection made in another filtered list never lands on this one's rows.
picked = show_table(
    view, wrap=True, on_select="rerun", height=min(38 + WRAP_ROW_HEIGHT * len(view), 720), selection_mode="single-row", key=f"triage-{run}-{flt.fingerprint()}",
    column_order=("task_id", "site", "verdict", "cause", "explanation", "failing_evaluators", "intent", "task_type", "termination", "steps",
                  "has_gold", *(("write_gold",) if writable else ()), "ssr", "ear", "metrics_stale", "cannot_pass", "disagrees", "label", "problems", "verdict_source"),
    column_config={
        "task_id": st.column_config.NumberColumn("task", format="%d", width="small"),
        "intent": st.column_config.TextColumn("intent", width="large"),
        "verdict_source": st.column_config.TextColumn("source", help="who decided the verdict"),
        "failing_evaluators": st.column_config.TextColumn("failing evaluators"),
        "explanation": st.column_config.TextColumn("why it failed", width="large"),
        "cause": st.column_config.TextColumn("suggested cause", help="the primary cause `trajreview diagnose` suggests; (model): suggested by a model where no rule decided"),
        "has_gold": st.column_config.CheckboxColumn("gold"),
        "write_gold": st.column_config.LinkColumn("write gold", display_text="✎ write gold", width="medium",
                                                  help="Open the task's Gold tab to write its gold"),
        "ssr": st.column_config.NumberColumn("SSR", format="%.2f"),
        "ear": st.column_config.NumberColumn("EAR", format="%.2f"),
        "metrics_stale": st.column_config.CheckboxColumn(
            "stale", help="SSR/EAR were computed against an older version of the task's gold (edited since)"),
        "cannot_pass": st.column_config.CheckboxColumn("cannot pass", help="the engine rejects the task's own answer"),
        "problems": st.column_config.NumberColumn("import problems"),
        "label": st.column_config.TextColumn("reviewer labels", help="current labels on the task, its steps and events"),
        "disagrees": st.column_config.CheckboxColumn(
            "offline disagrees", help="WebArena's original evaluators, re-checked offline, decide otherwise"
        ),
    },
)  # fmt: skip
if picked.selection.rows:
    task_id = shown.rows[picked.selection.rows[0]].task_id
    state.go(state.TASK_PAGE, state.task_params(run, task_id))
