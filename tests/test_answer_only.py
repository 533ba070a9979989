"""Answer-only trajectories (babelcloud: one summarising step holding the final answer): flagged, their
step metrics NULL with the reason `answer_only`, and the paper tables say how many tasks they leave out."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from core.ingest.gold import import_gold
from core.ingest.records import is_answer_only
from core.ingest.webarena_render import import_webarena_render
from core.measure.judge.cascade import make_judge
from core.measure.metrics_run import NULL_REASONS, STEP_METRICS, run_metrics
from core.queries import paper_tables as pt
from core.store import Store

BABELCLOUD = ("webarena-render", "babelcloud__webarena", "gbox", "trajectories")


def test_answer_only_shapes():
    assert is_answer_only(["answer"]) and is_answer_only(["noop", "answer"])
    assert not is_answer_only([]) and not is_answer_only(["noop"]) and not is_answer_only(["click", "answer"])


@pytest.fixture(scope="module")
def measured(tasks_db: Path, shared_data: Path, tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("answer_only") / "db.duckdb"
    shutil.copy(tasks_db, path)
    with Store(path) as store:
        import_webarena_render(store, shared_data.joinpath(*BABELCLOUD), "babelcloud")
        import_gold(store, shared_data / "human-gold" / "Golden Human Trajectories.xlsx", "gold")
        run_metrics(store, "babelcloud", "gold", make_judge("offline", store, use_embeddings=False))
    with Store(path, read_only=True) as store:
        yield store


def test_babelcloud_is_answer_only_and_its_step_metrics_are_null_with_the_reason(measured: Store):
    steps = dict(measured.query("SELECT verb, count(*) FROM steps WHERE run = 'babelcloud' GROUP BY 1"))
    assert set(steps) == {"answer", "noop"}  # no browser action recorded in any render
    assert (
        measured.query("SELECT count(*) FROM trajectories WHERE run = 'babelcloud' AND answer_only")[0][0]
        == 812
    )
    rows = measured.query_dicts("SELECT * FROM metrics WHERE run = 'babelcloud'")
    assert len(rows) == 812
    for row in rows:
        reasons = orjson.loads(row["null_reasons"])
        for metric in STEP_METRICS:
            assert row[metric] is None and reasons[metric] == "answer_only"
    assert "answer_only" in NULL_REASONS
    # PSR is about the answer: still measured where the task has >= 2 requirements.
    assert sum(row["psr"] is not None for row in rows) == 129
    assert measured.query("SELECT count(*) FROM alignments WHERE run = 'babelcloud'")[0][0] == 0


def test_paper_tables_say_what_they_leave_out(measured: Store):
    means = pt.metric_means(measured, ["babelcloud"], gold_set="gold", judge_config="offline").set_index(
        "metric"
    )
    assert means.loc["ssr", "n"] == 0 and means.loc["ssr", "left_out"] == 812
    assert means.loc["ssr", "left_out_why"] == "answer_only 812"
    assert means.loc["psr", "n"] == 129 and means.loc["psr", "left_out"] == 812 - 129
    steps = pt.steps_per_task(measured, ["babelcloud"], gold_set="gold", judge_config="offline")
    total = steps[steps.domain == "all"].iloc[0]
    assert total["tasks"] == 0 and total["left_out_why"] == "answer_only 652; no_gold 160"


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
