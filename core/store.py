"""The one DuckDB file: opening, numbered migrations, transactions, bulk inserts.

Concurrency model (see docs/schema.md, "Concurrency"):
- one `Store` (one DuckDB connection) per process; every query takes a fresh cursor, because a
  cursor or a result must never be shared across threads (Streamlit runs each session in a thread);
- writes are serialized by a process-wide lock and run inside one transaction, so an import lands
  whole or leaves the file as it was;
- DuckDB locks a file opened read-write against every other process; opening retries for a while
  and then fails with a one-line message naming the process that holds the lock;
- a long CLI command (an import, `evaluate`, `metrics`, ...) uses `ShortLivedStore`: it parses and
  computes with the file closed and opens it only for each short read and for its one final write
  transaction, so the app's saves wait for that transaction only.
"""

from __future__ import annotations

import functools
import math
import random
import re
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa

from core.errors import NotFound, StoreError

if TYPE_CHECKING:
    from core.store_host import StoreHost

# The longest a process waiting for the file sleeps between two tries to open it. Every command leaves
# the file free between two operations for a turn longer than this plus a try (ShortLivedStore.TURN_S),
# and a small import pays that turn, so it is kept short; but a failed try costs 10-30 ms (DuckDB sets up
# the database before it meets the lock), so a waiter polling much faster would burn a core.
POLL_MAX_S = 0.1
# A process waiting for the file says so by touching `<db>.waiting` at each failed try (and removes it once
# in): a command gives a turn between two operations only while a try is that recent, so a command alone
# with the file (every test, most imports) never sleeps for one. Two polls and a failed try, with margin.
WAITER_FRESH_S = 3 * POLL_MAX_S
_MIGRATION_NAME = re.compile(r"^(\d{3})_([a-z0-9_]+)\.sql$")
_LOCK_HINT = re.compile(r"PID (\d+)")


def migrations() -> list[tuple[int, str, str]]:
    """All migrations shipped with this version, as (number, name, sql), in order."""
    found = []
    for entry in resources.files("core.migrations").iterdir():
        match = _MIGRATION_NAME.match(entry.name)
        if match:
            found.append((int(match.group(1)), match.group(2), entry.read_text(encoding="utf-8")))
    found.sort()
    numbers = [number for number, _, _ in found]
    if numbers != list(range(1, len(numbers) + 1)):
        raise StoreError(f"migrations are not numbered 1..n without gaps: {numbers}")
    return found


def waiting_marker(path: Path) -> Path:
    """The file a process waiting for `path` touches at each failed try (`Store`), removed once it is in."""
    return path.with_name(path.name + ".waiting")


def someone_waits(path: Path) -> bool:
    """Another process tried to open `path` within WAITER_FRESH_S (the marker's time is the file system's)."""
    try:
        return time.time() - waiting_marker(path).stat().st_mtime < WAITER_FRESH_S
    except OSError:  # no marker: nobody waits
        return False


def utcnow() -> datetime:
    """Naive UTC timestamp, the form every TIMESTAMP column stores."""
    return datetime.now(UTC).replace(tzinfo=None)


