"""Plotly figures for the app (plotly lives here, never in core). Click-through charts carry the value a
click selects in `customdata` and use string categories (Streamlit's selection traps: no date axes,
no heatmaps)."""

from __future__ import annotations

import html

import pandas as pd
import plotly.graph_objects as go

from core.measure.stats import TOO_FEW, percent
from core.queries.causes import ORDER as CAUSE_ORDER
from core.queries.network import GAP_MS, collapse_gaps
from core.values import is_missing
from dashboard.text import clip

SUCCESS_COLOR = "#2f6fde"
EVENT_COLORS = {"navigation": "#2f6fde", "mutation": "#e4572e", "other": "#9aa5b1"}


def success_by_site(per_site: pd.DataFrame, title: str | None = None) -> go.Figure:
    """Horizontal bars of the success rate per site with the 95 % CI as error bars, 'site · successes/scored'
    beside each bar and its rate on it (inside from its start, or past its whisker: `labelled_bars`); the
    site is the bar's customdata (a click opens Triage on it)."""
    df = per_site[per_site["scored"] > 0].sort_values(["success_rate", "site"], ascending=[True, False])
    rate = df["success_rate"].astype(float) * 100
    labels = [
        # Escaped: plotly renders <a>, <b>, <br> … inside labels; the click keeps the raw site.
        f"{html.escape(str(site))} · {s}/{n}"
        for site, s, n in zip(df["site"], df["successes"], df["scored"], strict=True)
    ]
    fig = go.Figure()
    labelled_bars(
        fig, y=labels, rate=rate, low=df["ci_low"].astype(float) * 100, high=df["ci_high"].astype(float) * 100,
        text=[percent(r / 100) for r in rate], customdata=df["site"].tolist(), offsetgroup="0",
        marker_color=SUCCESS_COLOR, hovertemplate="%{y} tasks: %{x:.1f} %<extra></extra>",
    )  # fmt: skip
    fig.update_layout(
        title=html.escape(title) if title else None, height=max(160, 60 + 30 * len(df)), margin={"l": 10, "r": 60, "t": 40 if title else 10, "b": 10},
        xaxis={"title": "success rate (%) with 95 % CI", **RATE_AXIS}, yaxis={"type": "category"},
        showlegend=False,
    )  # fmt: skip
    return fig


def waterfall(events: pd.DataFrame, limit: int = 1500) -> go.Figure:
    """Each event as a bar from its start for its duration, first event on top, coloured by type. Idle
    stretches (nothing in flight for over GAP_MS) are collapsed and marked with how long they lasted, so
    a run that waited 20 s between two pages still shows both pages' requests side by side."""
    df = events.head(limit).reset_index(drop=True)
    duration = df["time_ms"].fillna(0).clip(lower=1).astype(float)
    start = df["start_ms"].fillna(0).astype(float)
    shifted, gaps = collapse_gaps(start.tolist(), (start + duration).tolist())
    df = df.assign(_x=shifted, _d=duration)
    fig = go.Figure()
    for kind, color in EVENT_COLORS.items():
        part = df[df["event_type"].fillna("other") == kind]
        if part.empty:
            continue
        fig.add_bar(
            y=part["seq"].astype(str), x=part["_d"], base=part["_x"],
            orientation="h", name=kind, marker_color=color, customdata=part["start_ms"],
            hovertext=[f"{m} {s} {html.escape(str(u)[:120])}" for m, s, u in zip(part["method"], part["status"], part["url"].fillna(""), strict=True)],
            hovertemplate="#%{y} at %{customdata} ms, %{x:.0f} ms<br>%{hovertext}<extra></extra>",
        )  # fmt: skip
    for at, idle in gaps:
        fig.add_vline(x=at, line_color="#999", line_dash="dot")
        fig.add_annotation(x=at, y=1, yref="paper", text=f"⋯ {idle / 1000:.1f} s idle", showarrow=False,
                           yanchor="bottom", font={"size": 10, "color": "#555"})  # fmt: skip
    fig.update_layout(
        barmode="overlay", height=min(140 + 12 * len(df), 900), margin={"l": 10, "r": 10, "t": 30, "b": 10},
        xaxis={"title": f"ms of activity since the first event (idle stretches over {GAP_MS / 1000:.0f} s collapsed: ⋯)"},
        yaxis={"type": "category", "autorange": "reversed", "title": "event", "categoryorder": "array",
               "categoryarray": df["seq"].astype(str).tolist(), "showticklabels": len(df) <= 60},
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom"},
    )  # fmt: skip
    return fig


