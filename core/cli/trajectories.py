"""CLI commands of the trajectories area: import WebArena renders, human gold, trajreview JSONL."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from core.cli import ui


def import_webarena_render_cmd(
    ctx: typer.Context,
    directory: Annotated[
        Path, typer.Argument(help="Folder with render_<task_id>.html files (searched recursively).")
    ],
    run: Annotated[str, typer.Option("--run", help="Run name (a run of that name is replaced).")],
    logs: Annotated[
        Path | None,
        typer.Option(
            "--logs", help="Log folder or file with [Result] (PASS|FAIL) lines; default: logs found in DIR."
        ),
    ] = None,
    agent: Annotated[str | None, typer.Option(help="Agent name.")] = None,
    model: Annotated[str | None, typer.Option(help="Model name (default: config.json or the logs).")] = None,
    paradigm: Annotated[str, ui.PARADIGM_OPTION] = "step_by_step",
) -> None:
    """Import original WebArena render_<id>.html files as one run, PASS/FAIL from the run's logs."""
    from core.ingest.webarena_render import import_webarena_render

    with ui.import_store(ctx) as store, ui.progress_bar("importing renders") as progress:
        s = import_webarena_render(
            store,
            directory,
            run,
            logs=logs,
            agent=agent,
            model=model,
            paradigm=paradigm,
            on_progress=progress,
        )
    ui.console.print(
        f"run {s.run}: {s.n_tasks} tasks, {s.n_steps} steps"
        + (f" ({s.n_observe} observe-only tool calls)" if s.n_observe else "")
        + f" from {s.n_files} render files; "
        f"logs: {s.n_pass} PASS, {s.n_fail} FAIL ({s.log_files} log files), {s.n_without_log} tasks without a result"
    )
    ui.print_table("terminations", ["termination", "tasks"], sorted(s.terminations.items()))
    ui.print_problems(s.problems)


def import_gold_cmd(
    ctx: typer.Context,
    file: Annotated[
        Path, typer.Argument(help="Gold file: .xlsx, .csv or .jsonl with Task No., Step No., Text.")
    ],
    name: Annotated[str, typer.Option("--name", help="Gold set name.")],
    author: Annotated[str | None, typer.Option(help="Who owns this gold set.")] = None,
    replace: Annotated[
        bool, typer.Option("--replace", help="Replace a gold set of that name imported from another file.")
    ] = False,
) -> None:
    """Import human gold trajectories (the paper's xlsx, or CSV/JSONL with the same columns)."""
    from core.ingest.gold import import_gold

    with ui.import_store(ctx) as store, ui.progress_bar("importing gold") as progress:
        s = import_gold(store, file, name, author=author, replace=replace, on_progress=progress)
    ui.print_table(
        f"gold set {s.gold_set}",
        ["tasks", "alternatives", "steps", "flagged rows", "tasks with several alternatives"],
        [(s.n_tasks, s.n_alternatives, s.n_steps, s.n_flagged, s.n_tasks_with_alternatives)],
    )
    if s.n_skipped_empty:
        ui.console.print(f"{s.n_skipped_empty} row(s) with an empty Text skipped")
    if s.unchanged_edits:
        ui.console.print(f"edits of {s.unchanged_edits} task(s) kept (later versions than the import)")


def import_jsonl_cmd(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="trajreview JSONL file (docs/formats.md).")],
    run: Annotated[str, typer.Option("--run", help="Run name (a run of that name is replaced).")],
) -> None:
    """Import a trajreview JSONL run (validated against the shipped JSON Schema; all or nothing)."""
    from core.ingest.jsonl import import_jsonl

    with ui.import_store(ctx) as store, ui.progress_bar("importing jsonl") as progress:
        s = import_jsonl(store, file, run, on_progress=progress)
    ui.console.print(
        f"run {s.run}: {s.n_tasks} tasks, {s.n_trajectories} trajectories, {s.n_steps} steps; "
        f"{s.n_rewarded} rewarded, {s.n_success} successes"
    )
    ui.print_table("terminations", ["termination", "tasks"], sorted(s.terminations.items()))
    ui.print_problems(s.problems)


def import_opagent_cmd(
    ctx: typer.Context,
    directory: Annotated[
        Path, typer.Argument(help="OpAgent run folder (with final_results/<task_id>.json).")
    ],
    run: Annotated[str, typer.Option("--run", help="Run name (a run of that name is replaced).")],
    agent: Annotated[str, typer.Option(help="Agent name.")] = "OpAgent",
    model: Annotated[str | None, typer.Option(help="Model name.")] = None,
    paradigm: Annotated[str, ui.PARADIGM_OPTION] = "step_by_step",
) -> None:
    """Import OpAgent's per-task trajectory files as one run; each file's score is the run's verdict, and
    the run is evaluated offline with WebArena's evaluators (in the same final transaction)."""
    from core.cli.offline import print_offline
    from core.ingest.opagent import import_opagent

    with ui.import_store(ctx) as store, ui.progress_bar("importing OpAgent files") as progress:
        s = import_opagent(
            store, directory, run, agent=agent, model=model, paradigm=paradigm, on_progress=progress
        )
    ui.say(
        f"run {s.run}: {s.n_tasks} tasks, {s.n_steps} steps, {s.n_screenshots} screenshots from {s.n_files} files; "
        f"scores: {s.n_success} of {s.n_scored} tasks 1.0"
    )
    ui.print_table("terminations", ["termination", "tasks"], sorted(s.terminations.items()))
    ui.print_problems(s.problems)
    with ui.store_from(ctx, read_only=True) as store:
        print_offline(store, run)


def register(app: typer.Typer, import_app: typer.Typer) -> None:
    """Add this area's commands to the main app and to the `import` group."""
    ui.import_command(import_app, "opagent")(import_opagent_cmd)
    ui.import_command(import_app, "webarena-render")(import_webarena_render_cmd)
    ui.import_command(import_app, "gold")(import_gold_cmd)
    ui.import_command(import_app, "jsonl")(import_jsonl_cmd)
