"""`trajreview export parquet`: every table comes back from the Parquet directory, through DuckDB's
read_parquet(..., hive_partitioning = true), with exactly the database's rows."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from core.cli.main import app
from core.store import Store


def _rows(con, sql: str) -> list[tuple]:
    return sorted(con.execute(sql).fetchall(), key=repr)


@pytest.fixture(scope="module")
def exported(demo_db, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("parquet") / "export"
    result = CliRunner().invoke(app, ["--db", str(demo_db), "export", "parquet", str(out)])
    assert result.exit_code == 0, result.output
    return out


def test_every_table_round_trips(demo_db, exported: Path):
    with Store(demo_db, read_only=True) as store:
        tables = store.tables()
        partitioned = {t for (t,) in store.query(
            "SELECT table_name FROM information_schema.columns WHERE column_name = 'run'")}  # fmt: skip
        con = store.cursor()
        for table in tables:
            columns = [c for (c,) in con.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = ? ORDER BY ordinal_position",
                [table]).fetchall()]  # fmt: skip
            cols = ", ".join(f'"{c}"' for c in columns)
            parquet = f"read_parquet('{exported / table}/**/*.parquet', hive_partitioning = true)"
            assert _rows(con, f"SELECT {cols} FROM {parquet}") == _rows(
                con, f'SELECT {cols} FROM "{table}"'
            ), table
        # Run tables are split by run in the Hive layout.
        runs = {name for (name,) in store.query("SELECT name FROM runs")}
        steps = {p.name for p in (exported / "steps").iterdir()}
        assert steps == {
            f"run={r}" for r in runs if store.query("SELECT 1 FROM steps WHERE run = ? LIMIT 1", [r])
        }
        assert "metrics" in partitioned and (exported / "tasks" / "data_0.parquet").exists()


def test_one_run_and_bad_targets(demo_db, tmp_path: Path, exported: Path):
    out = tmp_path / "one"
    result = CliRunner().invoke(
        app, ["--db", str(demo_db), "export", "parquet", str(out), "--run", "opagent"]
    )
    assert result.exit_code == 0, result.output
    con = duckdb.connect()
    runs = con.execute(
        f"SELECT DISTINCT run FROM read_parquet('{out}/trajectories/**/*.parquet', hive_partitioning = true)"
    ).fetchall()
    assert runs == [("opagent",)]
    assert con.execute(f"SELECT count(*) FROM read_parquet('{out}/tasks/*.parquet')").fetchone()[0] == 812
    # An existing export is never overwritten; a missing run is one line, nothing written.
    result = CliRunner().invoke(app, ["--db", str(demo_db), "export", "parquet", str(exported)])
    assert result.exit_code != 0 and "not an empty directory" in str(result.exception)
    bad = tmp_path / "bad"
    result = CliRunner().invoke(app, ["--db", str(demo_db), "export", "parquet", str(bad), "--run", "nope"])
    assert "no run named 'nope'" in str(result.exception) and not bad.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