def judge_kappa(stages: pd.DataFrame) -> go.Figure:
    """Cohen's κ per judge stage with its 95 % bootstrap CI as error bars and n on each bar; a stage
    whose κ is undefined (one class only) is drawn empty and says so."""
    df = stages.reset_index(drop=True)
    kappa = df["kappa"].astype(float)
    labels = [f"{s} · n={n}" for s, n in zip(df["stage"], df["n"], strict=True)]
    fig = go.Figure(
        go.Bar(
            y=labels, x=kappa.fillna(0), orientation="h", marker_color=SUCCESS_COLOR,
            text=["κ undefined" if is_missing(k) else f"{k:.2f}" + ("" if not is_missing(lo) else f", {TOO_FEW}")
                  for k, lo in zip(kappa, df["kappa_low"], strict=True)], textposition="outside",
            error_x={"type": "data", "symmetric": False,
                     "array": (df["kappa_high"].astype(float) - kappa).fillna(0).tolist(),
                     "arrayminus": (kappa - df["kappa_low"].astype(float)).fillna(0).tolist(),
                     "color": "#555", "thickness": 1},
            hovertemplate="%{y}: κ %{x:.2f}<extra></extra>",
        )
    )  # fmt: skip
    fig.update_layout(
        height=70 + 34 * max(len(df), 1), margin={"l": 10, "r": 10, "t": 10, "b": 10},
        xaxis={"title": "Cohen's κ, judge vs reviewers (95 % bootstrap CI)", "range": [-1, 1.15]},
        yaxis={"type": "category", "autorange": "reversed"}, showlegend=False,
    )  # fmt: skip
    return fig


RUN_COLORS = ("#2f6fde", "#e4572e", "#17a398", "#f2a541", "#8a4fff", "#6c757d", "#c2185b", "#3c8d2f")


def export_config(image_format: str = "png", filename: str = "chart") -> dict:
    """Plotly's modebar camera button downloads the chart client-side (no kaleido on the server) in
    `image_format` (png or svg)."""
    return {
        "displaylogo": False,
        "toImageButtonOptions": {"format": image_format if image_format in ("png", "svg") else "png",
                                 "filename": filename, "scale": 2},
    }  # fmt: skip


# A label inside a bar sits at the bar's start; it needs this much of the axis (in %) left of the whisker's
# lower end (about 110 px of a 450 px plot: "100.0 % · 812/812"), else it goes past the whisker's upper end.
INSIDE_ROOM = 25.0
# A label beside its bar starts this much of the axis (in %) past the whisker's upper end.
BESIDE_GAP = 1.5
# The rate axis of bars labelled by `bar_labels`: it reaches just past 100 so that a label beside a bar whose
# whisker ends at 100 % starts inside it (plotly hides a text point outside the axis range, even with
# cliponaxis off, which only lets drawn text overflow: the 1/1 bars had no label); the text runs into the
# right margin. Ticks stop at 100.
RATE_AXIS = {"range": [0, 100 + 2 * BESIDE_GAP], "tickvals": [0, 20, 40, 60, 80, 100]}


def bar_labels(rate: pd.Series, low: pd.Series, high: pd.Series) -> list[float | None]:
    """Where each bar's label starts, on the axis (in %): None for a label inside its bar, from the bar's
    start, where the CI whisker leaves it room; else just past the whisker's upper end (or the bar's end,
    whichever is further), so the whisker never crosses the text."""
    return [
        None if not is_missing(lo) and lo >= INSIDE_ROOM else max(r, r if is_missing(hi) else hi) + BESIDE_GAP
        for r, lo, hi in zip(rate, low, high, strict=True)
    ]


def labelled_bars(
    fig: go.Figure,
    *,
    y: list,
    rate: pd.Series,
    low: pd.Series,
    high: pd.Series,
    text: list[str],
    customdata: list,
    offsetgroup: str,
    **bar: object,
) -> None:
    """Add horizontal bars with their 95 % CI whiskers and one label each, placed by `bar_labels`: inside the
    bar from its start, or as text beside it (a text trace in the bar's offset group) past the whisker."""
    outside = bar_labels(rate, low, high)
    fig.add_bar(
        y=y, x=rate, orientation="h", offsetgroup=offsetgroup,
        text=[t if at is None else "" for t, at in zip(text, outside, strict=True)],
        textposition="inside", insidetextanchor="start", insidetextfont={"color": "white"},
        customdata=customdata,
        error_x={"type": "data", "symmetric": False, "array": (high - rate).tolist(),
                 "arrayminus": (rate - low).tolist(), "color": "#555", "thickness": 1},
        **bar,
    )  # fmt: skip
    fig.add_scatter(
        y=y, x=outside, orientation="h", mode="text", offsetgroup=offsetgroup, showlegend=False,
        text=[t if at is not None else "" for t, at in zip(text, outside, strict=True)],
        textposition="middle right", textfont={"color": "#333"}, cliponaxis=False,
        customdata=customdata, hoverinfo="skip",
    )  # fmt: skip


