"""CLI commands of the gold area: `export gold`, `gold history`, `gold new-set`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from core.cli import ui
from core.errors import NotFound

gold_app = typer.Typer(help="Human gold: history of a task's versions, new gold sets.", no_args_is_help=True)


def export_gold_cmd(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Gold set to export.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="File to write: .xlsx, .csv or .jsonl.")],
    fmt: Annotated[
        str | None, typer.Option("--format", help="xlsx, csv or jsonl (default: from the file's suffix).")
    ] = None,
) -> None:
    """Write a gold set's current gold (every task's latest version) in the columns `import gold` reads."""
    from core.gold.export import export_gold

    with ui.store_from(ctx, read_only=True) as store:
        n = export_gold(store, name, out, fmt)
    ui.say(f"{out}: {n} steps of gold set {name}")


@gold_app.command("history")
def history_cmd(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Gold set.")],
    task: Annotated[int, typer.Argument(help="Task id.")],
) -> None:
    """Every version of a task's gold: who saved it, when and why."""
    from core.gold.editing import history
    from core.store import require_gold_set

    with ui.store_from(ctx, read_only=True) as store:
        require_gold_set(store, name)
        rows = history(store, name, task)
    if not rows:
        raise NotFound("gold of task", task, where=f"in gold set {name!r}")
    ui.print_table(
        f"gold of task {task} in {name}",
        ["version", "author", "saved at (UTC)", "reason", "alternatives", "steps"],
        [(r["version"], r["author"], f"{r['created_at']:%Y-%m-%d %H:%M:%S}", r["reason"] or "",
          r["alternatives"], r["steps"]) for r in rows],
    )  # fmt: skip


@gold_app.command("new-set")
def new_set_cmd(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Name of the new, empty gold set.")],
    author: Annotated[str, typer.Option("--author", help="Who creates it.")],
    description: Annotated[str | None, typer.Option(help="What the set is for.")] = None,
) -> None:
    """Create an empty gold set, to write gold for tasks that have none (in the dashboard's Gold tab)."""
    from core.gold.editing import create_gold_set

    with ui.store_from(ctx) as store:
        create_gold_set(store, name, author, description)
    ui.say(f"gold set {name} created")


def register(app: typer.Typer, import_app: typer.Typer) -> None:

    ui.export_group(app).command("gold")(export_gold_cmd)
    app.add_typer(gold_app, name="gold")
