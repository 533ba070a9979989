"""The pre-warm (dashboard.prewarm): after a server start and after each write, Runs and Triage find their
reads in the cache, computed off the request path."""

from __future__ import annotations

import shutil
import time

import pytest

from core.queries.runs import run_names
from core.review.annotations import annotate
from core.store import Store, waiting_marker
from dashboard import prewarm


@pytest.fixture
def fresh_db(demo_db, tmp_path, monkeypatch):
    """A copy of the demo database under a new path: no read of it is in the process's cache yet."""
    path = tmp_path / "warm.duckdb"
    shutil.copy(demo_db, path)
    monkeypatch.setenv("TRAJREVIEW_DB", str(path))
    monkeypatch.setenv("TRAJREVIEW_PROFILE", "1")
    return path


def _misses(open_page, capsys, db, page: str, **params) -> str:
    """The page's profile line ('… N misses …') for one view of `page`."""
    capsys.readouterr()
    open_page(db, page, **params)
    (line,) = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("page run ")]
    return line


def test_after_a_warm_the_default_runs_and_triage_views_read_nothing_new(fresh_db, open_page, capsys):
    warmer = prewarm.Warmer(fresh_db, start=False)
    assert warmer.warm_once()
    assert not warmer.warm_once()  # nothing changed since: nothing to do
    for page in ("views/runs.py", "views/triage.py"):
        line = _misses(open_page, capsys, fresh_db, page)
        assert " 0 misses" in line and "open 0 ms" in line, line


def test_without_a_warm_the_same_views_read_the_database(fresh_db, open_page, capsys):
    """The control of the test above: the same first views, unwarmed, miss and open the file."""
    for page in ("views/runs.py", "views/triage.py"):
        line = _misses(open_page, capsys, fresh_db, page)
        assert " 0 misses" not in line and "open 0 ms" not in line, line


def test_a_write_warms_what_the_pages_last_read_once_the_file_holds_still(
    fresh_db, open_page, capsys, monkeypatch
):
    """A reviewer triaged another run than the default (app.py hands the warmer that page run's reads, and
    the server's first page run starts it); a label lands: the warmer sees the new fingerprint, waits until
    it holds still, and computes that view's reads again, so the next view of it reads nothing."""
    from dashboard import db

    with Store(fresh_db, read_only=True) as store:
        names = run_names(store)
    other = names[-1]
    assert other != names[0]
    monkeypatch.setenv("TRAJREVIEW_PREWARM", "1")
    open_page(fresh_db, "views/triage.py", run=other)
    warmer = prewarm.warmer(str(fresh_db))  # the one app.py started
    try:
        assert any(args == (other,) for _, args, _ in warmer.reads(db.fingerprint(fresh_db)))
        deadline = time.monotonic() + 30
        while warmer.warmed is None and time.monotonic() < deadline:
            time.sleep(0.05)
        before = warmer.warmed
        assert before is not None  # the first warm, after the start
        with Store(fresh_db) as store:
            annotate(store, "run", "Ada", run=other, note="looked at")
        while warmer.warmed == before and time.monotonic() < deadline:
            time.sleep(0.05)
        assert warmer.warmed == db.fingerprint(fresh_db) != before
    finally:
        warmer.stop()
    line = _misses(open_page, capsys, fresh_db, "views/triage.py", run=other)
    assert " 0 misses" in line and "open 0 ms" in line, line


def test_no_warm_while_another_process_waits_for_the_file(fresh_db):
    """An import waiting for its turn (its marker is fresh) goes first: the warm does not open the file."""
    warmer = prewarm.Warmer(fresh_db, start=False)
    waiting_marker(fresh_db).touch()
    try:
        assert not warmer.warm_once() and warmer.warmed is None
    finally:
        waiting_marker(fresh_db).unlink()
    assert warmer.warm_once()


@pytest.mark.slow
def test_a_file_another_process_holds_is_left_for_the_next_look(fresh_db):
    """An import's final transaction holds the file: the warm gives up at once (it would otherwise wait
    the 10 s a page's read waits) and warms nothing; once the file is free, it warms."""
    import subprocess
    import sys

    from core.errors import StoreError

    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, duckdb; c = duckdb.connect(sys.argv[1]); print('held', flush=True);"
         " sys.stdin.read()", str(fresh_db)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    warmer = prewarm.Warmer(fresh_db, start=False)
    try:
        assert holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        with pytest.raises(StoreError, match="in use by another process"):
            warmer.warm_once()
        assert time.monotonic() - started < 5 and warmer.warmed is None
    finally:
        holder.stdin.close()
        holder.wait(timeout=10)
    waiting_marker(fresh_db).unlink(missing_ok=True)  # left by the failed tries
    assert warmer.warm_once()


def test_reads_with_unhashable_arguments_are_kept_and_repeats_dropped(fresh_db):
    """A page may pass a list: remembering it never fails the page run that hands it over."""
    from core.queries.runs import success_by_site

    warmer = prewarm.Warmer(fresh_db, start=False)
    listed = (success_by_site, (["opagent"],), ())
    plain = (run_names, (), ())
    warmer.remember("runs", [plain, listed, plain, listed])
    warmer.remember("triage", [plain])
    assert warmer.reads(()) == [plain, listed, listed]


@pytest.mark.slow
def test_a_process_that_exits_while_a_warm_is_under_way_exits_cleanly(fresh_db):
    """The warmer is stopped and joined as the interpreter exits: cut off inside DuckDB, its thread would
    abort the process ('terminate called after throwing'), so stopping a server would crash it."""
    import subprocess
    import sys

    from core.paths import REPO_ROOT

    code = (
        "import sys, time; from pathlib import Path; from dashboard.prewarm import Warmer;"
        " Warmer(Path(sys.argv[1])); time.sleep(float(sys.argv[2]))"
    )
    for pause in ("0.02", "0.1", "0.3"):
        done = subprocess.run([sys.executable, "-c", code, str(fresh_db), pause], cwd=REPO_ROOT,
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        assert done.returncode == 0 and "terminate" not in done.stderr, (pause, done.stderr[-500:])