class Store:
    """One DuckDB database file with the trajreview schema."""

    def __init__(
        self, path: str | Path, *, read_only: bool = False, lock_timeout_s: float = 10.0,
        host: StoreHost | None = None,
    ):  # fmt: skip
        """Open `path` with a DuckDB connection of its own or, given a `host` (the app's), attached to the
        host's running instance: ~5 ms instead of ~30 (core.store_host)."""
        self.path = Path(path)
        self.read_only = read_only
        self._write_lock = threading.RLock()
        self._host: StoreHost | None = None
        self._catalog: str | None = None  # the host's name for the file, which every cursor USEs
        if read_only and not self.path.exists():
            raise StoreError(f"{self.path}: no such database (create it with `trajreview init`)")
        if not read_only:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._con = self._connect(lock_timeout_s, host)
        try:
            self._migrate()
        except BaseException:
            self.close()
            raise

    # -- connection ------------------------------------------------------------------------------
    def _open_once(self, host: StoreHost | None) -> duckdb.DuckDBPyConnection:
        if host is not None:
            try:
                self._catalog = host.attach(self.path, self.read_only)
            except duckdb.ResourceInUseException:
                # This process has the file open outside the host (a test holding a Store while a page
                # runs): DuckDB attaches a file once per process, so join that connection's instance.
                pass
            else:
                self._host = host
                return host.connection
        return duckdb.connect(str(self.path), read_only=self.read_only)

    def _connect(self, lock_timeout_s: float, host: StoreHost | None) -> duckdb.DuckDBPyConnection:
        deadline = time.monotonic() + lock_timeout_s
        delay = 0.05
        waited = False
        while True:
            try:
                con = self._open_once(host)
            except duckdb.IOException as exc:
                message = str(exc)
                if "lock" not in message.lower():
                    raise StoreError(f"{self.path}: cannot open database: {message.splitlines()[0]}") from exc
                if time.monotonic() >= deadline:
                    pid = _LOCK_HINT.search(message)
                    holder = f" (held by PID {pid.group(1)})" if pid else ""
                    raise StoreError(
                        f"{self.path}: database is in use by another process{holder}; stop it or try again"
                    ) from exc
                with suppress(OSError):  # a folder this process cannot write: it waits without a turn
                    waiting_marker(self.path).touch()
                    waited = True
                # Jittered and capped low: several processes polling in step would starve each other.
                time.sleep(delay * random.uniform(0.5, 1.0))
                delay = min(delay * 2, POLL_MAX_S)
                continue
            except duckdb.Error as exc:
                raise StoreError(
                    f"{self.path}: not a trajreview database: {str(exc).splitlines()[0]}"
                ) from exc
            if waited:  # another waiter touches it again at its next try
                with suppress(OSError):
                    waiting_marker(self.path).unlink()
            return con

    def close(self) -> None:
        if self._host is not None:
            host, self._host = self._host, None
            host.release(self.path)
        elif self._catalog is None:
            self._con.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A fresh cursor: use one per query or per thread, never share it."""
        cur = self._con.cursor()
        if self._catalog is not None:
            cur.execute(f"USE {self._catalog}")
        return cur

    # -- schema ----------------------------------------------------------------------------------
    def schema_version(self) -> int:
        cur = self.cursor()
        exists = cur.execute(
            "SELECT count(*) FROM information_schema.tables"
            " WHERE table_catalog = current_database() AND table_name = 'schema_version'"
        ).fetchone()[0]
        if not exists:
            return 0
        return cur.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchone()[0]

    def _migrate(self) -> None:
        current = self.schema_version()
        available = migrations()
        latest = len(available)
        if current > latest:
            raise StoreError(
                f"{self.path}: database schema version {current} is newer than this trajreview "
                f"supports ({latest}); upgrade trajreview"
            )
        if current == latest:
            return
        if self.read_only:
            raise StoreError(
                f"{self.path}: database schema version {current} is older than {latest}; "
                "open it once read-write (e.g. `trajreview init`) to migrate"
            )
        with self.transaction() as cur:
            cur.execute(
                "CREATE TABLE IF NOT EXISTS schema_version ("
                " version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL)"
            )
            for number, name, sql in available[current:]:
                cur.execute(sql)
                cur.execute("INSERT INTO schema_version VALUES (?, ?, ?)", [number, name, utcnow()])

    def tables(self) -> list[str]:
        rows = (
            self.cursor()
            .execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_catalog = current_database() AND table_schema = 'main'"
                " AND table_type = 'BASE TABLE' ORDER BY table_name"
            )
            .fetchall()
        )
        return [name for (name,) in rows]

    def row_counts(self) -> dict[str, int]:
        cur = self.cursor()
        return {t: cur.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in self.tables()}

    # -- writes ----------------------------------------------------------------------------------
    @contextmanager
    def transaction(self, *, checkpoint: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        """Serialized write transaction: everything inside lands together or not at all.

        `checkpoint`: the commit writes the rows into the file itself instead of into the write-ahead log.
        A large write below DuckDB's row group size (a 200-task run's 72,000 network events) otherwise goes
        to the log whole and uncompressed (45 MB), and is read back from it into the file when the file
        closes: 0.13 s of a 200-task import (docs/limits.md)."""
        if self.read_only:
            raise StoreError(f"{self.path}: opened read-only")
        with self._write_lock:
            cur = self.cursor()
            cur.execute("BEGIN TRANSACTION")
            try:
                yield cur
            except BaseException:
                # The cause is what the user must see: a failing ROLLBACK ("Current transaction is
                # aborted", a lost connection) must never replace it. DuckDB discards the transaction
                # either way.
                with suppress(duckdb.Error):
                    cur.execute("ROLLBACK")
                raise
            else:
                if checkpoint:  # a threshold of 0: DuckDB checkpoints at the commit instead of logging
                    with instance_setting(cur, "checkpoint_threshold", "0KB"):
                        cur.execute("COMMIT")
                else:
                    cur.execute("COMMIT")
            finally:
                cur.close()

    # -- reads -----------------------------------------------------------------------------------
    @contextmanager
    def reading(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor for a few statements in a row (registering an Arrow table, then joining it)."""
        cur = self.cursor()
        try:
            yield cur
        finally:
            cur.close()

    def query(self, sql: str, params: Sequence[Any] | None = None) -> list[tuple]:
        return self.cursor().execute(sql, params or []).fetchall()

    def query_df(self, sql: str, params: Sequence[Any] | None = None):
        """Query into a pandas DataFrame (pandas is a core dependency; plotting is not)."""
        return self.cursor().execute(sql, params or []).df()

    def query_dicts(self, sql: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
        cur = self.cursor().execute(sql, params or [])
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


class ShortLivedStore:
    """A store that holds the file only while it runs one read or one write transaction.

    Long CLI commands (imports, scoring, metrics, the judge's LLM questions) take this instead of a
    `Store`: their parsing and computing (seconds to minutes) run with the file closed, and another
    process (the app saving a gold edit) waits only for one short operation.
    Each operation opens the file (retrying on the lock for `lock_timeout_s`) and closes it after.
    While another process waits for the file (`someone_waits`), two operations in a row leave it free for
    at least TURN_S in between, longer than a waiting process sleeps between its tries (POLL_MAX_S): a run
    of short reads never starves the app's save; alone with the file, a command does not wait.
    `holds` records how long each open held the file (the save benchmark reads it).
    """

    TURN_S = 0.15

    def __init__(self, path: str | Path, *, lock_timeout_s: float = 120.0):
        self.path = Path(path)
        self.read_only = False
        self.lock_timeout_s = lock_timeout_s
        self.holds: list[float] = []
        self._closed_at = -math.inf

    @contextmanager
    def _open(self) -> Iterator[Store]:
        warm_arrow()  # never inside the hold: the first Arrow conversion of a process imports pandas
        if someone_waits(self.path):
            time.sleep(max(0.0, self._closed_at + self.TURN_S - time.monotonic()))
        store = Store(self.path, lock_timeout_s=self.lock_timeout_s)
        opened = time.perf_counter()
        try:
            yield store
        finally:
            store.close()
            self.holds.append(time.perf_counter() - opened)
            self._closed_at = time.monotonic()

    @contextmanager
    def transaction(self, *, checkpoint: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        with self._open() as store, store.transaction(checkpoint=checkpoint) as cur:
            yield cur

    @contextmanager
    def reading(self) -> Iterator[duckdb.DuckDBPyConnection]:
        with self._open() as store, store.reading() as cur:
            yield cur

    def query(self, sql: str, params: Sequence[Any] | None = None) -> list[tuple]:
        with self._open() as store:
            return store.query(sql, params)

    def query_df(self, sql: str, params: Sequence[Any] | None = None):
        with self._open() as store:
            return store.query_df(sql, params)

    def query_dicts(self, sql: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
        with self._open() as store:
            return store.query_dicts(sql, params)

    def schema_version(self) -> int:
        with self._open() as store:
            return store.schema_version()

    def close(self) -> None:
        """Nothing to close: the file is open only inside each operation."""

    def __enter__(self) -> ShortLivedStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@functools.cache
def warm_arrow() -> None:
    """Pay once, with the file closed, for what the first Arrow conversion of rows costs a process: pyarrow
    imports pandas then (~1 s; 2-3 s on a loaded machine), which inside a write transaction holds the file."""
    pa.Table.from_pylist([{"at": datetime(2000, 1, 1)}])


def rows_table(rows: Iterable[Mapping[str, Any]], *, schema: pa.Schema | None = None) -> pa.Table:
    """Rows (dicts with column-name keys) as an Arrow table for `insert_rows`: build it before a write
    transaction, so the transaction holds the file only for the insert."""
    rows = list(rows)
    try:
        return pa.Table.from_pylist(rows, schema=schema)
    except UnicodeEncodeError:  # a lone surrogate from a file (`"\ud800"` in JSON, a pickle)
        return pa.Table.from_pylist([valid_row(row) for row in rows], schema=schema)


def insert_rows(
    cur: duckdb.DuckDBPyConnection,
    table: str,
    rows: Iterable[Mapping[str, Any]] | pa.Table,
    *,
    schema: pa.Schema | None = None,
) -> int:
    """Bulk-insert rows (dicts with column-name keys, or an Arrow table) into `table`.

    Columns are matched by name, so a row may omit nullable columns. JSON columns take already
    serialized JSON text. Goes through Arrow: one vectorized INSERT instead of a statement per row.
    """
    data = rows if isinstance(rows, pa.Table) else rows_table(rows, schema=schema)
    if data.num_rows == 0:
        return 0
    view = f"_insert_{table}_{threading.get_ident()}"
    cur.register(view, data)
    cols = ", ".join(f'"{c}"' for c in data.column_names)
    try:
        cur.execute(f'INSERT INTO "{table}" ({cols}) SELECT {cols} FROM "{view}"')
    except BaseException:
        # A failed INSERT aborts the transaction, and unregistering then fails with "Current transaction
        # is aborted": that cleanup error must not replace the cause (a value out of range, ...).
        with suppress(duckdb.Error):
            cur.unregister(view)
        raise
    cur.unregister(view)
    return data.num_rows


@contextmanager
def instance_setting(cur: duckdb.DuckDBPyConnection, name: str, value: Any) -> Iterator[None]:
    """DuckDB's setting `name` at `value` for the statements inside, then as before. A setting is the
    database instance's, not the transaction's: a fresh cursor restores it even when a statement inside
    failed and aborted the caller's transaction."""
    (before,) = cur.execute("SELECT current_setting($name)", {"name": name}).fetchone()
    cur.execute(f"SET {name} = $value", {"value": value})
    try:
        yield
    finally:
        with cur.cursor() as fresh:
            fresh.execute(f"SET {name} = $value", {"value": before})


def one_thread(cur: duckdb.DuckDBPyConnection) -> AbstractContextManager[None]:
    """DuckDB on one thread for the statements inside, then as before: a large insert (a run's network
    events) peaks lower when one thread builds its row groups instead of one buffer per thread, and
    takes about as long (docs/limits.md)."""
    return instance_setting(cur, "threads", 1)


def valid_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """The row with lone surrogates in its text kept as their escapes (no store can hold them): the row
    as the database holds it, for a caller that shows what it wrote without reading it back."""
    return {key: _valid_value(value) for key, value in row.items()}


def _valid_value(value: Any) -> Any:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
        return value
    if isinstance(value, list):
        return [_valid_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _valid_value(v) for k, v in value.items()}
    return value


def require_runs(store: Store | ShortLivedStore, runs: Iterable[str], hint: str = "") -> None:
    """Raise `NotFound` naming every run of `runs` the database does not hold."""
    wanted = list(dict.fromkeys(runs))
    known = {name for (name,) in store.query("SELECT name FROM runs WHERE list_contains(?, name)", [wanted])}
    missing = [r for r in wanted if r not in known]
    if missing:
        raise NotFound("run", ", ".join(missing) if len(missing) > 1 else missing[0], hint=hint)


def require_gold_set(store: Store | ShortLivedStore, gold_set: str, hint: str = "") -> None:
    if not store.query("SELECT 1 FROM gold_sets WHERE name = ?", [gold_set]):
        raise NotFound("gold set", gold_set, hint=hint)


def open_store(path: str | Path | None = None, *, read_only: bool = False) -> Store:
    """Open (creating and migrating if needed) the database at `path` or the default location."""
    from core.paths import default_db_path

    return Store(path or default_db_path(), read_only=read_only)
