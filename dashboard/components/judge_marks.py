"""Below the Alignment table: every judged pair with a right/wrong control, so reviewers measure the
judge (the marks feed judge agreement on the Labels & judge page and `judge-agreement --from-db`).

One compact row per pair; a click writes one annotation row at once (append-only; clicking the chosen
mark again clears it, which is a new row too). Read-only instances show the marks without controls."""

from __future__ import annotations

import streamlit as st

from core.measure.judge import VERDICT_WORDS
from core.queries import alignment as q
from core.queries import annotations as qa
from core.review.annotations import MARKS, PairMark, mark_pairs
from dashboard.db import read, read_only, write
from dashboard.identity import ask_reviewer_name, reviewer_name
from dashboard.text import escape_md

MARK_LABELS = {"right": "✓ right", "wrong": "✗ wrong"}
WIDTHS = [0.4, 0.4, 3, 3, 1.5, 1.9]


def _key(view: q.AlignmentView, p: q.JudgedPair) -> tuple:
    return (view.gold_version, view.alternative, p.gold_idx, p.step_idx, p.judge_config)


def _widget_key(run: str, task_id: int, view: q.AlignmentView, p: q.JudgedPair) -> str:
    return "w:mark-" + "-".join(str(v) for v in (run, task_id, view.gold_set, *_key(view, p)))


def _save(run: str, task_id: int, view: q.AlignmentView, p: q.JudgedPair, widget: str) -> None:
    name = reviewer_name()
    if not name:  # the control is disabled without a name; a stale click writes nothing
        return
    mark = st.session_state.get(widget)
    row = PairMark(
        run=run, task_id=task_id, episode=view.episode, gold_set=view.gold_set, gold_version=view.gold_version,
        alternative=view.alternative, gold_idx=p.gold_idx, step_idx=p.step_idx, judge_config=p.judge_config,
        judge_verdict=p.verdict, judge_stage=p.stage, judge_score=p.score, mark=mark,
    )  # fmt: skip
    write(mark_pairs, [row], name)


def render(run: str, task_id: int, view: q.AlignmentView) -> None:
    if not view.pairs or view.gold_version is None or view.alternative is None:
        return
    marks = read(qa.pair_marks, run, task_id, view.episode, view.gold_set) or {}
    done = sum(_key(view, p) in marks for p in view.pairs)
    st.markdown(f"##### Check the judge · {done} of {len(view.pairs)} pairs marked")
    st.caption(
        "Was the judge right? Aligned pairs show its *same* verdict; each unaligned agent step is paired with "
        "the gold step the judge scored closest (its *different* verdict), both as stored with the metrics of this "
        "configuration. Marks feed judge agreement "
        "(Labels & judge page, `trajreview judge-agreement --from-db`)."
    )
    writable = not read_only()
    name = None
    if writable:
        with st.columns([2, 3])[0]:
            name = ask_reviewer_name(key="marks")
    header = st.columns(WIDTHS)
    for col, text in zip(
        header, ["step", "gold", "human gold", "agent step", "judge", "your mark"], strict=True
    ):
        col.caption(text)
    for p in view.pairs:
        current = marks.get(_key(view, p))
        cols = st.columns(WIDTHS, vertical_alignment="center")
        cols[0].markdown(str(p.step_idx))
        cols[1].markdown(f"#{p.gold_idx + 1}")
        cols[2].markdown(escape_md(p.gold_text, 120))
        cols[3].markdown(escape_md(p.agent_text, 120))
        score = f" {p.score:.2f}" if p.score is not None else ""
        cols[4].markdown(f"{VERDICT_WORDS[p.verdict]} · {escape_md(p.stage or '?')}{score}")
        if writable:
            widget = _widget_key(run, task_id, view, p)
            st.session_state[widget] = current["mark"] if current else None
            cols[5].segmented_control(
                "mark", list(MARKS), key=widget, format_func=MARK_LABELS.get, label_visibility="collapsed",
                disabled=name is None, on_change=_save, args=(run, task_id, view, p, widget),
                help=f"by {current['author']}" if current else None,
            )  # fmt: skip
        elif current:
            cols[5].markdown(f"{MARK_LABELS[current['mark']]} ({escape_md(current['author'], 40)})")
