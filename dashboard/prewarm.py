"""Pre-warm: the reads of the landing page (Runs) and of Triage, computed off the request path after the
server starts and after each write lands, so the first reviewer to open them after an import finds them in
the cache instead of waiting for them (issue 36).

One thread per server (`warmer()`, a cached resource) starts after the server's first page run (Streamlit
runs no code of the app before a browser connects) and warms at once; then it looks at the database's
fingerprint once a second, and when it has changed and held still for a look (an import lands in several
transactions: scores, then metrics), it computes the reads into the app's cache under the new fingerprint.
What it computes is what Runs and Triage read in their last page runs (`remember`, from app.py); for a
page not run yet, the reads of its default view (`default_reads`). It never waits long for the file: while
another process holds or waits for it, it tries again at the next look.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path

import streamlit as st

from core.queries import annotations as qa
from core.queries import defects as dq
from core.queries import runs as q
from core.queries import triage as qt
from core.queries.failures import failures_by_cause, latest_run
from core.store import someone_waits
from dashboard import db

log = logging.getLogger(__name__)

WARMED_PAGES = ("runs", "triage")
LOOK_EVERY_S = 1.0
Read = tuple[
    Callable, tuple, tuple
]  # (core function, arguments, sorted keyword arguments), as db.read keys it


def enabled() -> bool:
    """Off with TRAJREVIEW_PREWARM=0 (the tests, whose servers must not read behind their back)."""
    return os.environ.get("TRAJREVIEW_PREWARM", "") not in ("0", "false")


def default_reads(fingerprint: tuple) -> dict[str, list[Read]]:
    """Per page, the reads of Runs and Triage as a reviewer first opens them (no URL parameters): their runs
    are the most recent one, as the pages choose. The three that name those runs are computed here.
    tests/test_prewarm.py checks that these views then read nothing the warm did not compute."""
    names = db.warm(q.run_names, (), (), fingerprint) or []
    latest = db.warm(latest_run, (), (), fingerprint)
    table = db.warm(q.runs_table, (), (), fingerprint)
    runs: list[Read] = [(q.runs_table, (), ()), (latest_run, (), ()), (dq.defect_counts, (), ())]
    if latest is not None:
        runs.append((failures_by_cause, (latest,), ()))
    if table is not None and not table.empty:
        runs.append((q.success_by_site, (table["run"].iloc[0],), ()))  # the first charted run's tab
    triage: list[Read] = [(q.run_names, (), ()), (qa.vocabulary, (), ()), (dq.defect_counts, (), ())]
    if names:
        no_where = (("episode", None), ("event_seq", None), ("step_idx", None))
        triage += [(qa.history, ("run", names[0], None), no_where), (qt.triage_table, (names[0],), ())]
    return {"runs": runs, "triage": triage}


class Warmer:
    """Computes the warmed reads into the cache whenever the database changed and has held still."""

    def __init__(self, path: Path, *, look_every_s: float = LOOK_EVERY_S, start: bool = True) -> None:
        self.path = path
        self.look_every_s = look_every_s
        self.warmed: tuple | None = None  # the fingerprint last warmed
        self._lock = threading.Lock()
        self._recipes: dict[str, list[Read]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="trajreview-prewarm", daemon=True)
        if start:
            self._thread.start()
            # Stopped and joined as the interpreter exits: a daemon thread cut off inside DuckDB's C++ code
            # aborts the process ("terminate called after throwing"), so a server's stop would crash.
            atexit.register(self.stop)

    def remember(self, page: str, reads: list[Read]) -> None:
        """What a page run of Runs or Triage read: the warm computes these next time."""
        if page in WARMED_PAGES and reads:
            with self._lock:
                self._recipes[page] = _unique(reads)

    def reads(self, fingerprint: tuple) -> list[Read]:
        """What each warmed page read in its last page run; for a page not seen yet, its default view's."""
        with self._lock:
            remembered = dict(self._recipes)
        defaults = {} if all(page in remembered for page in WARMED_PAGES) else default_reads(fingerprint)
        return _unique([read for page in WARMED_PAGES for read in remembered.get(page) or defaults[page]])

    def warm_once(self) -> bool:
        """Warm the reads for the database as it is now, unless done already or another process holds or
        waits for the file; True when it warmed."""
        now = db.fingerprint(self.path)
        if now == self.warmed or not self.path.exists() or someone_waits(self.path):
            return False
        with db.warming():
            for fn, args, kwargs in self.reads(now):
                if self._stop.is_set():
                    return False
                db.warm(fn, args, kwargs, now)
        self.warmed = now
        return True

    def _loop(self) -> None:
        seen = db.fingerprint(self.path)  # at the start: warm at once (the reviewer is on the first page)
        while True:
            try:
                self.warm_once()
            except Exception as exc:  # a lock held by an import, a file replaced: next look
                log.info("pre-warm skipped: %s", exc)
            while not self._stop.wait(self.look_every_s):
                now = db.fingerprint(self.path)
                if now == seen and now != self.warmed:  # changed, then held still for a look
                    break
                seen = now
            else:
                return

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop looking and wait for the read under way to end."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout_s)


def _unique(reads: list[Read]) -> list[Read]:
    """`reads` without repeats, in order; a read whose arguments cannot be hashed (a list) is kept as is."""
    seen: set = set()
    out = []
    for read in reads:
        try:
            if read in seen:
                continue
            seen.add(read)
        except TypeError:
            pass
        out.append(read)
    return out


@st.cache_resource(show_spinner=False)
def warmer(path: str) -> Warmer:
    """The server's one warmer for the database at `path`."""
    return Warmer(Path(path))


def remember(page: str, reads: list[Read]) -> None:
    """Hand a finished page run's reads to the warmer, started by the server's first page run (Streamlit
    runs no code of the app before a browser connects)."""
    if not enabled():
        return
    try:
        warmer(str(db.db_path())).remember(page, reads)
    except Exception as exc:  # never the page's problem: at worst the next view is computed in its request
        log.warning("pre-warm: could not remember the %s page's reads: %s", page, exc)
