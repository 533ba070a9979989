"""Every contract table as Parquet, for teams whose runs outgrow one file: tables with a `run` column
partitioned by run in the Hive layout (`TABLE/run=NAME/data_0.parquet`), the others written whole
(`TABLE/data_0.parquet`), plus `_manifest.json` (schema version, row counts, which tables are
partitioned). DuckDB reads the directory locally or from object storage; Spark and Trino read the same
files (docs/parquet.md).

The export is written into a sibling temporary directory and renamed into place: a failed export
leaves nothing behind.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson

from core.errors import InputError, NotFound
from core.store import Store


@dataclass(frozen=True)
class ExportSummary:
    out: Path
    tables: dict[str, int]  # rows written per table
    partitioned: tuple[str, ...]
    bytes: int


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def partitioned_tables(store: Store) -> list[str]:
    """Tables that carry a `run` column: these are split by run."""
    return [t for (t,) in store.query(
        "SELECT table_name FROM information_schema.columns WHERE table_catalog = current_database()"
        " AND table_schema = 'main' AND column_name = 'run' ORDER BY table_name"
    )]  # fmt: skip


def export_parquet(store: Store, out: Path, runs: Sequence[str] | None = None) -> ExportSummary:
    """Write every table of `store` under `out` (which must not exist, or be empty). `runs` limits the
    run tables (and `runs` itself) to those runs; the tables without runs are always written whole."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputError(str(out), "exists and is not an empty directory: choose a new one")
    if not out.parent.is_dir():
        raise InputError(str(out), "its parent directory does not exist")
    if runs:
        known = {name for (name,) in store.query("SELECT name FROM runs")}
        missing = [r for r in runs if r not in known]
        if missing:
            raise NotFound("run", ", ".join(missing) if len(missing) > 1 else missing[0])
    only = f"list_contains([{', '.join(_literal(r) for r in runs)}], {{col}})" if runs else "true"
    by_run = set(partitioned_tables(store))
    tmp = out.with_name(f".{out.name}.partial-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    counts: dict[str, int] = {}
    cur = store.cursor()
    try:
        for table in store.tables():
            where = (
                only.format(col="run")
                if table in by_run
                else only.format(col="name")
                if table == "runs"
                else "true"
            )
            select = f'SELECT * FROM "{table}" WHERE {where}'
            counts[table] = cur.execute(f"SELECT count(*) FROM ({select})").fetchone()[0]
            target = tmp / table
            if table in by_run and counts[table]:
                cur.execute(
                    f"COPY ({select}) TO {_literal(str(target))} (FORMAT parquet, PARTITION_BY (run))"
                )
                continue
            # A table without runs, or an empty run table (one zero-row file keeps its schema readable).
            target.mkdir()
            cur.execute(f"COPY ({select}) TO {_literal(str(target / 'data_0.parquet'))} (FORMAT parquet)")
        manifest = {"schema_version": store.schema_version(), "tables": counts,
                    "partitioned_by_run": sorted(by_run), "runs": list(runs) if runs else None}  # fmt: skip
        (tmp / "_manifest.json").write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2))
        if out.exists():
            out.rmdir()
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    return ExportSummary(out, counts, tuple(sorted(by_run)), size)
