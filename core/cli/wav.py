"""CLI commands of the wav area: `import wav-run PATH --run NAME`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from core.cli import ui

_SHOWN_PROBLEMS = 20


def import_wav_run_cmd(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="Run directory (<task_id>/...) or submission .tar.gz.")],
    run: Annotated[str, typer.Option("--run", help="Run name; importing a name again replaces that run.")],
    config: Annotated[
        Path | None,
        typer.Option("--config", help="webarena-verified config (environments); default run_config.json."),
    ] = None,
    agent: Annotated[str | None, typer.Option(help="Agent name.")] = None,
    model: Annotated[str | None, typer.Option(help="Model name.")] = None,
    paradigm: Annotated[str, ui.PARADIGM_OPTION] = "unknown",
    no_score: Annotated[bool, typer.Option("--no-score", help="Import without scoring.")] = False,
    workers: Annotated[int, typer.Option(help="Processes scoring tasks.")] = 2,
) -> None:
    """Import a WebArena-Verified run (agent responses + network traces) and score it officially."""
    from core.files.parallel import SCORING_MODULES, arrow_without_pandas, start_fork_server

    if workers > 1:  # the workers' imports (the engine) start now, alongside this process's own
        start_fork_server(SCORING_MODULES)
    arrow_without_pandas()  # nothing in this command needs pandas: pyarrow need not import it
    from core.ingest.wav_run import import_wav_run

    # The import's first operation reads the task ids before any task is read: the file's only check.
    with ui.import_store(ctx, reads_first=True) as store:
        with ui.progress_bar("reading and scoring tasks") as progress:
            summary = import_wav_run(
                store, path, run, config=config, agent=agent, model=model, paradigm=paradigm,  # type: ignore[arg-type]
                score=not no_score, workers=workers, on_progress=progress,
            )  # fmt: skip
        _print_summary(summary)
        ui.print_failures(store, summary.run, failures=summary.failures)


def _print_summary(summary) -> None:
    statuses = ", ".join(f"{k} {v}" for k, v in sorted(summary.statuses.items())) or "not scored"
    ui.console.print(
        f"run {summary.run}: {summary.n_tasks} tasks, {summary.n_events} network events, "
        f"{summary.n_scored} scored ({statuses}); {len(summary.problems)} problems",
        markup=False,
        highlight=False,
    )
    for problem in summary.problems[:_SHOWN_PROBLEMS]:
        ui.console.print(f"  problem [{problem.kind}]: {problem.message}", markup=False, highlight=False)
    if len(summary.problems) > _SHOWN_PROBLEMS:
        ui.console.print(f"  ... and {len(summary.problems) - _SHOWN_PROBLEMS} more (table import_problems)")


def register(app: typer.Typer, import_app: typer.Typer) -> None:
    """Add this area's commands to the main app and to the `import` group."""
    ui.import_command(import_app, "wav-run")(import_wav_run_cmd)
