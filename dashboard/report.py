"""One self-contained HTML file for people who will never run the app: the runs, success with CIs by
site, task type, hard subset, termination and reviewer label (charts with plotly.js embedded), failures
by suggested cause, the paper's tables with what they leave out, the planning-paradigm view, a paired comparison of the first two
runs, and the caveats.

Everything shown comes from core's read models. Every string from the database (run names, reviewer
labels, agent text) is HTML-escaped, in the tables and in the charts alike (plotly renders a subset of
HTML in labels), and the file loads nothing from the network.
"""

from __future__ import annotations

import html
import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import plotly.io as pio

from core.measure.metrics_run import NULL_REASONS
from core.measure.stats import estimate_text, rate_text
from core.queries import breakdowns, causes, compare, metrics_view
from core.queries.defect_rate import WITH_DEFECTS
from core.queries.runs import MULTI_SITE_RULE, runs_table
from core.store import Store
from core.values import is_missing
from dashboard.charts import cause_bars, paradigm_bars, rate_bars

STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem auto;max-width:1200px;color:#222;padding:0 1rem}
h1{margin-bottom:.2rem} h2{margin-top:2.2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}
table{border-collapse:collapse;font-size:.85rem;margin:.6rem 0 1rem;display:block;overflow-x:auto}
th,td{border:1px solid #ddd;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f4f6f8} td.num{text-align:right;font-variant-numeric:tabular-nums}
.caveat{background:#fff8e1;border-left:4px solid #f2a541;padding:.5rem .8rem;margin:.8rem 0;font-size:.9rem}
.muted{color:#666;font-size:.85rem}
"""


def _e(value) -> str:
    return html.escape(str(value), quote=True)


def _cell(v) -> tuple[str, bool]:
    if is_missing(v):
        return "–", False
    if isinstance(v, bool):
        return ("yes" if v else "no"), False
    if isinstance(v, float):
        return f"{v:.3f}", True
    if isinstance(v, int):
        return str(v), True
    return _e(v), False


def table_html(df: pd.DataFrame) -> str:
    """A plain HTML table; every cell escaped, numbers right-aligned with 3 decimals."""
    head = "".join(f"<th>{_e(c)}</th>" for c in df.columns)
    rows = []
    for record in df.itertuples(index=False):
        cells = []
        for v in record:
            text, num = _cell(v.item() if hasattr(v, "item") else v)
            cells.append(f'<td class="num">{text}</td>' if num else f"<td>{text}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _rate(r, lo, hi, n) -> str:
    return rate_text(r, lo, hi, n)


def _chart(part: pd.DataFrame, first: list[bool]) -> str:
    fig = rate_bars(part)  # escapes its labels: plotly renders <a>, <b>, <br> … inside label text
    fig.update_layout(clickmode="none")
    out = pio.to_html(
        fig, full_html=False, include_plotlyjs=first[0], config={"displaylogo": False, "responsive": True}
    )
    first[0] = False
    return out


def _causes(store: Store, runs: list[str], first: list[bool]) -> str:
    """Failures by suggested primary cause per diagnosed run: chart and table, and the runs not diagnosed."""
    table = causes.cause_breakdown(store, runs)
    body = "".join(
        f'<p class="muted">{_e(causes.diagnose_hint(r))}</p>' for r in causes.undiagnosed_runs(store, runs)
    )
    if table.empty:
        return body
    fig = cause_bars(table)
    fig.update_layout(clickmode="none")
    body += pio.to_html(fig, full_html=False, include_plotlyjs=first[0], config={"displaylogo": False})
    first[0] = False
    shown = table.assign(
        share=[_rate(*r) for r in table[["share", "ci_low", "ci_high", "failed"]].itertuples(index=False)]
    )
    body += table_html(shown[["run", "name", "tasks", "by_model", "failed", "share"]].rename(columns={
        "name": "suggested cause", "by_model": "of which by a model", "failed": "failed tasks",
        "share": "share of failures [95 % CI]"}))  # fmt: skip
    return body + (
        '<p class="caveat">Causes are suggestions (`trajreview diagnose`: rules over the stored data, a model '
        "where no rule decided); a reviewer accepts or rejects each on the task's page.</p>"
    )


def _defects_sentence(cmp: compare.Comparison) -> str:
    """' With confirmed defects counted as passes, over the same paired tasks: A …; B ….' or ''."""
    moved = [f"{side} {_e(run)} {_e(cmp.with_defects[run].text())}" for side, run in (("A", cmp.a), ("B", cmp.b))
             if run in cmp.with_defects and cmp.with_defects[run].moved]  # fmt: skip
    return (
        f" {_e(WITH_DEFECTS.capitalize())}, over the same paired tasks: {'; '.join(moved)}." if moved else ""
    )


def _section(title: str, body: str) -> str:
    return f"<h2>{_e(title)}</h2>\n{body}"


def build(store: Store, runs: Sequence[str], *, database_name: str = "") -> str:
    """The whole report as one HTML string."""
    runs = list(runs)
    parts: list[str] = []
    info = runs_table(store)
    info = info[info["run"].isin(runs)].set_index("run").loc[runs].reset_index()
    summary = info.assign(
        success=[
            _rate(*r) for r in info[["success_rate", "ci_low", "ci_high", "scored"]].itertuples(index=False)
        ]
    ).rename(columns={"with_defects": WITH_DEFECTS})
    # Beside the official rate, never instead of it, and only when a reviewer confirmed an evaluator defect.
    defects = [WITH_DEFECTS] if (info["defects_moved"] > 0).any() else []
    parts.append(_section("Runs", table_html(summary[["run", "agent", "model", "paradigm", "source", "success", *defects,
                                                      "tasks", "scored", "failures", "errors", "import_problems"]])
                          + '<p class="caveat">Success rate = successes / scored tasks (success, failure, error) with '
                          "its 95 % Wilson interval. Unscored tasks are left out of the rate and counted apart "
                          "(<em>tasks − scored</em>); an error counts as not passed."
                          + (f" <em>{_e(WITH_DEFECTS)}</em>: the same scored tasks with the failed ones whose evaluator "
                             "defect a reviewer confirmed (accepted as <em>evaluator too strict</em>) counted as passes, "
                             "and how many tasks that moves; the official rate is unchanged." if defects else "")
                          + "</p>"))  # fmt: skip

    table = breakdowns.breakdowns(store, runs)
    first = [True]
    for dimension in breakdowns.DIMENSIONS:
        part = table[table["dimension"] == dimension]
        body = ""
        if dimension == "site":
            body += f'<p class="caveat">{_e(MULTI_SITE_RULE)}</p>'
        if part["scored"].sum() > 0:
            body += _chart(part, first)
        shown = part.assign(success=[_rate(*r) for r in part[["success_rate", "ci_low", "ci_high", "scored"]].itertuples(index=False)])  # fmt: skip
        defects = ["with_defects"] if part["defects_moved"].any() else []
        body += table_html(shown[["run", "value", "success", *defects, "scored", "successes", "failures", "errors", "unscored"]]
                           .rename(columns={"value": dimension, "with_defects": WITH_DEFECTS}))  # fmt: skip
        parts.append(_section(f"Success by {dimension}", body))
    parts.append(_section("Failures by suggested cause", _causes(store, runs, first)))

    pair = compare.comparison_pair(store, runs) if len(runs) >= 2 else None
    if len(runs) >= 2 and pair is None:
        parts.append(
            _section("Comparison", "<p>No two of these runs scored a task in common: nothing to pair.</p>")
        )
    if pair is not None:
        cmp = compare.compare_runs(store, *pair)
        s, o = cmp.success, cmp.outcomes
        two = pd.DataFrame({"": ["A passed", "A failed"], "B passed": [o["both pass"], o["B only"]],
                            "B failed": [o["A only"], o["both fail"]]})  # fmt: skip
        diff = estimate_text(s["diff"], s["ci_low"], s["ci_high"], s["n"], points=True)
        body = (f"<p>A = <b>{_e(cmp.a)}</b>, B = <b>{_e(cmp.b)}</b> (the latest run and the latest earlier one "
                f"that scored tasks in common with it), paired over {s['n']} tasks both scored "
                f"({_e(', '.join(f'{k} {v}' for k, v in cmp.unpaired.items()))}). B − A = {diff} "
                f"(paired bootstrap 95 % CI); McNemar exact p = {cmp.mcnemar_p:.3g}.{_defects_sentence(cmp)}</p>"
                + table_html(two) + "<h3>Per site (B − A, paired bootstrap 95 % CI)</h3>" + table_html(cmp.per_site))  # fmt: skip
        by_cause = causes.compare_causes(store, *pair)
        if by_cause.diagnosed_a or by_cause.diagnosed_b:
            body += f"<h3>By suggested cause</h3><p>{_e(by_cause.sentence())}</p>"
        if cmp.metric_config:
            body += f"<h3>Metrics ({_e(' / '.join(cmp.metric_config))})</h3>" + table_html(cmp.metrics)
        parts.append(_section(f"Comparison: {cmp.b} against {cmp.a}", body))

    choices = metrics_view.metric_choices(store, runs)
    if choices.empty:
        parts.append(_section("The paper's tables", "<p>No metrics computed for these runs; Table 3 only.</p>"
                              + table_html(metrics_view.paper_table(store, "Table 3", runs, None, None, "default"))))  # fmt: skip
    else:
        gold, judge, preset = choices.iloc[0][["gold_set", "judge_config", "preset"]]
        body = (f'<p class="muted">Gold set {_e(gold)}, judge {_e(judge)}, preset {_e(preset)}. Every row says '
                "how many tasks its figure covers (n or tasks) and how many it leaves out and why "
                "(left_out, left_out_why).</p>")  # fmt: skip
        for name in metrics_view.TABLES:
            df = metrics_view.paper_table(store, name, runs, gold, judge, preset)
            body += f"<h3>{_e(name)}: {_e(metrics_view.TITLES[name])}</h3>" + table_html(df)
        view = metrics_view.paradigm_view(store, runs, gold, judge, preset)
        fig = paradigm_bars(view, metrics_view.PARADIGM_METRICS)
        body += ("<h3>Planning paradigms: runs grouped by paradigm, side by side</h3>"
                 + pio.to_html(fig, full_html=False, include_plotlyjs=first[0], config={"displaylogo": False})
                 + table_html(view))  # fmt: skip
        first[0] = False
        reasons = pd.DataFrame(sorted(NULL_REASONS.items()), columns=["left_out_why", "meaning"])
        body += "<h3>Why tasks are left out</h3>" + table_html(reasons)
        parts.append(_section("The paper's tables", body))

    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    title = f"trajreview report: {', '.join(runs)}"
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{_e(title)}</title><style>{STYLE}</style></head><body>"
        f"<h1>trajreview report</h1><p class=\"muted\">{len(runs)} runs · database {_e(database_name)} · "
        f"generated {stamp}. Opens offline: charts and their JavaScript are inside this file.</p>"
        + "\n".join(parts) + "</body></html>"
    )  # fmt: skip


def write(store: Store, runs: Sequence[str], out: Path) -> int:
    """Write the report to `out` atomically (a temporary file renamed into place); its size in bytes."""
    text = build(store, runs, database_name=Path(store.path).name)
    tmp = out.with_name(out.name + ".partial")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, out)
    return out.stat().st_size
