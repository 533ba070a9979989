"""The suggested cause of a failed task, under the task header: the primary cause in words, its one
sentence, its evidence linked to the step (`tab=Steps&step=N`) and the network event (`tab=Network&ev=SEQ`),
"suggested by a model" with its reasoning where no rule decided, the other causes found, and Accept
(becomes the reviewer's task label, with who and when) or Reject. Summaries and reasoning may quote the
agent: shown as text."""

from __future__ import annotations

import streamlit as st

from core.diagnose.taxonomy import CAUSE_LABEL, NO_SPECIFIC_SENTENCE, UNDECIDED
from core.queries import causes as q
from core.review.annotations import decide_cause
from dashboard import state
from dashboard.db import read, read_only, write
from dashboard.identity import ask_reviewer_name
from dashboard.text import escape_md

EVIDENCE_SHOWN = 3  # evidence items shown open; the rest under an expander


def _evidence(run: str, task_id: int, e: q.Evidence) -> None:
    text = escape_md(e.text, 160)
    if e.step_idx is not None:
        st.page_link(state.TASK_PAGE, label=f"step {e.step_idx}: {text}", icon=":material/footprint:",
                     query_params=state.task_params(run, task_id, tab="Steps", step=e.step_idx))  # fmt: skip
    elif e.seq is not None:
        status = f" · HTTP {e.status}" if e.status is not None else ""
        st.page_link(state.TASK_PAGE, label=f"event #{e.seq}{status}: {text}", icon=":material/lan:",
                     query_params=state.task_params(run, task_id, tab="Network", ev=e.seq))  # fmt: skip
    elif e.kind == "witness" and e.run and e.task_id is not None:
        st.page_link(state.TASK_PAGE, label=f"witness: {text}", icon=":material/groups:",
                     query_params=state.task_params(e.run, e.task_id))  # fmt: skip
    else:
        st.caption(f"{escape_md(e.kind)}: {text}")


def _decision(d: q.Decision) -> None:
    when = d.at.strftime("%Y-%m-%d %H:%M UTC")
    what = escape_md(q.cause_name(d.cause))
    icon = ":material/check_circle:" if d.decision == "accepted" else ":material/cancel:"
    st.caption(f"{icon} *{what}* {d.decision} by **{escape_md(d.author, 80)}** at {when}")


def _decide(run: str, task_id: int, cause: str, decided: q.Decision | None) -> None:
    if read_only():
        return
    # The decision already recorded on this suggestion is not offered again (the other one is).
    done = decided.decision if decided is not None and decided.cause == cause else None
    name = ask_reviewer_name(key="cause")
    cols = st.columns([1, 1, 5])
    label = CAUSE_LABEL[cause]
    accept = cols[0].button("Accept", key="cause-accept", icon=":material/check:", disabled=name is None or done == "accepted",
                            help=f"Label the task '{label}' (with your name) and record the decision")  # fmt: skip
    reject = cols[1].button("Reject", key="cause-reject", icon=":material/close:", disabled=name is None or done == "rejected",
                            help="Record that this suggestion is wrong (the task's label is left as it is)")  # fmt: skip
    if accept and write(decide_cause, run, task_id, cause, "accepted", name, label=label) is not None:
        st.rerun()
    if reject and write(decide_cause, run, task_id, cause, "rejected", name) is not None:
        st.rerun()


def render(run: str, task_id: int, failed: bool) -> None:
    """The panel; for a failed task of a run not diagnosed yet, how to diagnose it; nothing for a pass."""
    found = read(q.task_causes, run, task_id)
    if found is None:
        if failed and read(q.is_diagnosed, run) is False:
            st.caption(escape_md(q.diagnose_hint(run), limit=None))
        return
    p = found.primary
    accepted = found.decision is not None and found.decision.decision == "accepted"
    with st.container(border=True, key="suggested-cause"):
        if p.is_fallback and not accepted:
            # The rule of last resort names no cause: said as such, in grey, never as a finding.
            st.markdown(f":gray[:material/help: **{NO_SPECIFIC_SENTENCE}**]")
            st.caption(escape_md(p.summary, limit=None))
        else:
            if p.source == "model":
                by = "suggested by a model"
            elif p.rule and p.rule != p.cause:  # a rule named after its cause would say the cause twice
                by = f"rule {escape_md(p.rule)}"
            else:
                by = "found by a rule"
            st.markdown(f"**Suggested cause: {escape_md(p.name)}** · {by}")
            st.markdown(escape_md(p.summary, limit=None))
        if p.precision is not None:
            st.caption(escape_md(p.precision.fallback_sentence(), limit=None) if p.is_fallback and not accepted
                       else f"This rule was {escape_md(p.precision.sentence())} by our reviewers.")  # fmt: skip
        if p.source == "model" and p.reasoning:
            st.caption(f"The model's reasoning: {escape_md(p.reasoning, limit=None)}")
        for e in p.evidence[:EVIDENCE_SHOWN]:
            _evidence(run, task_id, e)
        if len(p.evidence) > EVIDENCE_SHOWN:  # a loop cites every repeated step: the first few say it
            with st.expander(f"{len(p.evidence) - EVIDENCE_SHOWN} more evidence items"):
                for e in p.evidence[EVIDENCE_SHOWN:]:
                    _evidence(run, task_id, e)
        if found.others:
            st.caption("Also found: " + "; ".join(
                f"{escape_md(c.name)} ({escape_md(c.summary, 160)})" for c in found.others))  # fmt: skip
        st.caption(f"Diagnosed {p.diagnosed_at:%Y-%m-%d %H:%M} UTC ({escape_md(p.diagnosis_version)}): a suggestion "
                   "until a reviewer accepts it.")  # fmt: skip
        if found.decision is not None:
            _decision(found.decision)
        if p.cause != UNDECIDED:
            _decide(run, task_id, p.cause, found.decision)
