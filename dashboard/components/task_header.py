"""The top of the task page: what was asked, what happened, why it failed — agent text shown as text."""

from __future__ import annotations

from typing import Any

import orjson
import streamlit as st

from core.queries.evidence import Reference
from core.queries.task import TaskHeader, cannot_pass_evidence
from dashboard.components import suggested_cause
from dashboard.components.formatting import verdict_label
from dashboard.text import escape_md


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()


def _height(value: Any) -> int | str:
    """Long values scroll inside a fixed box so the tabs stay near the top of the page."""
    return 220 if len(_as_text(value)) > 300 or _as_text(value).count("\n") > 8 else "content"


def _reference(ref: Reference, title: str) -> None:
    """One config's reference: its expected answer, last page, page checks and network events."""
    st.markdown(title)
    st.caption(escape_md(ref.label, limit=None))
    shown = False
    for value, label in ((ref.answers, "answer"), (ref.url, "last page"), (ref.program_html, "page checks"),
                         (ref.network or None, "network events")):  # fmt: skip
        if value:
            st.caption(label)
            st.code(_as_text(value), language="json" if not isinstance(value, str) else None, wrap_lines=True,
                    height=_height(value))  # fmt: skip
            shown = True
    if ref.note:
        st.caption(f"note: {escape_md(ref.note, limit=None)}")
    if not shown:
        st.caption("This config states no expected value.")


def _instruction(h: TaskHeader) -> None:
    st.markdown(
        f"**Instruction the agent saw:** {escape_md(h.instruction or '(task not in the loaded dataset)', limit=None)}"
    )
    if h.instruction_differs:
        st.markdown(f"**WebArena-Verified intent** (worded differently): {escape_md(h.intent, limit=None)}")


def render(h: TaskHeader, run: str, *, with_cause: bool = False) -> None:
    """The header; `with_cause`: the suggested cause with Accept/Reject under the verdict (the task page;
    Compare's side-by-side headers leave it out)."""
    st.markdown(f"### Task {h.task_id} · {escape_md(h.site_key or 'unknown site')}")
    _instruction(h)
    facts = [
        f"run {escape_md(run, 80)}",
        f"start {escape_md(', '.join(h.start_urls or []) or h.original_start_url or '–')}",
        f"type {h.task_type or '–'}",
        f"expected status {h.expected_status or '–'}",
    ]
    if h.in_hard_subset:
        facts.append("hard subset")
    st.caption(" · ".join(facts))

    source = h.verdict_source or "no verdict recorded"
    template = f" · {escape_md(h.template.sentence)}" if h.template else ""
    st.markdown(f"**Verdict:** {verdict_label(h.verdict)} — decided by *{escape_md(source)}*{template}")
    sentences = h.explanations
    if h.verdict in ("failure", "error"):
        if sentences:
            for sentence in sentences:
                st.error(escape_md(sentence, limit=None), icon=":material/report:")
        else:
            st.warning("No explanation recorded for this failure (the run carries a bare verdict).")
    if with_cause:
        suggested_cause.render(run, h.task_id, failed=h.verdict in ("failure", "error"))
    if h.verdict_disagrees:
        st.warning(
            f"The offline re-check of WebArena's original evaluators says {h.offline_status}, the run's own "
            "verdict says otherwise: both are kept (see the Evaluation tab and docs/offline-evaluation.md).",
            icon=":material/compare_arrows:",
        )
    if h.cannot_pass or cannot_pass_evidence(h.task_id):
        st.warning(cannot_pass_evidence(h.task_id) or "Flagged cannot-pass.", icon=":material/block:")

    left, right = st.columns(2)
    with left:
        if h.reference is not None:
            _reference(h.reference, "**Expected** (the reference of this verdict)")
        else:
            st.markdown("**Expected**")
            st.caption("No task config recorded for this task: nothing states what was expected.")
        if h.verified_reference is not None and h.references_differ is False:
            st.caption("WebArena-Verified expects the same values.")
        elif h.verified_reference is not None:
            differs = " — differs" if h.references_differ else ""
            _reference(h.verified_reference, f"**WebArena-Verified reference**{differs}")
    with right:
        st.markdown("**Agent's answer**")
        answer = h.agent_answer
        if answer is None:
            st.caption("No answer recorded" + (f" (ended: {h.termination})" if h.termination else "") + ".")
        else:
            st.code(answer, language=None, wrap_lines=True, height=_height(answer))
        if h.termination:
            detail = f" — {escape_md(h.termination_detail)}" if h.termination_detail else ""
            st.caption(f"Ended: {escape_md(h.termination)}{detail} · {h.n_steps} steps")
        if h.final_url:
            st.caption("Last page (after the last action)")
            st.code(h.final_url, language=None, wrap_lines=True)
        if h.response_parse_error:
            st.warning(f"Response not parsed: {escape_md(h.response_parse_error)}")
        for finding in h.response_lint:
            st.caption(f"Lint ({escape_md(finding.rule)}): {escape_md(finding.message)}")
    if h.problems:
        with st.container(border=True):
            st.markdown(f"**Import problems of this task ({len(h.problems)})**")
            for p in h.problems:
                st.text(f"{p.kind}: {p.message}")
