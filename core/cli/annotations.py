"""CLI commands of the reviewer-annotations area: `labels`, the terminal twin of the Labels & judge page's
label counts and vocabulary (writes happen in the dashboard, where the reviewer's name is known)."""

from __future__ import annotations

from typing import Annotated

import typer

from core.cli import ui


def labels_cmd(
    ctx: typer.Context,
    run: Annotated[str | None, typer.Option("--run", help="Only this run's labels.")] = None,
) -> None:
    """Reviewer labels counted per run and site (current labels: the latest write wins), and the vocabulary."""
    from core.queries import annotations as qa
    from core.store import require_runs

    with ui.store_from(ctx, read_only=True) as store:
        if run:
            require_runs(store, [run])
        counts = qa.label_counts(store)
        vocabulary = qa.vocabulary(store, include_retired=True)
    if run:
        counts = counts[counts["run"] == run]
    if counts.empty:
        ui.say("no reviewer labels" + (f" on run {run}" if run else "") + " yet")
    else:
        ui.print_table("labels per run and site", ["run", "site", "label", "n"],
                       [tuple(r) for r in counts[["run", "site", "label", "n"]].itertuples(index=False)])  # fmt: skip
    ui.print_table(
        "label vocabulary", ["label", "description", "retired", "uses"],
        [(v["label"], v["description"], "yes" if v["retired"] else "", v["uses"]) for v in vocabulary],
    )  # fmt: skip


def register(app: typer.Typer, import_app: typer.Typer) -> None:
    """Add this area's commands to the main app."""
    app.command("labels")(labels_cmd)
