"""Suspected evaluator defects: `?run=…&review=…` — the failed tasks of a run where a rule suggests the
benchmark's check refused an answer that looks right (cause `evaluator_strict`, primary or not), each with
the check, the reference the run was scored with, what the agent gave, WebArena-Verified's value, other
runs as witnesses and the reviewer's decision; every row opens its task page, and the CSV, xlsx and
Markdown downloads are the list a team sends to the benchmark's maintainers. Agent and benchmark text is
shown as text (table cells, escaped Markdown), never HTML."""

from __future__ import annotations

from urllib.parse import urlencode

import streamlit as st

from core.queries import defect_list as dl
from core.queries import defects as q
from core.queries.causes import diagnose_hint, is_diagnosed
from dashboard import state
from dashboard.components.downloads import table_downloads
from dashboard.components.run_picker import pick_run
from dashboard.components.tables import WRAP_ROW_HEIGHT, show_table
from dashboard.db import read
from dashboard.text import escape_md

REVIEWS = (q.NOT_REVIEWED, q.CONFIRMED, q.REJECTED)

st.title("Suspected evaluator defects")
run = pick_run()
if run is None:
    st.stop()
defects = read(q.run_defects, run)
rate = read(q.run_defect_rate, run)
if defects is None or rate is None:
    st.stop()
if not defects:
    if read(is_diagnosed, run) is False:
        st.info(escape_md(diagnose_hint(run), limit=None))
    else:
        st.info(escape_md(f"No failed task of run {run!r} has a suspected evaluator defect.", limit=None))
    st.stop()

st.caption(
    escape_md(dl.defects_heading(run, defects), limit=None) + ". Each row is a task the benchmark's check "
    "failed although the agent's answer (or last page) looks right, as a rule of `trajreview diagnose` "
    "found it; a reviewer confirms one by accepting the suggestion on its task page. *other runs*: runs "
    "that gave the same answer and failed too (supports) or passed with another answer (against)."
)
official = f"Success rate {rate.official_text()} (official)"
st.markdown(
    f"**{escape_md(official, limit=None)}**"
    + (f" · {escape_md(rate.sentence(), limit=None)}" if rate.moved else "")
)

reviews = state.url_multiselect(st.columns([1, 2])[0], "Review", REVIEWS, "review", placeholder="any")
shown = [d for d in defects if not reviews or d.review in reviews]
if not shown:
    st.info("No suspected defect matches this review filter.")
    st.stop()
frame = dl.defects_frame(shown)
view = frame.assign(open=["task?" + urlencode({"run": run, "task": d.task_id}) for d in shown])
show_table(
    view, wrap=True, height=min(38 + WRAP_ROW_HEIGHT * len(view), 720), key=f"defects-{run}-{'-'.join(reviews)}",
    column_order=("open", "review", "sites", "check", "reference", "actual", "verified", "witnesses", "summary",
                  "intent", "rule", "primary", "reviewed_by", "reviewed_at"),
    column_config={
        "open": st.column_config.LinkColumn("task", display_text=r"task=(\d+)", width="small",
                                            help="Open the task page (steps, evaluators, Accept or Reject)"),
        **{c: st.column_config.TextColumn(dl.COLUMNS[c], width="medium") for c in ("reference", "actual", "verified", "witnesses")},
        "summary": st.column_config.TextColumn(dl.COLUMNS["summary"], width="large"),
        "intent": st.column_config.TextColumn(dl.COLUMNS["intent"], width="large"),
        "primary": st.column_config.CheckboxColumn(dl.COLUMNS["primary"], help="the task's primary suggested cause"),
        "review": st.column_config.TextColumn(dl.COLUMNS["review"]),
        "reviewed_by": st.column_config.TextColumn(dl.COLUMNS["reviewed_by"]),
        "reviewed_at": st.column_config.TextColumn(dl.COLUMNS["reviewed_at"]),
        "check": st.column_config.TextColumn(dl.COLUMNS["check"]),
        "sites": st.column_config.TextColumn(dl.COLUMNS["sites"]),
        "rule": st.column_config.TextColumn(dl.COLUMNS["rule"]),
    },
)  # fmt: skip
st.caption(f"{len(shown)} of {len(defects)} tasks shown. Downloads hold exactly these rows.")
table_downloads(st, frame, f"evaluator-defects-{run}", markdown=dl.defects_markdown(run, shown, rate))
