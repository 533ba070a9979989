"""Plotly figures for the app (plotly lives here, never in core). Click-through charts carry the value a
click selects in `customdata` and use string categories (Streamlit's selection traps: no date axes,
no heatmaps)."""

from __future__ import annotations

import html

import pandas as pd
import plotly.graph_objects as go

SUCCESS_COLOR = "#2f6fde"
EVENT_COLORS = {"navigation": "#2f6fde", "mutation": "#e4572e", "other": "#9aa5b1"}


def success_by_site(per_site: pd.DataFrame, title: str | None = None) -> go.Figure:
    """Horizontal bars of the success rate per site with the 95 % CI as error bars and
    'successes/scored' on each bar; the site is the bar's customdata (a click opens Triage on it)."""
    df = per_site[per_site["scored"] > 0].sort_values(["success_rate", "site"], ascending=[True, False])
    rate = df["success_rate"].astype(float) * 100
    labels = [
        f"{site} · {s}/{n}" for site, s, n in zip(df["site"], df["successes"], df["scored"], strict=True)
    ]
    fig = go.Figure(
        go.Bar(
            y=labels, x=rate, orientation="h", marker_color=SUCCESS_COLOR,
            text=[f"{r:.0f} %" for r in rate], textposition="inside", insidetextanchor="end",
            customdata=df["site"],
            error_x={"type": "data", "symmetric": False,
                     "array": (df["ci_high"].astype(float) * 100 - rate).tolist(),
                     "arrayminus": (rate - df["ci_low"].astype(float) * 100).tolist(),
                     "color": "#555", "thickness": 1},
            hovertemplate="%{y} tasks: %{x:.1f} %<extra></extra>",
        )
    )  # fmt: skip
    fig.update_layout(
        title=title, height=60 + 30 * max(len(df), 1), margin={"l": 10, "r": 10, "t": 40 if title else 10, "b": 10},
        xaxis={"title": "success rate (%) with 95 % CI", "range": [0, 100]}, yaxis={"type": "category"},
        showlegend=False,
    )  # fmt: skip
    return fig


def waterfall(events: pd.DataFrame, limit: int = 1500) -> go.Figure:
    """Each event as a bar from its start offset for its duration, first event on top, coloured by type."""
    df = events.head(limit)
    fig = go.Figure()
    for kind, color in EVENT_COLORS.items():
        part = df[df["event_type"].fillna("other") == kind]
        if part.empty:
            continue
        fig.add_bar(
            y=part["seq"].astype(str), x=part["time_ms"].fillna(0).clip(lower=1), base=part["start_ms"],
            orientation="h", name=kind, marker_color=color, customdata=part["seq"],
            hovertext=[f"{m} {s} {u[:120]}" for m, s, u in zip(part["method"], part["status"], part["url"].fillna(""), strict=True)],
            hovertemplate="#%{y} at %{base} ms, %{x:.0f} ms<br>%{hovertext}<extra></extra>",
        )  # fmt: skip
    fig.update_layout(
        barmode="overlay", height=min(120 + 12 * len(df), 900), margin={"l": 10, "r": 10, "t": 10, "b": 10},
        xaxis={"title": "ms since the first event"},
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
            text=["κ undefined" if pd.isna(k) else f"{k:.2f}" for k in kappa], textposition="outside",
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
