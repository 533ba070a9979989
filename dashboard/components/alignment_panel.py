"""The Alignment tab: human gold | stated actions | executed actions, joined by the stored alignment,
with the judge's verdict per pair and the task's metrics with the reason for every undefined one."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.measure.metrics_run import run_task_metrics
from core.queries import alignment as q
from core.queries.task import gold_sets_with_task
from core.values import is_missing
from dashboard import state
from dashboard.components import judge_marks
from dashboard.components.formatting import pct
from dashboard.db import read, read_only, write
from dashboard.text import escape_md

METRIC_LABELS = {"ssr": "SSR", "rr": "RR", "repr": "RepR", "psr": "PSR", "ear": "EAR"}


def _metrics_summary(view: q.AlignmentView) -> None:
    """The task's metrics with the reason for every NULL, and the counts the table below marks."""
    row = view.metrics
    cols = st.columns(len(METRIC_LABELS))
    for col, (name, label) in zip(cols, METRIC_LABELS.items(), strict=True):
        value = row.value(name) if row else None
        undefined = is_missing(value)
        col.metric(label, "NULL" if undefined else pct(value))
        if undefined and row:
            reason = view.null_reasons.get(name)
            col.caption(q.null_reason_text(reason) if reason else "not computed")
    if row:
        extra = [view.deviation_summary,
                 f"{row.n_gold} gold / {row.n_agent} agent steps" if row.n_gold is not None else None,
                 "approximate (judge settled ambiguous pairs without an LLM)" if row.approximate else None,
                 f"{row.unresolved_pairs} pairs the judge could not answer" if row.unresolved_pairs else None]  # fmt: skip
        st.caption(" · ".join(e for e in extra if e))


def render(run: str, task_id: int, has_attempt: bool) -> None:
    gold_sets = read(gold_sets_with_task, task_id)
    if gold_sets is None:
        return
    if not gold_sets:
        st.info("No human gold for this task in any gold set: nothing to align. Write it on the Gold tab "
                "(it can start from this attempt's steps) or import it with `trajreview import gold`.")  # fmt: skip
        return
    if not has_attempt:
        st.info("This run recorded no steps for this task: nothing to align with the gold.")
        return
    stored = read(q.metric_rows, run, task_id) or []
    configs = list(dict.fromkeys((r.gold_set, r.judge_config, r.preset) for r in stored))
    choices = configs + [
        (g, "offline", "default") for g in gold_sets if (g, "offline", "default") not in configs
    ]
    cols = st.columns([3, 2])
    by_name = {"/".join(c): c for c in choices}
    chosen = state.url_selectbox(cols[0], "Gold set / judge / preset", list(by_name), "metrics", default=list(by_name)[0],
                                 format_func=lambda c: c.replace("/", " / "))  # fmt: skip
    gold_set, judge_config, preset = by_name[chosen or list(by_name)[0]]
    view = read(q.alignment_view, run, task_id, gold_set, judge_config, preset, state.int_param("alt"))
    if view is None:
        st.info("Nothing to align: no gold or no attempt for this task.")
        return
    if len(view.alternatives) > 1:
        chosen_alt = view.metrics.alternative if view.metrics else None
        state.url_selectbox(
            cols[1], "Gold alternative", view.alternatives, "alt", default=view.alternative,
            format_func=lambda a: f"alternative {a + 1}" + (" (chosen by the metrics)" if a == chosen_alt else ""),
        )  # fmt: skip

    if not view.computed:
        why = view.missing or q.NOT_COMPUTED
        st.warning(f"{why[0].upper()}{why[1:]} ({escape_md(f'{gold_set} / {judge_config} / {preset}')}).")
        if (
            not view.stale
            and not read_only()
            and st.button("Compute metrics for this task (offline judge)", key="compute-metrics")
        ):
            done = write(run_task_metrics, run, task_id, gold_set, preset)
            if done is not None:
                st.rerun()
    if view.stale:
        # The gold was edited after these metrics were computed (docs/reviewers.md, stale metrics).
        st.warning(f"Stale: these metrics were computed against gold version {view.gold_version}; "
                   f"the gold is now at version {view.current_gold_version}. The Gold tab recomputes them.",
                   icon=":material/update:")  # fmt: skip
        recompute = not read_only() and st.button(
            "Recompute for this task (offline judge)", key="recompute-stale"
        )
        if recompute and write(run_task_metrics, run, task_id, gold_set, preset) is not None:
            st.rerun()
    if view.metrics is not None:
        _metrics_summary(view)
    if not view.computed:
        return

    def cell(value, limit: int | None = 400) -> str:
        return "" if value is None else escape_md(value, limit=limit)

    def judged(r: q.AlignmentRow) -> str:
        if r.verdict is None:
            return ""
        score = f" {r.score:.2f}" if r.score is not None else ""
        return f"{r.verdict} · {r.stage}{score}"

    # st.table wraps long steps (a dataframe cell would cut them); its cells are Markdown, so every value
    # written by an agent or an annotator is escaped.
    table = pd.DataFrame(
        {
            "gold #": [cell(r.gold_idx + 1 if r.gold_idx is not None else None) for r in view.rows],
            "human gold": [cell(r.gold_text) for r in view.rows],
            "step": [cell(r.agent_idx) for r in view.rows],
            "stated action (plan)": [cell(r.stated) for r in view.rows],
            "executed action": [cell(r.executed) for r in view.rows],
            "judge": [cell(judged(r)) for r in view.rows],
            "marks": [cell(", ".join(r.marks)) for r in view.rows],
        }
    )
    st.table(table, hide_index=True, border="horizontal")
    if view.answer_only:
        st.info("This attempt recorded only its final answer: no gold pair is judged, so there are no "
                "deviation, recovery or repeat marks and no pair to check (docs/metrics.md).")  # fmt: skip
    st.caption(
        f"Gold version {view.gold_version}, {view.n_gold} steps; {view.n_agent} executed agent steps. Pairs, "
        f"their stage and the deviation, recovery and repeat marks were stored when the metrics were computed "
        f"with the {judge_config} judge. Judge stages: rule, lexical (fuzzy), embedding, llm; deviation = left "
        "the gold path, recovery = rejoined it, repeat = same action as the step before."
    )
    judge_marks.render(run, task_id, view)
    if view.plan:
        with st.expander(f"The agent's plan ({len(view.plan)} steps)"):
            for i, step in enumerate(view.plan, start=1):
                st.text(f"{i}. {step}")
