"""The app's DuckDB instance (core.store_host): a file attached to it is held no longer than with a
connection of its own, its writes land as they did, and every Store of the file shares one attachment."""

from __future__ import annotations

import subprocess
import sys

import pytest

from core.errors import StoreError
from core.store import Store
from core.store_host import StoreHost


def _writable_elsewhere(path) -> bool:
    """Another process can open the file read-write (DuckDB's lock is free)."""
    code = "import sys, duckdb; duckdb.connect(sys.argv[1]).close()"
    return subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True).returncode == 0


def test_the_file_is_free_for_another_process_once_the_last_store_closes(tmp_path):
    path = tmp_path / "a.duckdb"
    Store(path).close()
    host = StoreHost()
    first = Store(path, host=host)
    second = Store(path, host=host)  # a second page run of the same server, at the same time
    assert host.attached() == [str(path.resolve())]
    first.close()
    assert host.attached() and not _writable_elsewhere(path)  # still in use by the second
    second.close()
    assert host.attached() == []
    assert _writable_elsewhere(path)


def test_a_write_through_the_host_lands_in_the_file_and_is_checkpointed(tmp_path):
    path = tmp_path / "a.duckdb"
    Store(path).close()
    host = StoreHost()
    with Store(path, host=host) as store, store.transaction() as cur:
        cur.execute(
            "INSERT INTO import_problems (run, kind, message, recorded_at) VALUES ('r', 'k', 'm', now())"
        )
    assert not path.with_name(path.name + ".wal").exists()  # detached: checkpointed, as a close does
    with Store(path, read_only=True) as plain:
        assert plain.query("SELECT run, message FROM import_problems") == [("r", "m")]


def test_reads_name_no_database_and_see_only_their_file(tmp_path):
    """Two files attached at once: each Store's queries, its tables and its schema version are its own."""
    host = StoreHost()
    a, b = tmp_path / "a.duckdb", tmp_path / "b.duckdb"
    Store(a).close()
    with Store(b) as plain, plain.transaction() as cur:
        cur.execute("CREATE TABLE only_in_b (x INTEGER)")
    with Store(a, host=host) as sa, Store(b, host=host) as sb:
        assert "only_in_b" in sb.tables() and "only_in_b" not in sa.tables()
        assert sa.schema_version() == sb.schema_version() > 0
        assert sb.query("SELECT count(*) FROM only_in_b") == [(0,)]
        with pytest.raises(Exception, match="only_in_b"):
            sa.query("SELECT count(*) FROM only_in_b")


def test_a_file_this_process_has_open_outside_the_host_is_joined_not_refused(tmp_path):
    """DuckDB attaches a file once per process: a Store of the file opened without the host (a test, a
    command run in-process) is joined, as two connections of one process always were."""
    path = tmp_path / "a.duckdb"
    host = StoreHost()
    with Store(path) as outside, Store(path, host=host) as inside:
        with inside.transaction() as cur:
            cur.execute(
                "INSERT INTO import_problems (run, kind, message, recorded_at) VALUES ('r', 'k', 'm', now())"
            )
        assert outside.query("SELECT count(*) FROM import_problems") == [(1,)]
        assert host.attached() == []


def test_a_file_attached_read_only_is_not_written_through_another_store(tmp_path):
    path = tmp_path / "a.duckdb"
    Store(path).close()
    host = StoreHost()
    with Store(path, read_only=True, host=host), pytest.raises(StoreError, match="read-only in this process"):
        Store(path, host=host)
    assert host.attached() == []


def test_a_page_run_leaves_nothing_attached(demo_db, open_page):
    """The app's page runs attach the file through the server's host and detach it when they end."""
    from dashboard.db import store_host

    open_page(demo_db, "views/runs.py")
    open_page(demo_db, "views/task.py", run="webarena-render-babelcloud", task="721")
    assert store_host().attached() == []
    assert _writable_elsewhere(demo_db)
