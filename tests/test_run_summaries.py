"""Each run's `run_summaries` row is kept by the writers that change what it counts (core.measure.run_summaries):
after an import, official scores and metrics, the run's row equals its counts computed from the tables; a
file stored before migration 8 gets every run's row from the migration; the Runs table reads them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from core.ingest.opagent import import_opagent
from core.measure.judge.cascade import make_judge
from core.measure.metrics_run import run_metrics
from core.measure.run_summaries import SUMMARY_COLUMNS, summary_sql
from core.queries.runs import runs_table, verdicts_sql
from core.scoring.stored_scores import evaluate_run
from core.store import Store

STALE = "stale"  # the metric sets the test writes into every row first: a writer that does not refresh
# leaves it (with a thousand tasks more)


def _stored(store: Store, run: str) -> dict:
    rows = store.query_dicts("SELECT * FROM run_summaries WHERE run = ?", [run])
    assert len(rows) <= 1, rows
    return rows[0] if rows else {}


def _computed(store: Store, run: str) -> dict:
    return store.query_dicts(summary_sql(), {"run": run})[0]


@pytest.fixture
def demo(demo_db: Path, tmp_path: Path):
    db = tmp_path / "demo.duckdb"
    shutil.copy(demo_db, db)
    with Store(db) as store:
        with store.transaction() as cur:
            cur.execute("UPDATE run_summaries SET tasks = tasks + 1000, metrics = ?", [STALE])
        yield store


def test_every_writer_refreshes_the_runs_row(demo, shipped_data):
    opagent = shipped_data / "oagent-run"
    import_opagent(demo, opagent, "again")  # a new run: the import writes its row
    import_opagent(demo, opagent, "opagent")  # the run replaced: its row anew
    evaluate_run(demo, "wav-demo", workers=1)  # official scores, the same as before: still rewritten
    judge = make_judge("offline", demo, use_embeddings=False)
    task = demo.query("SELECT min(task_id) FROM metrics WHERE run = 'webarena-render-babelcloud'")[0][0]
    run_metrics(demo, "webarena-render-babelcloud", "demo-gold", judge, task_ids=[task])
    for run in ("again", "opagent", "wav-demo", "webarena-render-babelcloud"):
        assert _stored(demo, run) == _computed(demo, run), run
    assert _stored(demo, "again")["tasks"] > 0 and _stored(demo, "opagent")["metrics"] is None  # replaced
    # The one run no writer touched keeps what the test wrote: the comparison above can fail.
    assert _stored(demo, "wav-navigation")["metrics"] == STALE


def test_the_counts_are_the_verdicts_counted(demo_db):
    with Store(demo_db, read_only=True) as store:
        verdicts = store.query_df(verdicts_sql(one_run=False))
        for run, row in store.query_df("SELECT * FROM run_summaries").set_index("run").iterrows():
            mine = verdicts[verdicts["run"] == run]["verdict"]
            assert row["tasks"] == len(mine) and row["successes"] == (mine == "success").sum()
            assert row["scored"] == mine.isin(["success", "failure", "error"]).sum()
            assert (row["failures"], row["errors"]) == ((mine == "failure").sum(), (mine == "error").sum())


def test_a_file_stored_before_migration_8_gets_every_runs_row(demo_db, tmp_path):
    db = tmp_path / "old.duckdb"
    shutil.copy(demo_db, db)
    with Store(db) as store, store.transaction() as cur:  # the file as version 7 left it
        cur.execute("DROP TABLE run_summaries")
        cur.execute("DELETE FROM schema_version WHERE version >= 8")
    with Store(db) as store:  # opened read-write: migrated
        assert store.schema_version() >= 8
        stored = store.query_df("SELECT * FROM run_summaries ORDER BY run")
        computed = store.query_df(f"SELECT * FROM ({summary_sql(one_run=False)}) ORDER BY run")
        assert len(stored) == store.query("SELECT count(*) FROM runs")[0][0] > 0
        pd.testing.assert_frame_equal(stored, computed)


def test_the_runs_table_reads_the_summaries(demo):
    """Runs shows what the row says (here, what the test wrote), not a count of its own."""
    table = runs_table(demo).set_index("run")
    assert (table["tasks"] > 1000).all() and (table["metrics"] == STALE).all()
    assert list(SUMMARY_COLUMNS) == [
        c for c in demo.query_df("SELECT * FROM run_summaries").columns if c != "run"
    ]
