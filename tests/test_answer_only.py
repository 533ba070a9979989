"""Answer-only trajectories (a final answer and no browser action recorded: babelcloud's renders without
a call that acts on the page): flagged, their step metrics NULL with the reason `answer_only`, and the
paper tables say how many tasks they leave out."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from core.ingest.records import is_answer_only
from core.measure.metrics_run import NULL_REASONS, STEP_METRICS
from core.queries import paper_tables as pt
from core.store import Store


def test_answer_only_shapes():
    assert is_answer_only(["answer"]) and is_answer_only(["noop", "answer"])
    assert not is_answer_only([]) and not is_answer_only(["noop"]) and not is_answer_only(["click", "answer"])


@pytest.fixture
def measured(babelcloud_db: Path):
    with Store(babelcloud_db, read_only=True) as store:
        yield store


def test_answer_only_tasks_have_null_step_metrics_with_the_reason(measured: Store):
    """babelcloud's renders hold the agent's tool calls; 16 hold no call that acts on the page (the
    harness's early stops, sessions cut before any call, sessions that only looked before answering):
    those are answer-only, and only those."""
    flags = dict(measured.query("SELECT task_id, answer_only FROM trajectories WHERE run = 'babelcloud'"))
    verbs: dict[int, list[str | None]] = {}
    for task_id, verb in measured.query(
        "SELECT task_id, verb FROM steps WHERE run = 'babelcloud' AND kind = 'action' ORDER BY task_id, idx"
    ):
        verbs.setdefault(task_id, []).append(verb)
    assert {t for t, flag in flags.items() if flag} == {t for t in flags if is_answer_only(verbs.get(t, []))}
    assert sum(flags.values()) == 16
    rows = measured.query_dicts("SELECT * FROM metrics WHERE run = 'babelcloud'")
    assert len(rows) == 812
    for row in rows:
        reasons = orjson.loads(row["null_reasons"] or "{}")
        if flags[row["task_id"]]:
            for metric in STEP_METRICS:
                assert row[metric] is None and reasons[metric] == "answer_only"
        else:
            assert "answer_only" not in reasons.values()
    assert "answer_only" in NULL_REASONS
    # PSR is about the answer: measured wherever the task has >= 2 requirements, answer-only or not.
    assert sum(row["psr"] is not None for row in rows) == 129
    answer_only = [t for t, flag in flags.items() if flag]
    assert not measured.query(
        "SELECT 1 FROM alignments WHERE run = 'babelcloud' AND list_contains(?, task_id)", [answer_only]
    )


def test_paper_tables_say_what_they_leave_out(measured: Store):
    means = pt.metric_means(measured, ["babelcloud"], gold_set="gold", judge_config="offline").set_index(
        "metric"
    )
    with_gold = {t for (t,) in measured.query("SELECT DISTINCT task_id FROM gold_steps")}
    answer_only = {
        t
        for (t,) in measured.query(
            "SELECT task_id FROM trajectories WHERE run = 'babelcloud' AND answer_only"
        )
    }
    no_gold = 812 - len(with_gold | answer_only)
    assert means.loc["ssr", "left_out"] == 812 - means.loc["ssr", "n"] == no_gold + len(answer_only)
    assert means.loc["ssr", "left_out_why"] == f"no_gold {no_gold}; answer_only {len(answer_only)}"
    assert means.loc["repr", "left_out_why"] == f"answer_only {len(answer_only)}"
    assert means.loc["psr", "n"] == 129 and means.loc["psr", "left_out"] == 812 - 129
    steps = pt.steps_per_task(measured, ["babelcloud"], gold_set="gold", judge_config="offline")
    total = steps[steps.domain == "all"].iloc[0]
    # Table 6 counts only tasks with gold and steps to count; answer-only tasks are named, not averaged.
    assert total["tasks"] == len(with_gold - answer_only)
    assert (
        total["left_out_why"] == f"no_gold {812 - len(with_gold)}; answer_only {len(with_gold & answer_only)}"
    )


def test_migration_flags_runs_imported_before_it(tmp_path: Path):
    import duckdb

    from core.store import migrations

    path = tmp_path / "v1.duckdb"
    con = duckdb.connect(str(path))
    number, name, sql = migrations()[0]
    con.execute(sql)
    con.execute(
        "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name VARCHAR, applied_at TIMESTAMP)"
    )
    con.execute("INSERT INTO schema_version VALUES (?, ?, now())", [number, name])
    for task, verbs in ((1, ["noop", "answer"]), (2, ["click", "answer"])):
        con.execute("INSERT INTO trajectories (run, task_id, episode, is_answer, n_steps, termination) "
                    "VALUES ('r', ?, '0', TRUE, ?, 'answered')", [task, len(verbs)])  # fmt: skip
        for idx, verb in enumerate(verbs):
            con.execute(
                "INSERT INTO steps (run, task_id, episode, idx, verb) VALUES ('r', ?, '0', ?, ?)",
                [task, idx, verb],
            )
    con.close()
    with Store(path) as store:
        assert dict(store.query("SELECT task_id, answer_only FROM trajectories ORDER BY 1")) == {
            1: True,
            2: False,
        }
