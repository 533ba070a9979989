"""`trajreview diagnose --defects --run R [--format table|csv|md]`: a run's suspected evaluator defects
(core.queries.defects), as a table to read, or as CSV or Markdown to send to the benchmark's maintainers.
Read-only; agent text is printed as text."""

from __future__ import annotations

import typer

from core.cli import ui

FORMATS = ("table", "csv", "md")
CELL = 60  # characters of a long cell in the terminal table (csv and md keep the whole cell)


def _clip(value: object) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= CELL else text[: CELL - 1] + "…"


def print_defects(ctx: typer.Context, run: str | None, fmt: str, *, other_options: list[str]) -> None:
    """Print the list; one-line errors for a missing run, an unknown format or options of another report."""
    from core.errors import InputError
    from core.queries.defect_list import (
        COLUMNS,
        defects_csv,
        defects_frame,
        defects_heading,
        defects_markdown,
    )
    from core.queries.defects import run_defect_rate, run_defects

    if other_options:
        raise InputError(other_options[0], "does not apply to --defects")
    if run is None:
        raise InputError("--run", "name the run whose suspected evaluator defects to list")
    if fmt not in FORMATS:
        raise InputError("--format", f"with --defects must be one of {', '.join(FORMATS)}")
    with ui.store_from(ctx, read_only=True) as store:
        defects = run_defects(store, run)  # NotFound names an unknown run
        rate = run_defect_rate(store, run)
    if fmt == "csv":
        ui.console.print(defects_csv(defects), end="", markup=False, highlight=False)
        return
    if fmt == "md":
        ui.console.print(defects_markdown(run, defects, rate), end="", markup=False, highlight=False)
        return
    ui.say(defects_heading(run, defects))
    if rate.moved:
        ui.say(f"success rate {rate.successes}/{rate.scored}; {rate.sentence()}")
    if not defects:
        return
    shown = ["task_id", "sites", "check", "reference", "actual", "verified", "witnesses", "review", "rule"]
    frame = defects_frame(defects)[shown]
    rows = [tuple(_clip(v) for v in r) for r in frame.itertuples(index=False)]
    ui.print_table("suspected evaluator defects", [COLUMNS[c] for c in shown], rows)
