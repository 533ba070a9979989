"""Database access for the app: through `core` functions only, cached by function, arguments and the
database's fingerprint.

The app never holds the file between page runs: each read or write opens the database, runs one core
function and closes it, so the CLI can import into the same file while the app serves it (DuckDB locks
a file opened read-write against every other process). Inside this process every open uses the same
mode — read-write, or read-only when served with `--read-only` — because DuckDB refuses two
connections to one file with different configurations in one process.

Results are cached per (function, arguments, fingerprint); the fingerprint changes whenever a write
lands (the file or its write-ahead log changes), so a cached answer is never stale and never another
run's.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import streamlit as st

from core.errors import StoreError, TrajreviewError
from core.paths import default_db_path
from core.store import Store

T = TypeVar("T")


def db_path() -> Path:
    return Path(os.environ.get("TRAJREVIEW_DB") or default_db_path())


def read_only() -> bool:
    """True when the app serves a presenting instance (`trajreview serve --read-only`)."""
    return os.environ.get("TRAJREVIEW_READ_ONLY", "") not in ("", "0", "false")


def fingerprint(path: Path | None = None) -> tuple:
    """(path, size and mtime of the file, and of its write-ahead log): changes whenever a write lands."""
    path = path or db_path()
    parts: list[Any] = [str(path)]
    for p in (path, path.with_name(path.name + ".wal")):
        try:
            info = p.stat()
            parts += [info.st_mtime_ns, info.st_size]
        except FileNotFoundError:
            parts += [0, 0]
    return tuple(parts)


def _key(fn: Callable) -> str:
    """A stable name for a core function; closures and lambdas are refused because their name does not
    say what they read (two runs' lambdas would share one cache entry)."""
    name = f"{fn.__module__}.{fn.__qualname__}"
    if "<lambda>" in name or "<locals>" in name or not fn.__module__.startswith("core."):
        raise TypeError(f"db.read needs a module-level core function, got {name}: pass arguments instead")
    return name


def _open(path: Path) -> Store:
    if not path.exists():
        raise StoreError(f"{path}: no such database (create it with `trajreview init` or `make demo`)")
    return Store(path, read_only=read_only())


@st.cache_data(show_spinner=False, max_entries=1024)
def _cached(name: str, args: tuple, kwargs: tuple, db_fingerprint: tuple, _fn: Callable) -> Any:
    # `name`, `args`, `kwargs` and the fingerprint form the key; `_fn` is not hashed (leading underscore).
    with _open(Path(db_fingerprint[0])) as store:
        return _fn(store, *args, **dict(kwargs))


def read(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T | None:
    """`fn(store, *args, **kwargs)` from the cache or the database; on a database problem, one line in
    the page and None (never a traceback)."""
    try:
        return _cached(_key(fn), args, tuple(sorted(kwargs.items())), fingerprint(), fn)
    except TrajreviewError as exc:
        st.error(str(exc), icon=":material/error:")
        return None


def write(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T | None:
    """Run a core write `fn(store, ...)` in its own short open of the database; None and one line in
    the page when it cannot (read-only instance, lock held too long, bad input). The caller keeps the
    reviewer's draft on screen when this returns None."""
    if read_only():
        st.error("This instance is read-only (served with --read-only): nothing was saved.")
        return None
    try:
        with _open(db_path()) as store:
            return fn(store, *args, **kwargs)
    except TrajreviewError as exc:
        st.error(str(exc), icon=":material/error:")
        return None
