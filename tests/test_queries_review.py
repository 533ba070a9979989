"""The review read models without Streamlit, on the demo database's real runs; and the app's cache."""

from __future__ import annotations

import shutil

import pytest

from core.queries import network, runs, task, triage
from core.store import Store


@pytest.fixture
def demo(demo_db):
    with Store(demo_db, read_only=True) as s:
        yield s


def test_runs_table_counts_match_the_evaluations(demo):
    table = runs.runs_table(demo).set_index("run")
    for run in table.index:
        by_status = dict(
            demo.query("SELECT status, count(*) FROM evaluations WHERE run = ? GROUP BY 1", [run])
        )
        row = table.loc[run]
        assert row["successes"] == by_status.get("success", 0)
        assert row["failures"] >= by_status.get("failure", 0)
        assert row["successes"] + row["failures"] + row["errors"] == row["scored"]
        if row["scored"]:
            assert row["ci_low"] <= row["success_rate"] <= row["ci_high"]
    # agentlab-sample: five answer attempts crashed or were interrupted and carry no verdict of their own:
    # they are errors (never successes, never silently dropped).
    crashed = demo.query(
        "SELECT count(*) FROM trajectories t WHERE run = 'agentlab-sample' AND is_answer"
        " AND termination IN ('error', 'interrupted')"
        " AND NOT EXISTS (SELECT 1 FROM evaluations e WHERE e.run = t.run AND e.task_id = t.task_id)"
    )[0][0]
    assert crashed == 5 and table.loc["agentlab-sample", "errors"] == crashed
    assert table.loc["agentlab-sample", "tasks"] == table.loc["agentlab-sample", "scored"] == 11


def test_success_by_site_uses_the_official_buckets(demo):
    per_site = runs.success_by_site(demo, "webarena-render-babelcloud").set_index("site")
    assert per_site["scored"].sum() == 812
    assert "gitlab-reddit" in per_site.index  # multi-site tasks are their own bucket
    expected = demo.query(
        "SELECT count(*) FILTER (WHERE e.status = 'success'), count(*) FROM evaluations e JOIN tasks t USING (task_id)"
        " WHERE e.run = 'webarena-render-babelcloud' AND t.site_key = 'map'"
    )[0]
    assert (per_site.loc["map", "successes"], per_site.loc["map", "scored"]) == expected


def test_triage_filter_search_sort_and_neighbours(demo):
    table = triage.triage_table(demo, "webarena-render-babelcloud")
    assert len(table) == 812 and table["task_id"].is_unique
    failed_gitlab = triage.apply_filter(table, triage.TriageFilter(sites=("gitlab",), verdicts=("failure",)))
    assert set(failed_gitlab["site"]) == {"gitlab"} and set(failed_gitlab["verdict"]) == {"failure"}
    without_gold = triage.apply_filter(table, triage.TriageFilter(has_gold="without gold"))
    assert not without_gold["has_gold"].any() and len(without_gold) == 812 - table["has_gold"].sum()
    by_steps = triage.apply_filter(table, triage.TriageFilter(sort="steps (most first)"))
    assert by_steps["steps"].is_monotonic_decreasing
    found = triage.apply_filter(table, triage.TriageFilter(text="YOGA STRAP"))  # case-insensitive, in answers
    assert 2 in set(found["task_id"])
    ordered = failed_gitlab["task_id"].tolist()
    prev_, next_ = triage.task_neighbours(
        table, triage.TriageFilter(sites=("gitlab",), verdicts=("failure",)), ordered[1]
    )
    assert (prev_, next_) == (ordered[0], ordered[2])
    assert triage.neighbours([1, 2, 3, 4], {1, 4}, 2) == (1, 4)  # a passed task's neighbours are failed ones
    assert triage.neighbours([1, 2], {1, 2}, 1) == (None, 2)


def test_filter_fingerprint_changes_with_every_field():
    base = triage.TriageFilter()
    variants = [triage.TriageFilter(sites=("map",)), triage.TriageFilter(text="x"), triage.TriageFilter(sort="task"),
                triage.TriageFilter(has_gold="with gold"), triage.TriageFilter(labels=("wrong element",))]  # fmt: skip
    assert len({base.fingerprint(), *(v.fingerprint() for v in variants)}) == 1 + len(variants)


def test_network_filters_run_in_the_database(demo):
    counts = network.event_count(demo, "wav-demo", 107)
    hidden = network.events(demo, "wav-demo", 107)
    assert len(hidden) == counts["events"] - counts["static"]
    redirects = network.events(
        demo, "wav-demo", 107, network.EventFilter(show_static=True, status_classes=("3xx",))
    )
    assert len(redirects) > 0 and all(300 <= s < 400 for s in redirects["status"])
    detail = network.event_detail(demo, "wav-demo", 107, int(hidden["seq"].iloc[0]))
    assert detail["url"] == hidden["url"].iloc[0] and isinstance(detail["request_headers"], dict)


def test_screenshot_bytes_reads_only_regular_image_files(tmp_path):
    import os

    png = tmp_path / "a.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n")
    assert task.screenshot_bytes(str(png)) == png.read_bytes()
    (tmp_path / "secret.txt").write_text("x")
    assert task.screenshot_bytes(str(tmp_path / "secret.txt")) is None  # not an image suffix
    os.mkfifo(tmp_path / "fifo.png")
    assert task.screenshot_bytes(str(tmp_path / "fifo.png")) is None  # would block the page forever
    (tmp_path / "link.png").symlink_to(png)
    assert task.screenshot_bytes(str(tmp_path / "link.png")) is None
    assert task.screenshot_bytes(None) is None and task.screenshot_bytes(str(tmp_path / "gone.png")) is None


def test_app_cache_is_keyed_by_arguments_and_database_fingerprint(demo_db, tmp_path, monkeypatch):
    from dashboard import db

    path = tmp_path / "cache.duckdb"
    shutil.copy(demo_db, path)
    monkeypatch.setenv("TRAJREVIEW_DB", str(path))
    a = db.read(triage.triage_table, "agentlab-sample")
    b = db.read(triage.triage_table, "webarena-render-babelcloud")
    assert len(a) == 11 and len(b) == 812  # one run's rows never answer for another run
    with pytest.raises(TypeError, match="module-level core function"):
        db.read(lambda store: runs.runs_table(store))
    before = db.fingerprint()
    with Store(path) as s, s.transaction() as cur:
        cur.execute("DELETE FROM evaluations WHERE run = 'agentlab-sample' AND task_id = 191")
    assert db.fingerprint() != before
    after = db.read(triage.triage_table, "agentlab-sample")
    # The same call after the write reads the new state: the evaluation row is gone, so the verdict now
    # comes from the episode's own success flag.
    assert a.set_index("task_id").loc[191, "verdict_source"] == "source-reward"
    assert after.set_index("task_id").loc[191, "verdict_source"] == "source-success"
    assert after.set_index("task_id").loc[191, "verdict"] == "failure"
