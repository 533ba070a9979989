"""Metrics: `?runs=…&gold=…&judge=…&preset=…&table=…&img=svg` — the paper's Tables 3, 4, 6 and 7 for the chosen
runs and metric configuration with bootstrap CIs, the n behind every cell and what each figure leaves
out and why; and the planning-paradigm view (runs grouped by paradigm side by side)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.measure.metrics_run import NULL_REASONS
from core.measure.stats import estimate_text
from core.queries import metrics_view as q
from core.values import is_missing
from dashboard import state
from dashboard.charts import export_config, paradigm_bars
from dashboard.components.downloads import table_downloads
from dashboard.components.formatting import rate_with_ci
from dashboard.components.run_picker import pick_runs
from dashboard.components.tables import show_table
from dashboard.db import read

PARADIGMS = "Planning paradigms"


def _mean_ci(mean, low, high, n, digits: int = 3) -> str:
    """'0.454 [0.431, 0.478] n=649': every figure says its interval and how many tasks it covers."""
    return estimate_text(mean, low, high, n, digits=digits)


st.title("Metrics")
chosen = pick_runs(st, help="Deltas in Table 3 are against the first run.")
choices = read(q.metric_choices, tuple(chosen))
if choices is None:
    st.stop()
cols = st.columns(3)
gold = judge = None
preset = "default"
if choices.empty:
    st.warning("No metrics computed for these runs: only Table 3 (success) can be shown. "
               "Compute them with `trajreview metrics --run … --gold …`.")  # fmt: skip
else:
    first = choices.iloc[0]
    gold = state.url_selectbox(
        cols[0], "Gold set", sorted(set(choices["gold_set"])), "gold", default=first["gold_set"]
    )
    judge = state.url_selectbox(cols[1], "Judge config", sorted(set(choices["judge_config"])), "judge",
                                default=first["judge_config"])  # fmt: skip
    preset = state.url_selectbox(
        cols[2], "Preset", sorted(set(choices["preset"])), "preset", default=first["preset"]
    )
    covered = choices[
        (choices["gold_set"] == gold) & (choices["judge_config"] == judge) & (choices["preset"] == preset)
    ]
    if covered.empty or int(covered.iloc[0]["runs"]) < len(chosen):
        st.warning(f"Only {0 if covered.empty else int(covered.iloc[0]['runs'])} of the {len(chosen)} runs have "
                   "metrics for this gold set, judge and preset; the others show no metric rows.")  # fmt: skip

with st.expander("Why tasks are left out (NULL reasons)"):
    show_table(pd.DataFrame(sorted(NULL_REASONS.items()), columns=["reason", "meaning"]), hide_index=True)

tabs = [*q.TABLES, PARADIGMS]
for name, tab in zip(tabs, state.url_tabs(tabs, "table"), strict=True):
    if not tab.open:
        continue
    with tab:
        if name == PARADIGMS:
            view = read(q.paradigm_view, tuple(chosen), gold, judge, preset)
            if view is None:
                continue
            st.caption("Runs grouped by planning paradigm, side by side; success with its Wilson 95 % CI, "
                       "metric means with bootstrap 95 % CIs and the n of tasks where each is defined.")  # fmt: skip
            view = view.assign(success=[rate_with_ci(r, lo, hi, int(n)) for r, lo, hi, n in
                                        view[["success_rate", "ci_low", "ci_high", "scored"]].itertuples(index=False)])  # fmt: skip
            for metric in q.PARADIGM_METRICS:
                view[metric.upper()] = [
                    _mean_ci(m, lo, hi, n)
                    for m, lo, hi, n in view[[f"{metric}_mean", f"{metric}_ci_low", f"{metric}_ci_high", f"{metric}_n"]].itertuples(index=False)
                ]  # fmt: skip
            image = state.url_selectbox(st, "Chart download", ("png", "svg"), "img", default="png", width=160,
                                        help="Format of the camera button above the chart")  # fmt: skip
            st.plotly_chart(paradigm_bars(view, q.PARADIGM_METRICS), key="paradigm-chart",
                            config=export_config(image or "png", "planning-paradigms"))  # fmt: skip
            paradigms = list(dict.fromkeys(view["paradigm"]))
            missing = [p for p in q.PARADIGM_ORDER[:3] if p not in paradigms]
            if missing:
                st.caption(f"No chosen run is {', '.join(missing)}.")
            for paradigm, col in zip(paradigms, st.columns(len(paradigms)), strict=True):
                with col:
                    st.markdown(f"**{paradigm.replace('_', ' ')}**")
                    part = view[view["paradigm"] == paradigm]
                    show_table(part[["run", "success", *[m.upper() for m in q.PARADIGM_METRICS]]],
                                 hide_index=True)  # fmt: skip
            table_downloads(st, view.drop(columns=["success", *[m.upper() for m in q.PARADIGM_METRICS]]),
                            "planning-paradigms")  # fmt: skip
            continue
        if name != "Table 3" and gold is None:
            st.info("No metrics computed for these runs.")
            continue
        table = read(q.paper_table, name, tuple(chosen), gold, judge, preset)
        if table is None:
            continue
        st.caption(
            q.TITLES[name] + (f" · gold {gold} / judge {judge} / {preset}" if name != "Table 3" else "")
        )
        shown = table.copy()
        if name in ("Table 3", "Table 4"):
            shown.insert(2 if name == "Table 3" else 2, "mean [95 % CI]",
                         [_mean_ci(m, lo, hi, n) for m, lo, hi, n in shown[["mean", "ci_low", "ci_high", "n"]].itertuples(index=False)])  # fmt: skip
        if name == "Table 3" and "delta" in shown:
            shown.insert(3, "delta [95 % CI]",
                         [_mean_ci(d, lo, hi, n) if not is_missing(d) else "" for d, lo, hi, n in
                          shown[["delta", "delta_ci_low", "delta_ci_high", "paired_n"]].itertuples(index=False)])  # fmt: skip
        st.caption("Every row: *n* (or *tasks*) = the tasks behind its figure; *left_out* = the run's tasks it "
                   "leaves out, *left_out_why* = why, by reason (see the reasons above).")  # fmt: skip
        show_table(shown, hide_index=True,
                     column_config={c: st.column_config.NumberColumn(c, format="%.3f")
                                    for c in shown.columns if shown[c].dtype.kind == "f"})  # fmt: skip
        table_downloads(st, table, f"{name.replace(' ', '-').lower()}-{gold or 'success'}-{judge or ''}")
