"""Database access for the app: through `core` functions only, cached by function, arguments and the
database's fingerprint.

The app never holds the file between page runs: each read or write opens the database, runs one core
function and closes it, so the CLI can import into the same file while the app serves it (DuckDB locks
a file opened read-write against every other process). Inside this process every open uses the same
mode — read-write, or read-only when served with `--read-only` — because DuckDB refuses two
connections to one file with different configurations in one process.

Opening the file costs ~5 ms (attached to the server's one DuckDB instance, `store_host`; a connection of
its own costs ~30 ms), and one page run opens it at most once: app.py runs every page inside
`page_run()`, which opens the database on the first read that misses the cache and closes it when the
page's script ends (also on st.stop, st.rerun and page switches). Results are cached per (function,
arguments, fingerprint); the fingerprint changes whenever a write lands (the file or its write-ahead log
changes), so a cached answer is never stale and never another run's.
"""

from __future__ import annotations

import contextvars
import logging
import os
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import streamlit as st

from core.errors import StoreError, TrajreviewError, first_line
from core.paths import default_db_path
from core.search.index import manifest_path
from core.store import Store
from core.store_host import StoreHost
from dashboard.text import escape_md

T = TypeVar("T")
log = logging.getLogger(__name__)


def db_path() -> Path:
    return Path(os.environ.get("TRAJREVIEW_DB") or default_db_path())


def read_only() -> bool:
    """True when the app serves a presenting instance (`trajreview serve --read-only`)."""
    return os.environ.get("TRAJREVIEW_READ_ONLY", "") not in ("", "0", "false")


def fingerprint(path: Path | None = None) -> tuple:
    """(path, size and mtime of the file, of its write-ahead log and of the search index's manifest):
    changes whenever a write lands, and when `search --reindex` rewrites the index."""
    path = path or db_path()
    parts: list[Any] = [str(path)]
    for p in (path, path.with_name(path.name + ".wal"), manifest_path(path)):
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


@st.cache_resource(show_spinner=False)
def store_host() -> StoreHost:
    """The server's one DuckDB instance, which each page run's open attaches the file to and detaches it
    from after (~5 ms where a connection of its own costs ~30 ms: core.store_host)."""
    return StoreHost()


def _open(path: Path, lock_timeout_s: float = 10.0) -> Store:
    if not path.exists():
        raise StoreError(f"{path}: no such database (create it with `trajreview init` or `make demo`)")
    return Store(path, read_only=read_only(), lock_timeout_s=lock_timeout_s, host=store_host())


def profiling() -> bool:
    """True when served with TRAJREVIEW_PROFILE set: each page run logs where its script's time went."""
    return os.environ.get("TRAJREVIEW_PROFILE", "") not in ("", "0", "false")


class _PageRun:
    """The database of one page run, opened on first use and closed when the run ends; with profiling,
    what its reads cost (see `profile_line`)."""

    def __init__(self, lock_timeout_s: float = 10.0) -> None:
        self.store: Store | None = None
        self.lock_timeout_s = lock_timeout_s
        # Every read's (function, args, sorted kwargs): what the pre-warm computes again after a write.
        self.calls: list[tuple[Callable, tuple, tuple]] = []
        self.prefetching: ThreadPoolExecutor | None = None  # `prefetch`'s threads, joined before the close
        self.started = time.perf_counter()
        self.open_ms = 0.0
        self.reads: list[tuple[str, bool | None, float]] = []  # (function, cache hit or None: files, ms)
        self.missed = False
        self.page = ""

    def get(self, path: Path) -> Store:
        if self.store is None or self.store.path != path:
            self.close()
            start = time.perf_counter()
            self.store = _open(path, self.lock_timeout_s)
            self.open_ms += (time.perf_counter() - start) * 1000
        return self.store

    def profile_line(self) -> str:
        """One line: the script's total, the database open, and every read (cache hit, MISS, or a read of
        files), each with its milliseconds."""
        total = (time.perf_counter() - self.started) * 1000
        hits = [ms for _, hit, ms in self.reads if hit is True]
        misses = [ms for _, hit, ms in self.reads if hit is False]
        kind = {True: "hit", False: "MISS", None: "files"}
        each = ", ".join(f"{name.rsplit('.', 1)[-1]} {kind[hit]} {ms:.0f}" for name, hit, ms in self.reads)
        return (
            f"page run {self.page}: script {total:.0f} ms; open {self.open_ms:.0f} ms; {len(hits)} hits "
            f"{sum(hits):.0f} ms, {len(misses)} misses {sum(misses):.0f} ms; reads: {each or 'none'}"
        )

    def close(self) -> None:
        if self.prefetching is not None:  # their reads use the store: they end first
            self.prefetching.shutdown(wait=True, cancel_futures=True)
            self.prefetching = None
        if self.store is not None:
            self.store.close()
            self.store = None


