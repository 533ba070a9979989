"""Entry point of the `trajreview` command."""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
import typer.main

from core import __version__
from core.cli import ui
from core.errors import InputError, TrajreviewError

app = typer.Typer(
    help="Review WebArena agent runs: import, score, explain, measure, browse.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,
)
import_app = typer.Typer(help="Import task datasets, agent runs and gold trajectories.", no_args_is_help=True)
app.add_typer(import_app, name="import")


@app.callback()
def _global(
    ctx: typer.Context,
    db: Annotated[
        Path | None,
        typer.Option("--db", envvar="TRAJREVIEW_DB", help="Database file (default data/trajreview.duckdb)."),
    ] = None,
) -> None:
    ctx.obj = {"db": db}


@app.command()
def version() -> None:
    """Print the trajreview version."""
    ui.console.print(__version__)


@app.command()
def init(ctx: typer.Context) -> None:
    """Create the database file (or migrate an older one) and print its schema version."""
    with ui.store_from(ctx) as store:
        ui.console.print(f"{store.path}: schema version {store.schema_version()}")


@app.command()
def info(ctx: typer.Context) -> None:
    """Row counts per table and the schema version."""
    with ui.store_from(ctx, read_only=True) as store:
        ui.console.print(f"database: {store.path}")
        ui.console.print(f"schema version: {store.schema_version()}")
        counts = store.row_counts()
        ui.print_table("tables", ["table", "rows"], sorted(counts.items()))


@ui.import_command(import_app, "tasks")
def import_tasks_cmd(
    ctx: typer.Context,
    path: Annotated[
        Path | None, typer.Argument(help="A task JSON file; default: the packaged dataset.")
    ] = None,
    original: Annotated[
        bool, typer.Option("--original", help="Also load the original WebArena test.raw.json.")
    ] = False,
) -> None:
    """Load the 812 WebArena-Verified tasks (and optionally the original WebArena tasks)."""
    from core.ingest.tasks import import_tasks

    with ui.import_store(ctx) as store:
        counts = import_tasks(store, path, original=original)
    for name, n in counts.items():
        ui.console.print(f"{name}: {n} tasks")


def _streamlit_command(host: str, port: int) -> list[str]:
    from core.paths import REPO_ROOT

    app_path = REPO_ROOT / "dashboard" / "app.py"
    return [
        sys.executable, "-m", "streamlit", "run", str(app_path),
        "--server.address", host, "--server.port", str(port), "--server.headless", "true",
        "--browser.gatherUsageStats", "false",
    ]  # fmt: skip


def _serve(db: Path, host: str, port: int, read_only: bool = False) -> None:
    mode = ", read-only" if read_only else ""
    ui.say(f"trajreview dashboard on http://{host}:{port} (database {db}{mode})")
    env = {**os.environ, "TRAJREVIEW_DB": str(db)}
    # A presenting instance: the app opens the file read-only and shows no write control.
    if read_only:
        env["TRAJREVIEW_READ_ONLY"] = "1"
    else:
        env.pop("TRAJREVIEW_READ_ONLY", None)
    from core.paths import REPO_ROOT

    raise typer.Exit(run_child(_streamlit_command(host, port), env=env, cwd=REPO_ROOT))


# How long a child (the Streamlit server) may take to stop after we forwarded Ctrl-C or SIGTERM.
CHILD_GRACE_S = 2.0


def run_child(cmd: list[str], *, env: dict[str, str], cwd: Path) -> int:
    """Run `cmd` until it exits and return its exit code. Ctrl-C or SIGTERM to us stops it too: it gets
    SIGTERM, and SIGKILL after CHILD_GRACE_S (or at a second signal), so it never outlives the command."""
    proc = subprocess.Popen(cmd, env=env, cwd=cwd)
    try:
        return proc.wait()
    except BaseException:  # KeyboardInterrupt: Ctrl-C, or SIGTERM (see main)
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=CHILD_GRACE_S)
            except (subprocess.TimeoutExpired, KeyboardInterrupt):  # too slow, or asked again
                proc.kill()
                proc.wait()
        raise


@app.command()
def serve(
    ctx: typer.Context,
    host: Annotated[
        str,
        typer.Option(help="Address to listen on (default: this machine only; 0.0.0.0 for every interface)."),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8501,
    read_only: Annotated[
        bool,
        typer.Option(
            "--read-only", help="Presenting instance: open the database read-only, hide every write control."
        ),
    ] = False,
) -> None:
    """Serve the dashboard over the database."""
    from core.paths import default_db_path

    db = ui.db_path(ctx) or default_db_path()
    # Create/migrate before the app opens it; a read-only instance only checks the file opens read-only.
    with ui.store_from(ctx, read_only=read_only):
        pass
    _serve(db, host, port, read_only)


@app.command()
def demo(
    ctx: typer.Context,
    build_only: Annotated[
        bool, typer.Option("--build-only", help="Build the demo database, do not serve.")
    ] = False,
    rebuild: Annotated[bool, typer.Option("--rebuild", help="Rebuild even if the database exists.")] = False,
    source: Annotated[
        str | None,
        typer.Option(
            help="shared: ../shared/data (whole runs); shipped: the demo set in data/demo. "
            "Default: shared where it exists, else shipped."
        ),
    ] = None,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8501,
) -> None:
    """Build a database of real demo data (../shared/data where it exists, else the set shipped in
    data/demo), then serve it."""
    from core.cli.demo import build_diagnosed_demo
    from core.ingest.demo import DEMO_DB

    if source not in (None, "shared", "shipped"):
        raise InputError("--source", f"{source!r} is not one of: shared, shipped")
    db = ui.db_path(ctx) or DEMO_DB
    if rebuild or not db.exists():
        with ui.progress_bar("building demo database") as progress:
            summary = build_diagnosed_demo(db, on_progress=progress, source=source)
        for line in summary:
            ui.console.print(line, markup=False, highlight=False)
    else:
        ui.console.print(
            f"demo database {db} exists; --rebuild builds it again", markup=False, highlight=False
        )
    if not build_only:
        _serve(db, host, port)


def _register_areas() -> None:
    # Each area adds its own commands; keeps this file free of area details.
    from core.cli import (
        agentlab,
        annotations,
        diagnose,
        gold,
        metrics,
        offline,
        review,
        scoring,
        search,
        trajectories,
        wav,
    )

    for area in (
        wav,
        scoring,
        agentlab,
        trajectories,
        metrics,
        offline,
        review,
        annotations,
        gold,
        diagnose,
        search,
    ):
        area.register(app, import_app)


_register_areas()


def _terminated(*_: object) -> None:
    raise KeyboardInterrupt


@functools.cache
def _command() -> Callable[[], object]:
    """The command tree, built once per process: `app()` builds it anew on every call (0.12 s, paid by each
    command a process runs in turn, as the tests' in-process calls do)."""
    return typer.main.get_command(app)


def main() -> None:
    # SIGTERM unwinds like Ctrl-C: a transaction rolls back, worker processes and the Streamlit server
    # are stopped, and the command ends with one line instead of vanishing with its children left behind.
    signal.signal(signal.SIGTERM, _terminated)
    try:
        _command()()
    except TrajreviewError as exc:
        ui.err_console.print(f"error: {exc}", markup=False, highlight=False, soft_wrap=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
