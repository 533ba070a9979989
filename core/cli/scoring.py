"""CLI commands of the scoring area: `evaluate` and `export eval` (thin wrappers over core.scoring.stored_scores)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Annotated

import typer

from core.cli import ui


def register(app: typer.Typer, import_app: typer.Typer) -> None:
    """Add this area's commands to the main app and to the `import` group."""

    @app.command()
    def evaluate(
        ctx: typer.Context,
        run: Annotated[str, typer.Option("--run", help="Run name to (re-)score.")],
        config: Annotated[
            Path | None,
            typer.Option("--config", help="webarena-verified environment config (default: the run's)."),
        ] = None,
        workers: Annotated[int, typer.Option("--workers", min=1, help="Scoring processes.")] = 2,
    ) -> None:
        """Score a stored run with the official webarena-verified engine and explain every failure."""
        from core.ingest.writer import FAILURE_FIELDS, sort_failures
        from core.scoring.stored_scores import evaluate_run

        # The command's first operation reads the run before any trace is read: the file's only check.
        with ui.import_store(ctx, reads_first=True) as store:
            with ui.progress_bar(f"scoring {run}") as progress:
                scores = evaluate_run(store, run, config=config, workers=workers, on_progress=progress)
            counts = Counter(s.status for s in scores)
            ui.print_table(
                f"{run}: {len(scores)} tasks",
                ["success", "failure", "error", "cannot pass"],
                [(counts["success"], counts["failure"], counts["error"], sum(s.cannot_pass for s in scores))],
            )
            # The run's evaluations are exactly these scores: listed without a read after the commit.
            failures = [s.model_dump(include=FAILURE_FIELDS) for s in scores if s.status != "success"]
            ui.print_failures(store, run, failures=sort_failures(failures))

    export_app = ui.export_group(app)

    @export_app.command("eval")
    def export_eval_cmd(
        ctx: typer.Context,
        out: Annotated[Path, typer.Argument(help="Directory to write eval_result.json files into.")],
        run: Annotated[str, typer.Option("--run", help="Run name.")],
    ) -> None:
        """Write the run's official per-task eval_result.json files and the eval_results.json summary."""
        from core.scoring.stored_scores import export_eval

        with ui.store_from(ctx, read_only=True) as store:
            n = export_eval(store, run, out)
        ui.console.print(f"{out}: {n} task results and eval_results.json")

    @export_app.command("parquet")
    def export_parquet_cmd(
        ctx: typer.Context,
        out: Annotated[Path, typer.Argument(help="New directory to write the Parquet tables into.")],
        runs: Annotated[
            list[str] | None, typer.Option("--run", help="Only these runs (repeat). Default: every run.")
        ] = None,
    ) -> None:
        """Every table as Parquet, run tables partitioned by run (Hive layout): see docs/parquet.md."""
        from core.export.parquet import export_parquet

        with ui.store_from(ctx, read_only=True) as store:
            summary = export_parquet(store, out, runs)
        ui.console.print(
            f"{out}: {len(summary.tables)} tables, {sum(summary.tables.values())} rows,"
            f" {summary.bytes / 1e6:.1f} MB ({len(summary.partitioned)} partitioned by run)",
            markup=False,
        )