class _Lent:
    """A prefetch thread's page run: the run's open store, and a miss flag of its own (the run's profile
    counts the page's own reads)."""

    def __init__(self, run: _PageRun) -> None:
        self.run = run
        self.missed = False

    def get(self, path: Path) -> Store:
        return self.run.get(path)


# Per script-run thread (a context variable, not shared state): each browser session's run sees its own.
_current_run: contextvars.ContextVar[_PageRun | None] = contextvars.ContextVar(
    "trajreview_page_run", default=None
)


@contextmanager
def page_run() -> Iterator[_PageRun]:
    """Wrap one page's script: every read and write inside shares one open of the database. With
    TRAJREVIEW_PROFILE set, the run's `profile_line` goes to the server's stderr (`.page` names it)."""
    run = _PageRun()
    token = _current_run.set(run)
    try:
        yield run
    finally:
        _current_run.reset(token)
        run.close()
        if profiling():
            print(run.profile_line(), file=sys.stderr, flush=True)


@contextmanager
def _store(path: Path) -> Iterator[Store]:
    run = _current_run.get()
    if run is not None:
        yield run.get(path)
        return
    with _open(path) as store:
        yield store


@st.cache_data(show_spinner=False, max_entries=1024)
def _cached(name: str, args: tuple, kwargs: tuple, db_fingerprint: tuple, _fn: Callable) -> Any:
    # `name`, `args`, `kwargs` and the fingerprint form the key; `_fn` is not hashed (leading underscore).
    run = _current_run.get()
    if run is not None:
        run.missed = True
    with _store(Path(db_fingerprint[0])) as store:
        return _fn(store, *args, **dict(kwargs))


@contextmanager
def warming(lock_timeout_s: float = 0.2) -> Iterator[None]:
    """The pre-warm's reads (`warm`) share one open of the database, as a page run's do, and give up soon
    on a file another process holds (the warm tries again later: dashboard.prewarm)."""
    run = _PageRun(lock_timeout_s)
    token = _current_run.set(run)
    try:
        yield
    finally:
        _current_run.reset(token)
        run.close()


def warm(fn: Callable[..., T], args: tuple, kwargs: tuple, db_fingerprint: tuple) -> T:
    """`fn(store, *args, **dict(kwargs))` computed into the cache under `db_fingerprint`, exactly as a page's
    `read` keys it (`kwargs` sorted by name); errors are raised, not shown."""
    return _cached(_key(fn), tuple(args), tuple(kwargs), db_fingerprint, fn)


