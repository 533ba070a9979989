"""The suspected evaluator defects of a run as the list a team sends to the benchmark's maintainers: one
row per defect (core.queries.defects), as a frame (the page's table and its CSV/xlsx downloads), CSV and
Markdown (`trajreview diagnose --defects --format csv|md`, the page's Markdown download). In Markdown every
cell is one line with Markdown and HTML characters escaped: agent text never becomes a link, a tag or a
table cell of its own."""

from __future__ import annotations

import re
from dataclasses import asdict
from typing import Any

import pandas as pd

from core.queries.defect_rate import DefectRate
from core.queries.defects import CONFIRMED, REJECTED, Defect
from core.values import is_missing, normalise_text

COLUMNS = {
    "run": "run", "task_id": "task", "sites": "sites", "intent": "intent", "check": "check",
    "reference": "reference (scored with)", "actual": "agent gave", "verified": "WebArena-Verified",
    "witnesses": "other runs", "summary": "why", "rule": "rule", "primary": "primary cause",
    "review": "review", "reviewed_by": "reviewed by", "reviewed_at": "reviewed at (UTC)",
}  # fmt: skip


def defects_frame(defects: list[Defect]) -> pd.DataFrame:
    """One row per defect with the columns of COLUMNS (codes as keys), in that order."""
    rows = [
        {**{k: v for k, v in asdict(d).items() if k in COLUMNS}, "primary": d.is_primary,
         "witnesses": d.witnesses_text(), "rule": d.rule or "(reviewer label)",
         "reviewed_at": None if d.reviewed_at is None else d.reviewed_at.strftime("%Y-%m-%d %H:%M")}
        for d in defects
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=list(COLUMNS))


def defects_csv(defects: list[Defect]) -> str:
    return defects_frame(defects).to_csv(index=False)


_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|~])")


def _md(value: Any) -> str:
    """A table cell of agent or benchmark text: one line, Markdown and HTML characters escaped."""
    if is_missing(value):
        return ""
    text = "yes" if value is True else "no" if value is False else str(value)
    return _MD_SPECIAL.sub(r"\\\1", normalise_text(text))


def defects_heading(run: str, defects: list[Defect]) -> str:
    confirmed = sum(d.review == CONFIRMED for d in defects)
    rejected = sum(d.review == REJECTED for d in defects)
    n = len(defects)
    return (
        f"Suspected evaluator defects of run {run}: {n} task{'' if n == 1 else 's'}"
        f" ({confirmed} confirmed by a reviewer, {rejected} rejected)"
    )


def defects_markdown(run: str, defects: list[Defect], rate: DefectRate | None = None) -> str:
    """The list as Markdown: a heading naming the run and the count, what the rows are, then a table."""
    lines = [f"# {_md(defects_heading(run, defects))}", ""]
    lines.append(
        "Each row is a task the benchmark's check failed although the agent's answer (or last page) looks "
        "right: suggested by `trajreview diagnose` from the stored evaluation, the task's WebArena-Verified "
        "version and other runs of the task; *confirmed* means a reviewer accepted it."
    )
    if rate is not None and rate.scored:
        official = f"{rate.successes}/{rate.scored} ({rate.official * 100:.1f} %)"
        extra = f"; {rate.sentence()}" if rate.moved else ""
        lines.append(f"\nSuccess rate of {_md(run)}: {official}{_md(extra)}.")
    frame = defects_frame(defects).drop(columns=["run"])  # the heading names the run
    lines += [
        "",
        "| " + " | ".join(COLUMNS[c] for c in frame.columns) + " |",
        "|" + "---|" * len(frame.columns),
    ]
    for record in frame.itertuples(index=False):
        lines.append("| " + " | ".join(_md(v) for v in record) + " |")
    return "\n".join(lines) + "\n"
