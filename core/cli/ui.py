"""Terminal helpers shared by CLI modules: the store from --db, rich progress, tables."""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

import typer

from core.errors import InputError
from core.ingest.commands import IMPORT_COMMANDS
from core.ingest.paradigm import Paradigm
from core.progress import ProgressCallback

if TYPE_CHECKING:  # DuckDB and Arrow load when a command opens the store, not for --help
    from rich.console import Console

    from core.store import ShortLivedStore, Store


class EscapingStream:
    """sys.stdout or sys.stderr as it is at each write (a test's capture, a pipe), writing text the stream
    cannot encode (an agent's lone surrogate, non-ASCII under LANG=C) as backslash escapes. Rich keeps a
    print in its buffer until the write succeeds, so one unencodable string would otherwise make every
    later print of the same console raise again."""

    def __init__(self, stderr: bool) -> None:
        self._stderr = stderr

    def _stream(self) -> Any:
        stream = sys.stderr if self._stderr else sys.stdout
        # While a progress bar shows, rich swaps in a proxy that prints through this console: unwrapped as
        # rich unwraps it, or a write would come back here.
        return getattr(stream, "rich_proxied_file", stream)

    def write(self, text: str) -> int:
        stream = self._stream()
        try:
            return stream.write(text)
        except UnicodeEncodeError:  # a text stream encodes the whole string before writing any of it
            encoding = getattr(stream, "encoding", None) or "utf-8"
            return stream.write(text.encode(encoding, "backslashreplace").decode(encoding))

    def __getattr__(self, name: str) -> Any:
        if name == "rich_proxied_file":  # rich would unwrap this wrapper and write past it
            raise AttributeError(name)
        return getattr(self._stream(), name)


# Piped output (files, CI logs) gets a wide fixed width so tables are not squeezed to 80 columns.
# Run names, gold-set names, file names and agent text are data: with markup off for every print, a
# name like `[/bad]` prints as itself instead of raising MarkupError after an import has committed.
@functools.cache
def _console(stderr: bool) -> Console:
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    return Console(
        file=EscapingStream(stderr), soft_wrap=True, width=None if stream.isatty() else 200, markup=False,
        highlight=False,
    )  # fmt: skip


def __getattr__(name: str) -> Any:
    """`console` and `err_console` are built on first use (PEP 562): rich's console costs a good part of
    the half second `trajreview --help` may take, and --help prints through typer, not through them."""
    if name in ("console", "err_console"):
        return _console(stderr=name == "err_console")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


PARADIGMS: tuple[str, ...] = get_args(Paradigm)


def _check_paradigm(value: str) -> str:
    if value not in PARADIGMS:
        raise InputError("--paradigm", f"{value!r} is not one of {', '.join(PARADIGMS)}")
    return value


# The --paradigm option of every import command: one list (core.ingest.paradigm.Paradigm), one check.
PARADIGM_OPTION = typer.Option(
    "--paradigm", help="Agent paradigm: " + ", ".join(PARADIGMS) + ".", callback=_check_paradigm
)


def import_command(import_app: typer.Typer, name: str, **options: Any) -> Any:
    """The decorator that adds command `name` of core.ingest.commands.IMPORT_COMMANDS to the `import` group,
    listed with that list's description (the one the empty Runs page shows); a name not in the list raises."""
    return import_app.command(name, short_help=IMPORT_COMMANDS[name], **options)


def db_path(ctx: typer.Context) -> Path | None:
    return (ctx.obj or {}).get("db")


def store_from(ctx: typer.Context, *, read_only: bool = False) -> Store:
    from core.store import open_store

    return open_store(db_path(ctx), read_only=read_only)


def import_store(ctx: typer.Context, *, reads_first: bool = False) -> ShortLivedStore:
    """The store of every command that writes for longer than an instant (imports, `evaluate`,
    `evaluate-offline`, `metrics`, `judge-agreement`): the file is held only for each short read and the
    final transaction, so the app can save while a whole run imports (core.store.ShortLivedStore).

    The file is created and migrated up front, so a bad file fails in one line before any parsing; with
    `reads_first`, by the command's own first operation instead: a read that comes before any parsing
    (`import wav-run` reads the task ids, `evaluate` the run), which opens the file as every open does
    (creating and migrating it, or failing in one line), so the command needs no open of its own."""
    from core.paths import default_db_path
    from core.store import ShortLivedStore, open_store

    path = db_path(ctx) or default_db_path()
    if not reads_first:
        with open_store(path):
            pass
    return ShortLivedStore(path)


@contextmanager
def progress_bar(description: str) -> Iterator[ProgressCallback]:
    """A rich progress bar driven by a `(done, total)` callback that core functions accept."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("{task.description}", markup=False, style="bold"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=_console(stderr=True),
        transient=False,
        disable=not _console(stderr=True).is_terminal,
    ) as progress:
        task = progress.add_task(description, total=None)

        def update(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        yield update


def say(text: str) -> None:
    """One line of output that may hold agent or file text: printed as text, never as Rich markup."""
    _console(stderr=False).print(text, markup=False, highlight=False)


def print_problems(problems: list) -> None:
    """The per-task problems an import recorded: how many, and the first ten (as text, never markup)."""
    if problems:
        _console(stderr=False).print(f"{len(problems)} problem(s) recorded (see import_problems):")
        for p in problems[:10]:
            _console(stderr=False).print(f"  {p.kind}: {p.message}", markup=False, highlight=False)
        if len(problems) > 10:
            _console(stderr=False).print(f"  … and {len(problems) - 10} more")


def print_table(title: str, columns: list[str], rows: list[tuple]) -> None:
    # Cells and titles may hold run names or agent text: Text objects are never parsed as markup.
    from rich.table import Table
    from rich.text import Text

    table = Table(title=Text(title), title_justify="left")
    for column in columns:
        table.add_column(Text(column))
    for row in rows:
        table.add_row(*(Text("" if v is None else str(v)) for v in row))
    _console(stderr=False).print(table)


def print_failures(store, run: str, limit: int = 15, *, failures: list[dict] | None = None) -> None:
    """The run's failing tasks, one plain sentence each (agent text is printed as text, never markup).
    `failures`: the import's own list (core.ingest.writer.sort_failures), which saves a read of the file
    after the import (a `ShortLivedStore` would first wait its turn, `TURN_S`)."""
    if failures is None:
        from core.queries.overview import failed_tasks

        failures = failed_tasks(store, run)
    if not failures:
        return
    _console(stderr=False).print(f"why tasks failed ({len(failures)}):", markup=False)
    for row in failures[:limit]:
        flag = " [cannot pass under this engine version]" if row["cannot_pass"] else ""
        reason = row["explanation"] or row["error"] or "(no explanation recorded)"
        _console(stderr=False).print(
            f"  task {row['task_id']} {row['status']}{flag}: {reason}", markup=False, highlight=False
        )
    if len(failures) > limit:
        _console(stderr=False).print(
            f"  ... and {len(failures) - limit} more (table evaluations, column explanation)", markup=False
        )


def export_group(app: typer.Typer) -> typer.Typer:
    """The shared `export` group: reuse it if another area registered it first."""
    for group in app.registered_groups:
        if group.name == "export" and group.typer_instance is not None:
            return group.typer_instance
    export_app = typer.Typer(help="Export results in other tools' formats.", no_args_is_help=True)
    app.add_typer(export_app, name="export")
    return export_app