def prefetch(*calls: tuple) -> None:
    """Start reads the page makes next, each `(fn, *args)`, computed in two threads while the page goes on:
    DuckDB lets go of the GIL while it runs a query, so a cold page's independent reads overlap on two
    cores. The page's own `read` of each then finds it cached, or waits for it (Streamlit computes a key
    once). Nothing happens outside a page run; a read that fails here fails again, shown, in the page's."""
    run = _current_run.get()
    if not isinstance(run, _PageRun):
        return
    db_fingerprint = fingerprint()
    try:
        run.get(Path(db_fingerprint[0]))  # opened here, before the threads share it
    except Exception:
        return  # the page's own read says why
    if run.prefetching is None:
        run.prefetching = ThreadPoolExecutor(2, thread_name_prefix="trajreview-prefetch")
    for fn, *args in calls:
        run.prefetching.submit(_prefetch_one, run, fn, tuple(args), db_fingerprint)


def _prefetch_one(run: _PageRun, fn: Callable, args: tuple, db_fingerprint: tuple) -> None:
    token = _current_run.set(_Lent(run))
    try:
        warm(fn, args, (), db_fingerprint)
    except Exception:  # noqa: S110 - shown by the page's own read of it
        pass
    finally:
        _current_run.reset(token)


def forget_reads() -> None:
    """Drop every cached read (not the file caches): what the app sees after a write landed elsewhere."""
    _cached.clear()


def unexpected(exc: Exception, what: str) -> None:
    """An error no core function announced (a bug, a full disk): its traceback to the server log, one
    line to the page, never a traceback on it. `what` says what could not be done."""
    log.error("%s: %s", what, exc, exc_info=exc)
    st.error(
        f"{what}: {escape_md(type(exc).__name__, 80)}: {escape_md(first_line(exc), 200)} (the details are in the"
        " server log).",
        icon=":material/error:",
    )


def read(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T | None:
    """`fn(store, *args, **kwargs)` from the cache or the database; on any failure, one line in the page
    and None (never a traceback; an unexpected one is logged with its traceback). A lambda or closure is
    refused before that, with TypeError: it is the page's code that is wrong, and it would never be cached."""
    key = _key(fn)
    run = _current_run.get()
    start = time.perf_counter()
    keyword = tuple(sorted(kwargs.items()))
    if run is not None:
        run.missed = False
        run.calls.append((fn, args, keyword))
    try:
        return _cached(key, args, keyword, fingerprint(), fn)
    except TrajreviewError as exc:
        st.error(str(exc), icon=":material/error:")
        return None
    except Exception as exc:
        unexpected(exc, "Could not read this part of the page")
        return None
    finally:
        if run is not None:
            run.reads.append((key, not run.missed, (time.perf_counter() - start) * 1000))


@st.cache_data(show_spinner=False, max_entries=512)
def _cached_files(name: str, paths: tuple, identity: tuple, args: tuple, _fn: Callable) -> Any:
    return _fn(paths, *args)


def _identity(path: str | None) -> tuple[int, int]:
    try:
        info = os.stat(path) if path else None
    except OSError:
        info = None
    return (info.st_mtime_ns, info.st_size) if info else (0, 0)


def read_files(fn: Callable[..., T], paths: tuple[str | None, ...], *args: Any) -> T:
    """`fn(paths, *args)` for a core function over files (screenshots), cached by every file's identity
    (size and modification time), so a replaced file is read again; no database is opened."""
    run, start = _current_run.get(), time.perf_counter()
    try:
        return _cached_files(_key(fn), paths, tuple(_identity(p) for p in paths), args, fn)
    finally:
        if run is not None:
            run.reads.append((_key(fn), None, (time.perf_counter() - start) * 1000))


def write(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T | None:
    """Run a core write `fn(store, ...)` in its own short open of the database; None and one line in
    the page when it cannot (read-only instance, lock held too long, bad input). The caller keeps the
    reviewer's draft on screen when this returns None."""
    if read_only():
        st.error("This instance is read-only (served with --read-only): nothing was saved.")
        return None
    try:
        with _store(db_path()) as store:
            return fn(store, *args, **kwargs)
    except TrajreviewError as exc:
        st.error(str(exc), icon=":material/error:")
        return None
    except Exception as exc:
        unexpected(exc, "Not saved")
        return None
