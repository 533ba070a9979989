"""Plotly figures for the app (plotly lives here, never in core)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

TASK_TYPE_COLORS = {"retrieve": "#4c78a8", "mutate": "#f58518", "navigate": "#54a24b"}


def tasks_per_site(per_site: pd.DataFrame) -> go.Figure:
    """Stacked horizontal bars per site key, largest on top, split by task type."""
    ordered = per_site.sort_values("tasks")
    fig = go.Figure()
    for task_type, color in TASK_TYPE_COLORS.items():
        fig.add_bar(
            y=ordered["site_key"], x=ordered[task_type], name=task_type, orientation="h",
            marker_color=color, customdata=ordered["site_key"],
            hovertemplate="%{y}: %{x} " + task_type + " tasks<extra></extra>",
        )  # fmt: skip
    fig.update_layout(
        barmode="stack", height=40 + 28 * len(ordered), margin={"l": 10, "r": 10, "t": 10, "b": 10},
        legend={"orientation": "h", "y": -0.15}, xaxis_title="tasks", yaxis={"type": "category"},
    )  # fmt: skip
    return fig
