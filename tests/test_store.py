"""Schema creation, migration, version guard, transactions, locking."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import duckdb
import pytest

from core import store as store_module
from core.errors import StoreError
from core.store import Store, insert_rows, migrations

CONTRACT_TABLES = {
    "tasks", "runs", "trajectories", "steps", "network_events", "evaluations", "evaluator_results",
    "gold_sets", "gold_steps", "judgments", "metrics", "annotations", "schema_version",
}  # fmt: skip


def test_new_file_gets_every_contract_table(tmp_path):
    with Store(tmp_path / "a.duckdb") as s:
        assert set(s.tables()) >= CONTRACT_TABLES
        assert s.schema_version() == len(migrations())
        versions = s.query("SELECT version, name FROM schema_version ORDER BY version")
        assert [v for v, _ in versions] == list(range(1, len(migrations()) + 1))


def test_runs_paradigm_is_constrained(store):
    with pytest.raises(duckdb.ConstraintException), store.transaction() as cur:
        cur.execute(
            "INSERT INTO runs (name, paradigm, source_format, source_path, imported_at) "
            "VALUES ('r', 'telepathy', 'jsonl', 'x', now())"
        )


def test_older_file_is_migrated(tmp_path, monkeypatch):
    path = tmp_path / "old.duckdb"
    shipped = migrations()
    monkeypatch.setattr(store_module, "migrations", lambda: shipped[:1])
    with Store(path) as s:
        assert s.schema_version() == 1
    # The code now ships every migration plus one more than the file has.
    extra = (len(shipped) + 1, "test_extra", "CREATE TABLE test_extra (x INTEGER);")
    monkeypatch.setattr(store_module, "migrations", lambda: [*shipped, extra])
    with Store(path) as s:
        assert s.schema_version() == extra[0]
        assert CONTRACT_TABLES | {"test_extra"} <= set(s.tables())


def test_newer_file_is_refused(tmp_path):
    path = tmp_path / "new.duckdb"
    with Store(path) as s, s.transaction() as cur:
        cur.execute("INSERT INTO schema_version VALUES (999, 'future', now())")
    with pytest.raises(StoreError, match="newer than this trajreview supports"):
        Store(path)


def test_read_only_open_of_missing_file_is_one_line_error(tmp_path):
    with pytest.raises(StoreError, match="no such database"):
        Store(tmp_path / "missing.duckdb", read_only=True)


def test_not_a_database_is_one_line_error(tmp_path):
    path = tmp_path / "junk.duckdb"
    path.write_bytes(b"this is not duckdb" * 100)
    with pytest.raises(StoreError) as info:
        Store(path)
    assert "\n" not in str(info.value)


def test_transaction_rolls_back_whole(store):
    with pytest.raises(RuntimeError), store.transaction() as cur:
        insert_rows(
            cur, "import_problems", [{"run": "r", "kind": "k", "message": "m", "recorded_at": "2026-01-01"}]
        )
        raise RuntimeError("boom")
    assert store.query("SELECT count(*) FROM import_problems")[0][0] == 0


def test_insert_rows_matches_columns_by_name(store):
    with store.transaction() as cur:
        n = insert_rows(
            cur,
            "import_problems",
            [
                {"message": "m1", "kind": "k", "run": "r", "recorded_at": "2026-01-01", "task_id": 3},
                {"message": "m2", "kind": "k", "run": "r", "recorded_at": "2026-01-01", "task_id": None},
            ],
        )
    assert n == 2
    assert store.query("SELECT task_id, message FROM import_problems ORDER BY message") == [
        (3, "m1"),
        (None, "m2"),
    ]


@pytest.mark.slow
@pytest.mark.parametrize("hosted", [False, True], ids=["own connection", "attached to a host"])
def test_second_process_gets_clear_lock_error(tmp_path, hosted):
    from core.store_host import StoreHost

    host = StoreHost() if hosted else None
    path = tmp_path / "locked.duckdb"
    Store(path).close()
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys, time, duckdb
            con = duckdb.connect({str(path)!r})
            print("ready", flush=True)
            sys.stdin.read()
        """)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(StoreError, match="in use by another process") as info:
            Store(path, read_only=True, lock_timeout_s=0.3, host=host)
        assert "\n" not in str(info.value)
        assert host is None or host.attached() == []  # the failed tries left nothing attached
    finally:
        holder.stdin.close()
        holder.wait(timeout=10)
    # Once released, the file opens again.
    with Store(path, read_only=True, host=host) as s:
        assert s.schema_version() == len(migrations())