def rate_bars(table: pd.DataFrame, title: str | None = None) -> go.Figure:
    """Grouped horizontal bars of success rate per value, one colour per run, 95 % CI as error bars and
    'rate · successes/scored' on every bar (inside from its start, or past its whisker: `bar_labels`); each
    bar's customdata is [run, value] (a click opens Triage on that run filtered to that value)."""
    df = table[table["scored"] > 0]
    runs = list(dict.fromkeys(df["run"]))
    values = sorted(df["value"].unique(), key=lambda v: (-int(df.loc[df["value"] == v, "scored"].max()), v))
    fig = go.Figure()
    for i, run in enumerate(runs):
        part = (
            df[df["run"] == run]
            .set_index("value")
            .reindex([v for v in values if v in set(df.loc[df["run"] == run, "value"])])
        )
        rate = part["success_rate"].astype(float) * 100
        low, high = part["ci_low"].astype(float) * 100, part["ci_high"].astype(float) * 100
        # Labels escaped: plotly renders <a>, <b>, <br> … inside them; the click keeps the raw value.
        y = [html.escape(str(v)) for v in part.index]
        text = [
            f"{percent(r / 100)} · {s}/{n}"
            for r, s, n in zip(rate, part["successes"], part["scored"], strict=True)
        ]
        labelled_bars(
            fig, y=y, rate=rate, low=low, high=high, text=text, customdata=[[run, v] for v in part.index],
            offsetgroup=str(i), name=html.escape(run), marker_color=RUN_COLORS[i % len(RUN_COLORS)],
            hovertemplate=f"{html.escape(run)}<br>%{{y}}: %{{x:.1f}} %<extra></extra>",
        )  # fmt: skip
    height = 80 + 26 * max(len(values), 1) * max(len(runs), 1) + 14 * len(values)
    fig.update_layout(
        title=title, barmode="group", scattermode="group", height=min(max(height, 200), 2400),
        margin={"l": 10, "r": 120, "t": 40 if title else 10, "b": 10},
        xaxis={"title": "success rate (%) with 95 % CI", **RATE_AXIS},
        yaxis={"type": "category", "categoryorder": "array",
               "categoryarray": [html.escape(str(v)) for v in values[::-1]]},
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "traceorder": "normal"},
    )  # fmt: skip
    return fig


def cause_bars(table: pd.DataFrame) -> go.Figure:
    """Share of each run's failed tasks per suggested primary cause (`causes.cause_breakdown`), the bars of
    `rate_bars` ('share · tasks/failed', Wilson 95 % CI), causes in the taxonomy's order; each bar's
    customdata is [run, cause in words]."""
    fig = rate_bars(table.rename(columns={"name": "value", "share": "success_rate", "tasks": "successes",
                                          "failed": "scored"}))  # fmt: skip
    rank = {cause: i for i, cause in enumerate(CAUSE_ORDER)}  # `not diagnosed` (cause None) last
    names = list(dict.fromkeys(n for _, n in sorted(zip(table["cause"].map(lambda c: rank.get(c, len(rank))),
                                                        table["name"], strict=True))))  # fmt: skip
    fig.update_layout(
        xaxis={"title": "share of the run's failed tasks (%) with 95 % CI", **RATE_AXIS},
        yaxis={"categoryarray": [html.escape(str(n)) for n in names[::-1]]},
    )
    return fig


# How far from zero (in points) a delta's label turns inward: half the −105…105 axis's reach, so a label of
# up to a quarter of the axis ('n=5, too few to tell' is about that) reaching outward from a point inside it
# ends before the plot's edge, and reaching inward from a point beyond it ends before 0.
DELTA_LABEL_TURN = 52.5


def delta_text_positions(diff: pd.Series) -> list[str]:
    """Each delta's label above its point, on the side away from zero (a label centred on a point near 0 was
    crossed by the dotted zero line), or toward zero when the point lies beyond ±`DELTA_LABEL_TURN` (a
    label reaching outward from −100 or +100 is cut by the plot's edge; reaching inward it ends before 0)."""
    return ["top left" if d > DELTA_LABEL_TURN or -DELTA_LABEL_TURN <= d < 0 else "top right" for d in diff]


