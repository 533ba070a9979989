"""The Evaluation tab: per evaluator its status, sentence, expected vs actual (as compared), assertions;
the official eval_result.json to download."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.queries import task as q
from core.scoring.explanations import readable_message
from core.values import is_missing
from dashboard import state
from dashboard.components.formatting import verdict_label
from dashboard.components.tables import show_table
from dashboard.db import read
from dashboard.text import escape_md


def _show(value) -> None:
    if value is None:
        st.caption("none")
    elif isinstance(value, (dict, list)):
        st.json(value, expanded=2)
    else:
        st.code(str(value), language=None, wrap_lines=True)


def _assertions(assertions: list) -> pd.DataFrame:
    """One row per assertion, its messages in words (the engine prints its value classes as reprs)."""
    return pd.DataFrame(
        [{"assertion": str(a.get("assertion_name") or ""), "status": str(a.get("status") or ""),
          "message": "\n".join(readable_message(m) for m in a.get("assertion_msgs") or [])}
         for a in assertions if isinstance(a, dict)],
        columns=["assertion", "status", "message"],
    )  # fmt: skip


def _go_network(seq: int) -> None:
    state.set_param("ev", seq)
    state.set_widget("tab", "Network")


def render(run: str, task_id: int, header: q.TaskHeader) -> None:
    rows = read(q.evaluator_rows, run, task_id)
    if rows is None:
        return
    if not rows:
        source = header.verdict_source
        if source:
            st.info(f"The verdict comes from {source}: this run carries no per-evaluator results.")
        else:
            st.info("This task has no evaluation in this run.")
        return
    for r in rows:
        failing = r["status"] != "success"  # unresolved ones open too: their sentence says what is missing
        offline = str(r.get("source") or "").startswith("offline")
        where = (
            " · re-checked offline ("
            + ("the run's config" if r["source"].endswith("run-config") else "the original task config")
            + ")"
            if offline
            else ""
        )
        title = f"{verdict_label(r['status'])} · {r['evaluator']} #{r['idx']}{where}"
        with st.expander(title, expanded=failing):
            if r.get("explanation") and failing:
                st.error(escape_md(r["explanation"], limit=None))
            if r.get("error"):
                st.warning(escape_md(r["error"], limit=None))
            left, right = st.columns(2)
            with left:
                st.caption("Expected (as the engine compared it)")
                _show(
                    r.get("expected_normalized")
                    if r.get("expected_normalized") is not None
                    else r.get("expected")
                )
            with right:
                st.caption("Actual (as the engine compared it)")
                _show(
                    r.get("actual_normalized") if r.get("actual_normalized") is not None else r.get("actual")
                )
            if r.get("assertions"):
                st.caption("Assertions")
                show_table(_assertions(r["assertions"]), hide_index=True, width="stretch")
            for label, key in (("matched", "matched_event_seq"), ("nearest candidate", "nearest_event_seq")):
                seq = r.get(key)
                if not is_missing(seq):
                    st.button(f"Open the {label} event #{int(seq)} in Network", key=f"{key}-{r['idx']}",
                              on_click=_go_network, args=(int(seq),))  # fmt: skip
    payload = read(q.eval_result_json, run, task_id)
    if payload:
        st.download_button("Download eval_result.json", payload, file_name=f"{task_id}_eval_result.json",
                           mime="application/json", key="eval-result")  # fmt: skip
