"""CLI commands of the agentlab area: `import agentlab DIR --run NAME` (alias `import browsergym`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from core.cli import ui

_SHOWN_PROBLEMS = 10


def import_agentlab_cmd(
    ctx: typer.Context,
    directory: Annotated[Path, typer.Argument(help="Folder of episode directories (or one episode).")],
    run: Annotated[str, typer.Option("--run", help="Run name; importing a name again replaces that run.")],
    agent: Annotated[str | None, typer.Option(help="Agent name (default: from exp_args.pkl).")] = None,
    model: Annotated[str | None, typer.Option(help="Model name (default: from the step files).")] = None,
    paradigm: Annotated[str, ui.PARADIGM_OPTION] = "step_by_step",
    workers: Annotated[
        int | None, typer.Option(help="Processes reading episodes (default: 2 when the data is large).")
    ] = None,
) -> None:
    """Import BrowserGym / AgentLab experiment directories (pickles are read without running them)."""
    from core.errors import InputError
    from core.ingest.agentlab import import_agentlab
    from core.queries.runs import several_attempts

    if not run.strip():
        raise InputError("--run", "must not be empty")
    with ui.import_store(ctx) as store:
        with ui.progress_bar("reading episodes") as progress:
            summary = import_agentlab(
                store, directory, run, agent=agent, model=model, paradigm=paradigm, workers=workers,
                on_progress=progress,
            )  # fmt: skip
        repeated = several_attempts(store, summary.run)
    endings = ", ".join(f"{k} {v}" for k, v in sorted(summary.terminations.items()))
    ui.console.print(
        f"run {summary.run}: {summary.n_episodes} episodes, {summary.n_tasks} tasks, {summary.n_steps} steps"
        f" ({endings}); {summary.n_problems} problems"
    )
    if repeated:
        examples = "; ".join(f"task {r['task_id']}: {r['answer']}" for r in repeated[:3])
        ui.console.print(
            f"{len(repeated)} tasks have several attempts; each task's answer is its latest complete"
            f" attempt ({examples})",
            markup=False, highlight=False,
        )  # fmt: skip
    for problem in summary.problems[:_SHOWN_PROBLEMS]:
        ui.console.print(f"  problem: {problem.message}", markup=False, highlight=False)
    if summary.n_problems > _SHOWN_PROBLEMS:
        ui.console.print(f"  ... and {summary.n_problems - _SHOWN_PROBLEMS} more (table import_problems)")


def register(app: typer.Typer, import_app: typer.Typer) -> None:
    """Add this area's commands to the main app and to the `import` group."""
    ui.import_command(import_app, "agentlab")(import_agentlab_cmd)
    ui.import_command(import_app, "browsergym", help="Alias of `import agentlab`.")(import_agentlab_cmd)