def deltas(per_site: pd.DataFrame, a: str, b: str) -> go.Figure:
    """B − A in success per site (points) with the paired bootstrap 95 % CI; n of paired tasks beside
    each point; the site is the point's customdata."""
    df = per_site.sort_values(["n", "site"], ascending=[True, False])
    diff = df["diff"].astype(float) * 100
    low = df["ci_low"].astype(float).fillna(df["diff"].astype(float)) * 100
    high = df["ci_high"].astype(float).fillna(df["diff"].astype(float)) * 100
    fig = go.Figure(
        go.Scatter(
            y=[html.escape(str(s)) for s in df["site"]], x=diff, mode="markers+text", customdata=df["site"],
            marker={"size": 9, "color": [RUN_COLORS[1] if d < 0 else RUN_COLORS[0] for d in diff]},
            text=[f"n={n}" + ("" if not is_missing(lo) else f", {TOO_FEW}") for n, lo in zip(df["n"], df["ci_low"], strict=True)],
            textposition=delta_text_positions(diff), cliponaxis=False,
            error_x={"type": "data", "symmetric": False, "array": (high - diff).tolist(),
                     "arrayminus": (diff - low).tolist(), "color": "#555", "thickness": 1},
            hovertemplate="%{y}: %{x:+.1f} points<extra></extra>",
        )
    )  # fmt: skip
    fig.add_vline(x=0, line_color="#999", line_dash="dot")
    fig.update_layout(
        height=80 + 34 * max(len(df), 1), margin={"l": 10, "r": 10, "t": 10, "b": 10}, showlegend=False,
        xaxis={"title": f"B − A success (points), 95 % CI — A {html.escape(clip(a, 40))}, B {html.escape(clip(b, 40))}",
               "range": [-105, 105]},
        yaxis={"type": "category"},
    )  # fmt: skip
    return fig


def label_counts(counts: pd.DataFrame) -> go.Figure:
    """Stacked bars: current reviewer labels per run and site, one colour per label."""
    df = counts.assign(where=[f"{r} · {s}" for r, s in zip(counts["run"], counts["site"], strict=True)])
    fig = go.Figure()
    for label, part in df.groupby("label", sort=True):
        # Plotly reads a few HTML tags in names: reviewer-written labels are escaped.
        name = html.escape(str(label))
        fig.add_bar(y=part["where"], x=part["n"], name=name, orientation="h", customdata=[name] * len(part),
                    hovertemplate="%{y}: %{x} × %{customdata}<extra></extra>")  # fmt: skip
    fig.update_layout(
        barmode="stack", height=90 + 30 * max(df["where"].nunique(), 1),
        margin={"l": 10, "r": 10, "t": 10, "b": 10}, xaxis={"title": "labels", "dtick": 1},
        yaxis={"type": "category", "categoryorder": "category descending"}, legend={"title": "label"},
    )  # fmt: skip
    return fig


def paradigm_bars(view: pd.DataFrame, metrics: tuple[str, ...]) -> go.Figure:
    """Success rate and each metric's mean per run, runs grouped by planning paradigm on the x axis
    (plotly's two-level categories), each bar with its 95 % CI and the n behind it."""
    x = [
        [html.escape(str(p).replace("_", " ")) for p in view["paradigm"]],
        [html.escape(str(r)) for r in view["run"]],
    ]
    series = [("success", view["success_rate"], view["ci_low"], view["ci_high"], view["scored"])]
    series += [
        (m.upper(), view[f"{m}_mean"], view[f"{m}_ci_low"], view[f"{m}_ci_high"], view[f"{m}_n"])
        for m in metrics
    ]
    fig = go.Figure()
    for i, (name, mean, low, high, n) in enumerate(series):
        mean, low, high = (pd.to_numeric(v, errors="coerce").astype(float) for v in (mean, low, high))
        fig.add_bar(
            x=x, y=mean, name=name, marker_color=RUN_COLORS[i % len(RUN_COLORS)],
            text=[f"n={int(k)}" if pd.notna(k) and k else "" for k in n], textposition="outside",
            error_y={"type": "data", "symmetric": False, "array": (high.fillna(mean) - mean).tolist(),
                     "arrayminus": (mean - low.fillna(mean)).tolist(), "color": "#555", "thickness": 1},
            hovertemplate=f"{name}: %{{y:.3f}}<extra></extra>",
        )  # fmt: skip
    fig.update_layout(
        barmode="group", height=420, margin={"l": 10, "r": 10, "t": 30, "b": 10},
        yaxis={"title": "rate / mean (95 % CI)", "range": [0, 1.12]},
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom"},
    )  # fmt: skip
    return fig
