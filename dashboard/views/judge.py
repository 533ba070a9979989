"""Labels & judge: `?judge=&run=` — how far the judge agrees with the reviewers' marks (accuracy and
Cohen's κ with 95 % CI and n, per stage), the suggested failure causes against the reviewers' labels,
reviewer labels counted per run and site, and the label vocabulary (editable unless the instance is
read-only)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.measure.stats import MIN_N_BOOTSTRAP, TOO_FEW, estimate_text, rate_text
from core.queries import annotations as qa
from core.queries.runs import run_names
from core.review.annotations import add_label, retire_label
from dashboard import charts, state
from dashboard.components import cause_agreement
from dashboard.components.tables import show_table
from dashboard.db import read, read_only, write
from dashboard.identity import ask_reviewer_name

ALL = "all"


def _kappa(s) -> str:
    if s.kappa is None:
        return f"undefined (n={s.n}: one answer only)" if s.n else "– (n=0)"
    return estimate_text(s.kappa, *s.kappa_ci, s.n, digits=2)


def _stage_rows(result: qa.DbAgreement) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "stage": s.stage, "n": s.n, "unresolved": s.unresolved, "agree": s.agree,
                "accuracy [95 % CI]": rate_text(s.accuracy, *s.accuracy_ci, s.n), "κ [95 % CI]": _kappa(s),
                "kappa": s.kappa, "kappa_low": s.kappa_ci[0], "kappa_high": s.kappa_ci[1],
                "judge said same": s.judge_said_same, "reviewer said same": s.reviewer_said_same,
            }
            for s in [*result.per_stage, result.overall]
        ]
    )  # fmt: skip


def _agreement() -> None:
    st.subheader("Judge agreement with the reviewers' marks")
    configs = read(qa.judge_configs_marked)
    runs = read(run_names)
    if configs is None or runs is None:
        return
    cols = st.columns(2)
    config = state.url_selectbox(cols[0], "Judge config", [ALL, *configs], "judge", default=ALL)
    run = state.url_selectbox(cols[1], "Run", [ALL, *runs], "run", default=ALL)
    result = read(
        qa.judge_agreement, None if config in (None, ALL) else config, None if run in (None, ALL) else run
    )
    if result is None:
        return
    o = result.overall
    if o.n + o.unresolved == 0:
        st.info("No reviewer marks yet. Mark judged pairs right or wrong on the Alignment tab of a task: each mark "
                "says whether the judge's same/different verdict was right.")  # fmt: skip
        return
    metrics = st.columns(4)
    metrics[0].metric("marked pairs", o.n + o.unresolved)
    metrics[1].metric("accuracy [95 % Wilson CI]", rate_text(o.accuracy, *o.accuracy_ci, o.n))
    metrics[2].metric("Cohen's κ [95 % bootstrap CI]", _kappa(o))
    metrics[3].metric(
        "judge could not answer",
        o.unresolved,
        help="excluded from accuracy and κ, never counted as different",
    )
    table = _stage_rows(result)
    show_table(
        table.drop(columns=["kappa", "kappa_low", "kappa_high"]), width="stretch",
        column_config={"n": st.column_config.NumberColumn(help="marked pairs the judge answered")},
    )  # fmt: skip
    st.plotly_chart(charts.judge_kappa(table), width="stretch", key="kappa-chart")
    st.caption(
        "n = marked pairs the judge answered; the reviewer's truth is the judge's verdict when marked right, its "
        "opposite when marked wrong. κ is undefined when judge and reviewers each used one answer only (e.g. a "
        "stage that only ever says *same* and is always right). Accuracy CI: Wilson; κ CI: bootstrap (fixed seed), "
        f"given from n = {MIN_N_BOOTSTRAP} marked pairs — below, *{TOO_FEW}*."
    )


def _labels() -> None:
    st.subheader("Reviewer labels per run and site")
    counts = read(qa.label_counts)
    if counts is None:
        return
    if counts.empty:
        st.info("No labels yet. Label a task on its page (header), a step on the Steps tab or an event on the "
                "Network tab; Triage filters tasks by label.")  # fmt: skip
        return
    left, right = st.columns([3, 2])
    left.plotly_chart(charts.label_counts(counts), width="stretch", key="labels-chart")
    per_run = read(qa.labels_per_run)
    if per_run is not None:
        show_table(where=right, data=per_run, hide_index=True, width="stretch")
    st.caption("Current labels (the latest write on each run, task, step or event); a task or step counts under "
               "its task's site, a label on a whole run under 'whole run'.")  # fmt: skip


def _vocabulary() -> None:
    st.subheader("Label vocabulary")
    vocab = read(qa.vocabulary, True)
    if vocab is None:
        return
    show_table(pd.DataFrame(vocab), hide_index=True, width="stretch",
                 column_config={"uses": st.column_config.NumberColumn(help="current annotations with the label")})  # fmt: skip
    if read_only():
        return
    name = ask_reviewer_name(key="vocabulary")
    active = [v["label"] for v in vocab if not v["retired"]]
    left, right = st.columns(2)
    with left.form("w:add-label", border=True):
        label = st.text_input("New label (or a retired one to bring back)", max_chars=60, key="w:new-label")
        description = st.text_input("What it means", key="w:new-label-description")
        added = st.form_submit_button("Add label", disabled=name is None) and name and label.strip()
        if added and write(add_label, label, name, description) is not None:
            st.rerun()
    with right.form("w:retire-label", border=True):
        gone = st.selectbox("Retire a label (annotations keep it)", active, index=None, key="w:retire")
        retired = st.form_submit_button("Retire", disabled=name is None) and name and gone
        if retired and write(retire_label, gone, name) is not None:
            st.rerun()


st.title("Labels & judge")
_agreement()
cause_agreement.render()
_labels()
_vocabulary()
