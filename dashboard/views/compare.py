"""Compare: `?a=…&b=…&flip=…&site=…&task=…&img=svg` — two runs task by task: the 2x2 of outcomes with McNemar's exact
test, the paired bootstrap CI of the difference in success and in each metric, the tasks fixed and broken
per suggested cause, per-site deltas, and the flipped tasks; a selected flipped task opens both runs' task views side by side."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.measure.stats import SHARE, difference_parts, difference_text
from core.queries import compare as q
from core.queries import runs as rq
from core.queries import task as tq
from core.queries.defect_rate import WITH_DEFECTS
from dashboard import state
from dashboard.charts import deltas, export_config
from dashboard.components import cause_compare, task_header
from dashboard.components.downloads import table_downloads
from dashboard.components.formatting import pct, verdict_label
from dashboard.components.run_picker import run_names_or_stop
from dashboard.components.tables import show_table
from dashboard.db import read
from dashboard.text import escape_md


def _diff(d: float | None, low: float | None, high: float | None, n: int | None, unit: str = SHARE) -> str:
    """B − A in the figure's own unit: percentage points for success and the metrics that are shares, steps
    for the mean recovery cost (core.queries.paper_tables.METRIC_UNITS)."""
    return difference_text(d, low, high, n, unit)


st.title("Compare runs")
state.follow_same_page_links()  # "show every site" below
names = run_names_or_stop()
if len(names) < 2:
    st.info("Comparing needs two runs in the database: see the Runs page.")
    st.stop()
# The default pair only when the URL does not name both runs: finding it pairs every run with every other
# (151 ms of a cold view on 50 runs, 18 on 3).
named = all(state.param(key) is not None for key in ("a", "b"))
pair = (None, None) if named else (read(q.comparison_pair) or (names[1], names[0]))
for key, default in zip(("a", "b"), pair, strict=True):
    wanted = state.param(key)
    if wanted is not None and wanted not in names:
        st.error(f"No run named {wanted!r} in this database.")
        st.page_link(state.RUNS_PAGE, label="All runs", icon=":material/arrow_back:")
        st.stop()
    if wanted is None:
        state.set_param(key, default)
cols = st.columns(2)
a = state.url_selectbox(cols[0], "Run A", names, "a")
b = state.url_selectbox(cols[1], "Run B", names, "b")
if a == b:
    st.warning("Choose two different runs.")
    st.stop()
cmp = read(q.compare_runs, a, b)
if cmp is None:
    st.stop()
s = cmp.success
if not s["n"]:
    st.info("These runs have no scored task in common.")
    st.stop()

st.caption(
    f"Paired over the **{s['n']}** tasks both runs scored (an error counts as not passed); "
    + ", ".join(f"{k} {v}" for k, v in cmp.unpaired.items())
    + ". Differences are B − A with a paired bootstrap 95 % CI (tasks resampled together)."
)
m = st.columns([1.3, 1.3, 1.3, 0.8])
m[0].metric(f"A · {a}", pct(s["rate_a"]), help=f"successes / {s['n']} paired tasks")
m[1].metric(f"B · {b}", pct(s["rate_b"]), help=f"successes / {s['n']} paired tasks")
# The difference as the tile's figure and its interval and n under it, as plain text (no arrow, no colour):
# on one line the interval was cut off at the tile's width.
figure, interval = difference_parts(s["diff"], s["ci_low"], s["ci_high"], s["n"])
m[2].metric("B − A [95 % CI]", figure, delta=interval, delta_color="off", delta_arrow="off",
            help=f"paired bootstrap 95 % CI over the {s['n']} paired tasks")  # fmt: skip
m[3].metric("McNemar exact p", f"{cmp.mcnemar_p:.3g}",
            help=f"two-sided exact binomial test of the {cmp.outcomes['A only'] + cmp.outcomes['B only']} discordant tasks")  # fmt: skip
# Beside each official rate, never instead of it: the rate with its confirmed evaluator defects counted as passes.
moved = [f"{side} · {run}: {cmp.with_defects[run].text()}" for side, run in (("A", a), ("B", b))
         if run in cmp.with_defects and cmp.with_defects[run].moved]  # fmt: skip
if moved:
    st.caption(
        escape_md(
            f"{WITH_DEFECTS} (same paired tasks; B − A above stays official): " + "; ".join(moved), limit=None
        )
    )

left, right = st.columns([1, 2])
with left:
    st.subheader("Outcomes")
    o = cmp.outcomes
    two_by_two = pd.DataFrame(
        {"B passed": [o["both pass"], o["B only"]], "B failed": [o["A only"], o["both fail"]]},
        index=["A passed", "A failed"],
    )
    show_table(two_by_two, hide_index=False)
    table_downloads(st, two_by_two.reset_index(names=""), f"outcomes-{a}-vs-{b}")
with right:
    st.subheader("Metrics")
    if cmp.metric_config:
        st.caption("Paired over the tasks where both runs define the metric; gold / judge / preset: "
                   + " / ".join(cmp.metric_config))  # fmt: skip
        show_table(
            cmp.metrics.assign(**{"B − A [95 % CI]": [_diff(d, lo, hi, n, unit) for d, lo, hi, n, unit in
                                  cmp.metrics[["diff", "ci_low", "ci_high", "n", "unit"]].itertuples(index=False)]})[
                ["metric", "unit", "n", "mean_a", "mean_b", "B − A [95 % CI]", "left_out", "left_out_why"]],
            hide_index=True,
            column_config={"unit": st.column_config.TextColumn("unit", help="share: a rate of 0–1, B − A in "
                                                               "percentage points (pts); steps: a count of agent steps, B − A in steps"),
                           "mean_a": st.column_config.NumberColumn("A", format="%.3f"),
                           "mean_b": st.column_config.NumberColumn("B", format="%.3f"),
                           "left_out": st.column_config.NumberColumn("left out"),
                           "left_out_why": st.column_config.TextColumn("why left out")},
        )  # fmt: skip
        table_downloads(st, cmp.metrics, f"compare-metrics-{a}-vs-{b}")
    else:
        st.info(" ".join(cmp.notes))

cause_compare.render(a, b)

st.subheader("Per site")
cols = st.columns([5, 1.2])
cols[0].caption(rq.MULTI_SITE_RULE + " Click a site to list its flipped tasks.")
image = state.url_selectbox(cols[1], "Chart download", ("png", "svg"), "img", default="png",
                            help="Format of the camera button above the chart")  # fmt: skip
clicked = st.plotly_chart(
    deltas(cmp.per_site, a, b), on_select="rerun", selection_mode="points", key=f"deltas-{a}-{b}",
    config=export_config(image or "png", f"site-deltas-{a}-vs-{b}"),
)  # fmt: skip
if clicked and clicked.selection.points:
    state.set_param("site", clicked.selection.points[0]["customdata"])
    state.set_param("task", None)
site_table = cmp.per_site.assign(
    delta=[_diff(d, lo, hi, n) for d, lo, hi, n in cmp.per_site[["diff", "ci_low", "ci_high", "n"]].itertuples(index=False)],
    rate_a=cmp.per_site["rate_a"].map(pct), rate_b=cmp.per_site["rate_b"].map(pct),
)[["site", "n", "rate_a", "rate_b", "delta", "only_a", "only_b"]]  # fmt: skip
show_table(
    site_table, hide_index=True,
    column_config={"rate_a": st.column_config.TextColumn("A"), "rate_b": st.column_config.TextColumn("B"),
                   "delta": st.column_config.TextColumn("B − A [95 % CI]"),
                   "only_a": st.column_config.NumberColumn("A only passed"),
                   "only_b": st.column_config.NumberColumn("B only passed")},
)  # fmt: skip
table_downloads(st, cmp.per_site, f"compare-sites-{a}-vs-{b}")

st.subheader("Flipped tasks")
flip = state.url_selectbox(st, "Show", q.FLIPS, "flip", default=q.FLIPS[0])
flips = q.flipped(cmp.pairs, flip or q.FLIPS[0])
site = state.param("site")
if site:
    flips = flips[flips["site"] == site].reset_index(drop=True)
    state.same_page_link(st, state.COMPARE_PAGE, f"Site {site}: show every site", icon=":material/filter_alt_off:",
                         params={"a": a, "b": b, "flip": state.param("flip")})  # fmt: skip
st.caption(f"{len(flips)} tasks. Select one to see both runs' task views side by side.")
picked = show_table(
    flips.assign(verdict_a=flips["verdict_a"].map(verdict_label), verdict_b=flips["verdict_b"].map(verdict_label)),
    hide_index=True, on_select="rerun", selection_mode="single-row", key=f"flips-{a}-{b}-{flip}-{site}",
    column_order=("task_id", "site", "outcome", "verdict_a", "verdict_b", "intent"),
    column_config={"task_id": st.column_config.NumberColumn("task", format="%d"),
                   "outcome": st.column_config.TextColumn("passed in"),
                   "verdict_a": st.column_config.TextColumn("A"), "verdict_b": st.column_config.TextColumn("B")},
)  # fmt: skip
table_downloads(st, flips, f"flipped-{a}-vs-{b}")
if picked.selection.rows:
    state.set_param("task", int(flips.iloc[picked.selection.rows[0]]["task_id"]))
task_id = state.int_param("task")
if task_id is not None:
    st.divider()
    sides = st.columns(2)
    for side, run in zip(sides, (a, b), strict=True):
        with side:
            st.page_link(state.TASK_PAGE, label=f"Open task {task_id} of {run} in Task review",
                         icon=":material/open_in_new:", query_params={"run": run, "task": str(task_id)})  # fmt: skip
            header = read(tq.task_header, run, task_id)
            if header is None:
                st.info(f"{run} has no task {task_id}.")
            else:
                task_header.render(header, run)
