"""Labels & judge: how far the suggested primary causes agree with the reviewers' task labels —
precision and recall per cause with n and Wilson intervals, accuracy, Cohen's κ with its interval, and the
tasks left undecided. The figures come from `core.diagnose.agreement.agreement_from_store` (a
`CauseAgreement`); this panel only shows them."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.diagnose.agreement import CauseAgreement, agreement_from_store
from core.measure.stats import estimate_text, rate_text
from core.queries.causes import cause_name
from dashboard.components.tables import show_table
from dashboard.db import read


def _share(value: float | None, ci: tuple | None, n: int, empty: str) -> str:
    return f"– ({empty})" if value is None else rate_text(value, *(ci or (None, None)), n)


def agreement_rows(result: CauseAgreement) -> pd.DataFrame:
    """One row per cause of a `CauseAgreement`: suggested, labelled, agreed, precision and recall with
    their intervals and n (pure: the tests check it on the contract's shape)."""
    return pd.DataFrame(
        [
            {
                "cause": cause_name(c.cause), "suggested": c.n_suggested, "labelled": c.n_labelled,
                "agreed": c.n_agreed,
                "precision [95 % CI]": _share(c.precision, c.precision_ci, c.n_suggested, "none suggested"),
                "recall [95 % CI]": _share(c.recall, c.recall_ci, c.n_labelled, "none labelled"),
            }
            for c in result.per_cause
        ],
        columns=["cause", "suggested", "labelled", "agreed", "precision [95 % CI]", "recall [95 % CI]"],
    )  # fmt: skip


def kappa_text(result: CauseAgreement) -> str:
    """Cohen's κ with its interval and n ('too few to tell' below the bootstrap's minimum)."""
    if result.kappa is None:
        return f"undefined (n={result.n})" if result.n else "– (n=0)"
    low, high = result.kappa_ci or (None, None)
    return estimate_text(result.kappa, low, high, result.n, digits=2)


def render() -> None:
    st.subheader("Suggested causes vs reviewer labels")
    result = read(agreement_from_store, None)
    if result is None:
        return
    if result.n == 0:
        st.info("No task has both a suggested cause and a reviewer's cause label yet: accept or reject a "
                "suggestion on a task's page, or label the task.")  # fmt: skip
        return
    cols = st.columns(4)
    cols[0].metric(
        "tasks with both", result.n, help="a specific suggested primary cause and a reviewer's cause label"
    )
    cols[1].metric("Cohen's κ [95 % CI]", kappa_text(result))
    cols[2].metric("no specific cause", result.n_fallback,
                   help="the rule of last resort (the answer differs from the reference): not counted above; "
                        f"reviewers labelled {result.n_fallback_right} of them 'answered wrong'")  # fmt: skip
    cols[3].metric("left undecided", result.n_undecided, help="suggestions `undecided`: not counted above")
    show_table(agreement_rows(result), hide_index=True, width="stretch")
    st.caption("Precision: of the tasks suggested this cause, the share the reviewers labelled so (n = suggested). "
               "Recall: of the tasks the reviewers labelled so, the share suggested it (n = labelled). Wilson 95 % "
               "intervals; κ's interval is a bootstrap.")  # fmt: skip
