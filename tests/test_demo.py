"""`make demo` builds its database from ../shared/data: every demo step lands, or nothing does."""

from __future__ import annotations

import pytest

from core.ingest import demo
from core.store import Store


def test_demo_database_holds_every_source(tmp_path):
    path = tmp_path / "demo.duckdb"
    progress = []
    summary = demo.build_demo(path, on_progress=lambda done, total: progress.append((done, total)))
    assert len(summary) == len(demo.demo_steps()) and progress[-1][0] == progress[-1][1]
    with Store(path, read_only=True) as s:
        runs = dict(s.query("SELECT name, source_format FROM runs"))
        assert runs == {
            "wav-demo": "wav-run",
            "wav-navigation": "wav-run",
            "agentlab-sample": "agentlab",
            "webarena-render-babelcloud": "webarena-render",
            "opagent": "opagent",
        }
        assert s.query("SELECT count(*) FROM tasks")[0][0] == 812
        assert s.query("SELECT count(*) FROM gold_sets WHERE name = 'paper-gold'")[0][0] == 1
        scored = s.query(
            "SELECT count(*) FROM evaluations WHERE run = 'wav-demo' AND source = 'webarena-verified'"
        )
        assert scored[0][0] == 2
        with_metrics = dict(s.query("SELECT run, count(*) FROM metrics GROUP BY run"))
        assert set(with_metrics) == {"agentlab-sample", "webarena-render-babelcloud", "opagent"}
        # Every failed task of the demo says why, whatever the run's source (issue 14).
        unexplained = s.query(
            "SELECT run, task_id FROM evaluations WHERE status <> 'success'"
            " AND (explanation IS NULL OR trim(explanation) = '')"
        )
        assert unexplained == []
        assert (
            s.query("SELECT count(*) FROM evaluations WHERE status <> 'success'")[0][0]
            == 3 + 1 + 1 + 260 + 228
        )
        # A network evaluator's matched event and a failed one's nearest event, on the real HARs.
        network = s.query(
            "SELECT task_id, status, matched_event_seq IS NOT NULL, nearest_event_seq IS NOT NULL"
            " FROM evaluator_results WHERE run = 'wav-navigation' AND evaluator = 'NetworkEventEvaluator'"
            " ORDER BY task_id"
        )
        assert network == [(157, "success", True, False), (677, "failure", False, True)]
        # Real multi-step alignments for the review pages.
        assert s.query("SELECT count(DISTINCT task_id) FROM alignments WHERE run = 'opagent'")[0][0] > 500
    assert not path.with_name(path.name + ".building").exists()


def test_failed_demo_build_leaves_nothing(tmp_path, monkeypatch):
    def broken(store):
        raise RuntimeError("step failed")

    monkeypatch.setattr(demo, "demo_steps", lambda: [demo._tasks, broken])
    path = tmp_path / "demo.duckdb"
    with pytest.raises(RuntimeError):
        demo.build_demo(path)
    assert not path.exists() and not path.with_name(path.name + ".building").exists()