def test_threads_share_one_store_without_losing_writes(store):
    from concurrent.futures import ThreadPoolExecutor

    def write(thread: int) -> None:
        for i in range(25):
            with store.transaction() as cur:
                insert_rows(
                    cur,
                    "import_problems",
                    [
                        {
                            "run": f"t{thread}",
                            "task_id": i,
                            "kind": "k",
                            "message": "m",
                            "recorded_at": "2026-01-01",
                        }
                    ],
                )
            # Reads from other threads run on their own cursors meanwhile.
            store.query("SELECT count(*) FROM import_problems")

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(write, range(4)))
    assert store.query("SELECT run, count(*) FROM import_problems GROUP BY run ORDER BY run") == [
        (f"t{t}", 25) for t in range(4)
    ]


def test_a_failed_insert_shows_its_cause_not_the_cleanup_error(store: Store):
    """A value the database cannot hold aborts the transaction; the cleanup after it (unregistering
    the Arrow view, ROLLBACK) must not replace the cause with "Current transaction is aborted"."""
    row = {"run": "r", "task_id": 99_999_999_999, "kind": "k", "message": "m", "source_path": "p"}
    with pytest.raises(duckdb.ConversionException, match="out of range"), store.transaction() as cur:
        insert_rows(cur, "import_problems", [row])
    assert store.query("SELECT count(*) FROM import_problems") == [(0,)]


def test_a_checkpointed_commit_writes_the_rows_into_the_file_not_the_log(store: Store):
    """`transaction(checkpoint=True)` (an import's) commits into the file: nothing is left in the
    write-ahead log to be copied when the file closes; a plain commit leaves its rows there. The
    threshold is the instance's setting: the same after, also when the transaction failed."""
    wal = store.path.with_name(store.path.name + ".wal")

    def logged() -> int:
        return wal.stat().st_size if wal.exists() else 0

    def threshold() -> str:
        return store.query("SELECT current_setting('checkpoint_threshold')")[0][0]

    rows = [
        {
            "run": "r",
            "task_id": n,
            "kind": "k",
            "message": "m" * 50,
            "source_path": "p",
            "recorded_at": "2026-01-01",
        }
        for n in range(20_000)
    ]
    before = threshold()
    with store.transaction() as cur:
        insert_rows(cur, "import_problems", rows)
    assert logged() > 1_000_000  # a plain commit: the rows wait in the log
    with store.transaction(checkpoint=True) as cur:
        insert_rows(cur, "import_problems", [{**r, "run": "s"} for r in rows])
    assert logged() == 0 and threshold() == before
    assert store.query("SELECT count(*) FROM import_problems") == [(40_000,)]
    bad = {"run": "r", "task_id": 99_999_999_999, "kind": "k", "message": "m", "source_path": "p"}
    with pytest.raises(duckdb.ConversionException), store.transaction(checkpoint=True) as cur:
        insert_rows(cur, "import_problems", [bad])
    assert threshold() == before


def test_one_thread_is_one_thread_inside_and_the_setting_as_before_after(store: Store):
    """The network events' insert runs on one DuckDB thread; the connection gets its own setting back,
    also when the insert inside fails (a plain `Store` serves the app's later queries)."""
    from core.store import one_thread

    def threads() -> int:
        return int(store.query("SELECT current_setting('threads')")[0][0])

    before = threads()
    with store.transaction() as cur, one_thread(cur):
        assert int(cur.execute("SELECT current_setting('threads')").fetchone()[0]) == 1
    assert threads() == before
    row = {"run": "r", "task_id": 99_999_999_999, "kind": "k", "message": "m", "source_path": "p"}
    with pytest.raises(duckdb.ConversionException), store.transaction() as cur, one_thread(cur):
        insert_rows(cur, "import_problems", [row])
    assert threads() == before
