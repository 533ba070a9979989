"""The `trajreview` command changed back to how long commands held the database before: `python -m
tests.hold_file ARGS...` runs it with `ui.import_store` returning a `Store` opened once and held until the
command ends. tests/test_lock_hold.py runs it to show that its probe tells the two apart."""

from __future__ import annotations

from core.cli import ui
from core.cli.start import main
from core.store import open_store


def held_store(ctx, **_options):
    return open_store(ui.db_path(ctx))


if __name__ == "__main__":
    ui.import_store = held_store
    main()
