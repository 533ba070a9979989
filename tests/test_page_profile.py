"""TRAJREVIEW_PROFILE: each page run says where its script's time went (database open, every read, hit or
miss); a page run whose reads all hit the cache never opens the database."""

from __future__ import annotations

import re
import shutil

from core.queries import runs
from core.queries.failures import latest_run
from dashboard import db


def _profile_line(err: str) -> str:
    (line,) = [ln for ln in err.splitlines() if ln.startswith("page run ")]
    return line


def test_profile_line_counts_hits_misses_and_the_open(demo_db, tmp_path, monkeypatch, capsys):
    path = tmp_path / "profiled.duckdb"
    shutil.copy(demo_db, path)
    monkeypatch.setenv("TRAJREVIEW_DB", str(path))
    monkeypatch.setenv("TRAJREVIEW_PROFILE", "1")
    with db.page_run() as run:
        run.page = "runs"
        first = db.read(runs.runs_table)
        again = db.read(runs.runs_table)
        db.read(latest_run)
    cold = _profile_line(capsys.readouterr().err)
    assert len(first) == len(again) > 0
    assert cold.startswith("page run runs: script ")
    assert "1 hits" in cold and "2 misses" in cold
    assert "runs_table MISS" in cold and "runs_table hit" in cold and "latest_run MISS" in cold
    assert re.search(r"; open \d+ ms;", cold) and run.open_ms > 0  # the first miss opened the file

    # The same reads again: every one from the cache, and the file is never opened.
    with db.page_run() as warm_run:
        db.read(runs.runs_table)
        db.read(latest_run)
    warm = _profile_line(capsys.readouterr().err)
    assert "2 hits" in warm and "0 misses" in warm and "open 0 ms" in warm
    assert warm_run.open_ms == 0


def test_no_profile_line_unless_asked(demo_db, tmp_path, monkeypatch, capsys):
    path = tmp_path / "quiet.duckdb"
    shutil.copy(demo_db, path)
    monkeypatch.setenv("TRAJREVIEW_DB", str(path))
    monkeypatch.delenv("TRAJREVIEW_PROFILE", raising=False)
    with db.page_run():
        assert db.read(runs.runs_table) is not None
    assert "page run" not in capsys.readouterr().err


def test_a_cold_task_review_finds_its_prefetched_reads_cached(
    demo_db, tmp_path, monkeypatch, capsys, open_page
):
    """Task review starts its independent reads together (db.prefetch, two threads): on a database no read
    of which is cached yet, the page's own reads of them are hits, and the file is left detached after."""
    from dashboard.db import store_host

    path = tmp_path / "cold.duckdb"
    shutil.copy(demo_db, path)
    monkeypatch.setenv("TRAJREVIEW_PROFILE", "1")
    with db.Store(path, read_only=True) as store:
        run = latest_run(store)
        (task,) = store.query("SELECT min(task_id) FROM evaluations WHERE run = ?", [run])[0]
    capsys.readouterr()
    open_page(path, "views/task.py", run=run, task=str(task))
    line = _profile_line(capsys.readouterr().err)
    prefetched = ("task_header", "failed_neighbours", "other_runs", "episodes")
    # Three of four at least: on a loaded machine the page may reach one before a prefetch thread took it.
    assert sum(f"{name} hit" in line for name in prefetched) >= 3, line
    assert "run_exists MISS" in line  # not prefetched: read by the page while the others compute
    assert store_host().attached() == []


def test_compare_looks_for_the_default_pair_only_when_the_url_names_no_pair(
    demo_db, monkeypatch, capsys, open_page
):
    """Finding the default pair joins every run with every other; a view whose URL names both runs skips it."""
    monkeypatch.setenv("TRAJREVIEW_PROFILE", "1")
    capsys.readouterr()
    at = open_page(demo_db, "views/compare.py")
    assert "comparison_pair" in _profile_line(capsys.readouterr().err)
    a, b = at.query_params["a"], at.query_params["b"]  # the default pair, written to the URL
    open_page(demo_db, "views/compare.py", a=a, b=b)
    assert "comparison_pair" not in _profile_line(capsys.readouterr().err)
