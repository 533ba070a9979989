"""One DuckDB instance kept by a long-lived process (the app's server) that attaches a database file while
some `Store` uses it and detaches it when the last one closes.

Why: starting a DuckDB instance costs ~30 ms whatever the file (it builds its catalog of built-in
functions), attaching a file to a running one ~5 ms. The app opens the file once per page run and closes
it after, so the CLI can write between two runs; through a host each open costs the attach, not a start
(`bench dashboard`, issue 36). The file is held exactly as long as before: DETACH releases DuckDB's lock
and checkpoints what was written, as closing a connection does (tests/test_store_host.py).

Every `Store` of the file shares one attachment (DuckDB attaches a file once per process); its cursors
`USE` the attachment's name, so the SQL of `core` names no database. The host is thread-safe: Streamlit
runs each browser session's page in its own thread.
"""

from __future__ import annotations

import itertools
import os
import threading
from dataclasses import dataclass
from pathlib import Path

import duckdb

from core.errors import StoreError


@dataclass
class _Attachment:
    name: str
    read_only: bool
    users: int


class StoreHost:
    """An in-memory DuckDB instance that files are attached to while they are in use."""

    def __init__(self) -> None:
        self.connection = duckdb.connect(":memory:")
        self._lock = threading.Lock()
        self._attached: dict[str, _Attachment] = {}
        self._names = itertools.count(1)

    @staticmethod
    def _key(path: Path) -> str:
        return os.path.realpath(path)

    def attach(self, path: Path, read_only: bool) -> str:
        """Attach `path` (or count one more user of its attachment) and return the name its cursors `USE`.
        Raises DuckDB's own errors (the lock held by another process, not a database file) for `Store`
        to retry or report; a read-write open of a file attached read-only is refused."""
        key = self._key(path)
        with self._lock:
            found = self._attached.get(key)
            if found is not None:
                if found.read_only and not read_only:
                    raise StoreError(f"{path}: opened read-only in this process; it cannot be written here")
                found.users += 1
                return found.name
            name = f"trajreview_{next(self._names)}"
            quoted = str(path).replace("'", "''")
            mode = ", READ_ONLY" if read_only else ""
            with self.connection.cursor() as cur:
                cur.execute(f"ATTACH '{quoted}' AS {name} (TYPE duckdb{mode})")
            self._attached[key] = _Attachment(name, read_only, 1)
            return name

    def release(self, path: Path) -> None:
        """One user fewer; the last one detaches the file (DuckDB checkpoints it and lets go of its lock)."""
        key = self._key(path)
        with self._lock:
            found = self._attached.get(key)
            if found is None:
                return
            found.users -= 1
            if found.users > 0:
                return
            del self._attached[key]
            with self.connection.cursor() as cur:
                cur.execute(f"DETACH {found.name}")

    def attached(self) -> list[str]:
        """The files attached now (real paths): the tests check that none is left after a page run."""
        with self._lock:
            return sorted(self._attached)
