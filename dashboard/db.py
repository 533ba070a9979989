"""Database access for the app: through core only, short-lived read-only opens.

The app opens the file read-only for each query batch and closes it at once, so the CLI can write
to the same file between page runs (DuckDB locks a read-write file against every other process).
Results are cached per (file, modification time), so reruns do not touch the file at all.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import streamlit as st

from core.errors import TrajreviewError
from core.paths import default_db_path
from core.store import Store

T = TypeVar("T")


def db_path() -> Path:
    return Path(os.environ.get("TRAJREVIEW_DB") or default_db_path())


def fingerprint() -> tuple[str, float]:
    path = db_path()
    try:
        return str(path), path.stat().st_mtime
    except FileNotFoundError:
        return str(path), 0.0


@st.cache_data(show_spinner=False, max_entries=256)
def _cached(_fn: Callable[[Store], T], name: str, db_fingerprint: tuple[str, float]) -> T:
    with Store(db_fingerprint[0], read_only=True) as store:
        return _fn(store)


def read(fn: Callable[[Store], T]) -> T | None:
    """Run a core read function against the database; show a one-line error instead of a traceback."""
    try:
        return _cached(fn, f"{fn.__module__}.{fn.__qualname__}", fingerprint())
    except TrajreviewError as exc:
        st.error(str(exc))
        return None
