"""CLI of the search area: `search QUERY`, the terminal twin of the Search page, and `search --reindex`."""

from __future__ import annotations

from typing import Annotated

import typer

from core.cli import ui


def search_cmd(
    ctx: typer.Context,
    query: Annotated[
        str | None, typer.Argument(help='Words and "quoted phrases"; every part must occur in one text.')
    ] = None,
    run: Annotated[str | None, typer.Option("--run", help="Only this run.")] = None,
    site: Annotated[str | None, typer.Option("--site", help="Only tasks on this site (e.g. gitlab).")] = None,
    outcome: Annotated[
        str | None,
        typer.Option("--outcome", help="Only tasks with this verdict: success, failure, error, unscored."),
    ] = None,
    cause: Annotated[
        str | None,
        typer.Option(
            "--cause",
            help="Only failed tasks with this primary cause, as a code (gave_up, wrong_element, ...;"
            " a wrong one lists them): `trajreview diagnose` suggests them. Hits say the cause in words.",
        ),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", help="Hits to show.")] = 50,
    fmt: Annotated[str, typer.Option("--format", help="table or json.")] = "table",
    reindex: Annotated[
        bool,
        typer.Option(
            "--reindex", help="Rebuild the full-text index beside the database, then search (if QUERY)."
        ),
    ] = False,
) -> None:
    """Search intents, thoughts, actions, answers, evaluator sentences, labels, notes, causes and URLs."""
    from core.errors import InputError

    if fmt not in ("table", "json"):
        raise InputError("--format", f"{fmt!r} is not table or json")
    if query is None and not reindex:
        raise InputError("query", "give words to search for (or --reindex)")
    with ui.store_from(ctx, read_only=True) as store:
        if reindex:
            from core.search.index import index_dir
            from core.search.index import reindex as rebuild

            with ui.progress_bar("indexing runs") as progress:
                n = rebuild(store, on_progress=progress)
            if fmt == "table":
                ui.say(f"search index rebuilt: {n} run(s) in {index_dir(store.path)}")
        if query is None:
            return
        from core.queries.search import search

        result = search(store, query, run=run, site=site, outcome=outcome, cause=cause, limit=limit)
    if fmt == "json":
        typer.echo(result.model_dump_json(indent=1))
        return
    rows = [
        (h.run, h.task_id, "" if h.step is None else h.step, h.kind, h.outcome,
         h.cause_text(),
         f"{h.snippet.before}[{h.snippet.match}]{h.snippet.after}")
        for h in result.hits
    ]  # fmt: skip
    ui.print_table(
        f"{result.total} match(es) for {query!r}; first {len(rows)}",
        ["run", "task", "step", "in", "outcome", "cause", "context ([match])"], rows,
    )  # fmt: skip
    if result.not_indexed:
        ui.say(
            f"not indexed (steps, answers and URLs not searched): {', '.join(result.not_indexed)};"
            " `trajreview search --reindex` indexes them"
        )
    if cause is not None and result.undiagnosed:
        ui.say(f"not diagnosed, so no cause to filter on: {', '.join(result.undiagnosed)}")


def register(app: typer.Typer, import_app: typer.Typer) -> None:
    """Add this area's commands to the main app."""
    app.command("search")(search_cmd)
