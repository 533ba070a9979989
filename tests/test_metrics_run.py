"""Metrics orchestration over a store: fake runs and gold written through the shared importer plumbing,
then the real gold xlsx x the BrowserGym sample."""

from __future__ import annotations

import orjson
import pytest

from core.ingest.records import RunMeta, StepRecord, TrajectoryRecord
from core.ingest.writer import import_run
from core.measure.action_grammar import ParsedAction
from core.measure.judge import Pair, Verdict
from core.measure.judge.cascade import CascadeJudge
from core.measure.metrics_run import NULL_REASONS, run_metrics
from core.queries.paper_tables import METRIC_COLUMNS
from core.store import insert_rows, utcnow


def _gold(store, task_id, texts, alternative=0, version=1):
    with store.transaction() as cur:
        if not cur.execute("SELECT 1 FROM gold_sets WHERE name = 'g'").fetchall():
            cur.execute("INSERT INTO gold_sets (name, created_at) VALUES ('g', ?)", [utcnow()])
        insert_rows(
            cur, "gold_steps",
            [{"gold_set": "g", "version": version, "task_id": task_id, "alternative": alternative, "idx": i,
              "text": t, "created_at": utcnow()} for i, t in enumerate(texts)],
        )  # fmt: skip


def _step(idx, verb, label=None, value=None, raw=None, stated=None, error=None):
    action = ParsedAction(raw=raw or f"{verb} [{idx}]", verb=verb, element_id=str(100 + idx), element_role="link",
                          element_label=label, value=value)  # fmt: skip
    from core.measure.action_grammar import readable

    return StepRecord(idx=idx, executed_action=action.raw, action=action, readable=readable(action),
                      stated_action=stated, error=error)  # fmt: skip


TABLE1_GOLD = [
    "Click on the 'Products' link",
    "Click on the 'Electronics' link",
    "Click the 'Smartphones' filter",
]


def _table1_run(store, fmt="jsonl"):
    steps = [
        _step(0, "click", "About Us", stated="click [100]", raw="click [100]"),
        _step(1, "click", "Products", stated="click [101]", raw="click [101]"),
        _step(2, "click", "Electronics", stated="click [102]", raw="click [102]"),
        _step(3, "scroll", raw="scroll [down]", stated="scroll [down]"),
        _step(4, "click", "Smartphones", stated="click [999]", raw="click [104]"),
        _step(5, "go_back", raw="go_back", stated="go_back"),
    ]
    steps[3].action.direction = "down"
    steps[3].readable = "Scroll down"
    steps[5].readable = "Go back"
    trajectories = [
        TrajectoryRecord(
            task_id=21, steps=steps, final_answer="Massachusetts", termination="answered", reward=0.0
        ),
        TrajectoryRecord(task_id=7, steps=[], final_answer=None, termination="error"),  # first row: no gold
    ]
    import_run(store, RunMeta(name="r", source_format=fmt, source_path="x"), trajectories)
    _gold(store, 21, TABLE1_GOLD)
    _gold(store, 21, ["Click on the 'About Us' link"], alternative=1)
    with store.transaction() as cur:
        insert_rows(cur, "requirements", [
            {"task_id": 21, "source": "import", "idx": i, "text": t}
            for i, t in enumerate(["Rhode Island", "Massachusetts", "New York"])
        ])  # fmt: skip


def test_table1_through_the_store(store):
    _table1_run(store)
    summary = run_metrics(store, "r", "g", CascadeJudge("offline"))
    assert summary.tasks == 2 and summary.tasks_with_gold == 1
    row = store.query_dicts("SELECT * FROM metrics WHERE task_id = 21")[0]
    assert row["ssr"] == 1.0 and row["alternative"] == 0 and row["n_gold"] == 3 and row["n_agent"] == 6
    assert (row["rr"], row["deviations"], row["recoveries"], row["mean_recovery_cost"]) == (1.0, 2, 2, 2.0)
    assert row["repr"] == 1.0
    assert row["psr"] == pytest.approx(1 / 3)
    assert row["ear"] == pytest.approx(5 / 6)  # the stated click [999] was not executed
    assert row["answer_category"] == "produced_answer" and row["success"] is False
    aligned = store.query(
        "SELECT gold_idx, agent_idx, source FROM alignments WHERE task_id = 21 ORDER BY gold_idx"
    )
    assert [(g, a) for g, a, _ in aligned] == [(0, 1), (1, 2), (2, 4)]
    empty = store.query_dicts("SELECT * FROM metrics WHERE task_id = 7")[0]
    reasons = orjson.loads(empty["null_reasons"])
    assert empty["ssr"] is None and reasons["ssr"] == "no_gold"
    assert empty["repr"] is None and reasons["repr"] == "no_agent_steps"
    assert empty["answer_category"] == "early_stop"
    assert set(reasons.values()) <= set(NULL_REASONS)


def test_rerun_replaces_rows(store):
    _table1_run(store)
    run_metrics(store, "r", "g", CascadeJudge("offline"))
    run_metrics(store, "r", "g", CascadeJudge("offline"))
    assert store.query("SELECT count(*) FROM metrics")[0][0] == 2
    assert store.query("SELECT count(*) FROM alignments")[0][0] == 3
    run_metrics(store, "r", "g", CascadeJudge("offline"), preset="paper-code")
    assert store.query("SELECT count(*) FROM metrics")[0][0] == 4


def test_browsergym_ear_counts_browser_errors(store):
    steps = [
        _step(0, "click", "A", raw="click('100')"),
        _step(1, "click", "B", raw="click('101')", error="timeout"),
    ]
    import_run(store, RunMeta(name="b", source_format="agentlab", source_path="x"),
               [TrajectoryRecord(task_id=5, steps=steps, termination="truncated")])  # fmt: skip
    _gold(store, 5, ["Click on 'A'"])
    run_metrics(store, "b", "g", CascadeJudge("offline"))
    assert store.query("SELECT ear FROM metrics")[0][0] == 0.5


class UnresolvingJudge:
    """Answers every gold/agent pair 'unresolved', as after an API failure; the rest by rule."""

    name = "cascade"

    def __init__(self):
        self.inner = CascadeJudge("offline")

    def judge_many(self, pairs, on_progress=None):
        answers = self.inner.judge_many(pairs)
        return [
            Verdict(None, "llm") if p.kind == "gold_vs_agent" else v
            for p, v in zip(pairs, answers, strict=True)
        ]


def test_api_failure_makes_metric_none_and_flagged(store):
    _table1_run(store)
    run_metrics(store, "r", "g", UnresolvingJudge())
    row = store.query_dicts("SELECT * FROM metrics WHERE task_id = 21")[0]
    assert row["ssr"] is None and row["rr"] is None and row["unresolved_pairs"] > 0
    assert orjson.loads(row["null_reasons"])["ssr"] == "unresolved_pairs"
    assert row["repr"] == 1.0  # metrics that needed no unresolved pair are still computed
    assert isinstance(Pair("gold_vs_agent", "a", "b"), Pair)


def test_unknown_run_or_gold_is_one_line_error(store):
    from core.errors import TrajreviewError

    with pytest.raises(TrajreviewError, match="no run named"):
        run_metrics(store, "nope", "g", CascadeJudge("offline"))


# -- real data -----------------------------------------------------------------------------------
def test_real_gold_x_browsergym_sample(tasks_store, shared_data):
    from core.ingest.agentlab import import_agentlab
    from core.ingest.gold import import_gold

    import_gold(tasks_store, shared_data / "human-gold" / "Golden Human Trajectories.xlsx", "paper")
    import_agentlab(tasks_store, shared_data / "browsergym-run", "bg")
    summary = run_metrics(tasks_store, "bg", "paper", CascadeJudge("offline"))
    both = tasks_store.query(
        """SELECT count(DISTINCT t.task_id) FROM trajectories t
           WHERE t.run = 'bg' AND t.is_answer AND t.task_id IN (SELECT task_id FROM gold_steps WHERE gold_set = 'paper')"""
    )[0][0]
    rows = tasks_store.query_dicts("SELECT * FROM metrics WHERE run = 'bg'")
    assert both > 0 and summary.tasks_with_gold == both
    assert len([r for r in rows if r["n_gold"] is not None]) == both
    # Every NULL metric carries a documented reason.
    for row in rows:
        reasons = orjson.loads(row["null_reasons"]) if row["null_reasons"] else {}
        for metric in METRIC_COLUMNS:
            if row[metric] is None:
                assert reasons.get(metric) in NULL_REASONS, (row["task_id"], metric)
        assert all(0.0 <= row[k] <= 1.0 for k in ("ssr", "rr", "repr", "psr", "ear") if row[k] is not None)
    # Offline: nothing unresolved, and the cheap stages decide most pairs.
    assert summary.unresolved_tasks == 0 and summary.llm_calls == 0
    assert summary.stages.get("offline", 0) <= 0.25 * summary.pairs
    # Task 188 answered '$365.42' and the verified requirement is 365.42: the answer is counted as produced.
    task188 = next(r for r in rows if r["task_id"] == 188)
    assert task188["answer_category"] == "produced_answer"


@pytest.mark.slow
def test_metrics_cli(store, monkeypatch):
    from typer.testing import CliRunner

    from core.cli.main import app

    _table1_run(store)
    path = store.path
    store.close()
    monkeypatch.delenv("TRAJREVIEW_LLM_MODEL", raising=False)
    runner = CliRunner()
    result = runner.invoke(app, ["--db", str(path), "metrics", "--run", "r", "--gold", "g"])
    assert result.exit_code == 0, result.output
    assert "decided by stage:" in result.output and "LLM calls 0" in result.output
    refused = runner.invoke(
        app, ["--db", str(path), "metrics", "--run", "r", "--gold", "g", "--judge", "cascade"]
    )
    assert refused.exit_code != 0
    assert "TRAJREVIEW_LLM_MODEL" in str(refused.exception)


@pytest.mark.slow
def test_metrics_cli_counts_what_the_llm_could_not_decide(store, monkeypatch):
    from fake_openai import FakeOpenAI
    from typer.testing import CliRunner

    from core.cli.main import app

    _table1_run(store)
    path = store.path
    store.close()
    with FakeOpenAI() as fake:
        chat = fake.handle_chat

        def prose_about_smartphones(handler, body):  # every question about that step gets prose, not JSON
            if "Smartphones" not in body["messages"][-1]["content"]:
                return chat(handler, body)
            with fake.lock:
                fake.requests.append(body)
            return handler._send(200, fake.completion("They look alike to me."))

        fake.handle_chat = prose_about_smartphones
        monkeypatch.setenv("TRAJREVIEW_LLM_MODEL", "fake")
        monkeypatch.setenv("TRAJREVIEW_LLM_BASE_URL", fake.base_url)
        result = CliRunner().invoke(
            app, ["--db", str(path), "metrics", "--run", "r", "--gold", "g", "--judge", "llm"]
        )
        malformed = sum("Smartphones" in q["messages"][-1]["content"] for q in fake.questions)
    assert result.exit_code == 0, result.output
    line = next(x for x in result.output.splitlines() if x.startswith("LLM (json_schema, probe): "))
    asked = len(fake.questions)
    assert (
        f"{asked} questions asked, {asked - malformed} answered, {malformed} could not decide ({malformed} malformed)"
        in line
    )
    assert malformed > 0 and "1 tasks with unresolved pairs" in result.output


# -- pure per-task computation with a scripted judge ----------------------------------------------
def _task(gold, agent, **extra):
    from core.measure.metrics_run import AgentStep, TaskInput

    steps = [AgentStep(i, t, t, stated=f"click [{i}]", executed=f"click [{i}]", error=None, parsed=True)
             for i, t in enumerate(agent)]  # fmt: skip
    return TaskInput(task_id=1, episode="0", steps=steps, final_answer=None, termination="answered",
                     success=None, reward=None, gold_version=1, gold=dict(enumerate(gold)), **extra)  # fmt: skip


def _scripted(pair):
    """gold_vs_agent: equal texts are equivalent, a '?' in either is unresolved; the rest by rule."""
    if pair.kind == "gold_vs_agent":
        if "?" in pair.a or "?" in pair.b:
            return Verdict(None, "llm")
        return Verdict(pair.a == pair.b, "rule")
    return CascadeJudge("offline").judge_many([pair])[0]


def test_unresolved_alternative_is_not_skipped_as_if_different():
    from core.measure.metrics import PRESETS
    from core.measure.metrics_run import compute_task

    # Alternative 0 scores 1/2; alternative 1 cannot be scored (its only pair is unresolved) and might
    # have scored 1.0: keeping alternative 0 would count the unanswered pair as "different".
    task = _task([["A", "B"], ["A?"]], ["A", "C"])
    values, _, reasons, _, unresolved, _ = compute_task(task, _scripted, PRESETS["default"])
    assert values["ssr"] is None and values["rr"] is None and reasons["ssr"] == "unresolved_pairs"
    assert unresolved > 0
    # A scored alternative that already reaches 1.0 is the best whatever the unresolved one says.
    task = _task([["A", "C"], ["A?"]], ["A", "C"])
    values, *_ = compute_task(task, _scripted, PRESETS["default"])
    assert values["ssr"] == 1.0 and values["alternative"] == 0
    # Ties keep the lowest alternative.
    task = _task([["A", "X"], ["C", "Y"]], ["A", "C"])
    values, *_ = compute_task(task, _scripted, PRESETS["default"])
    assert values["ssr"] == 0.5 and values["alternative"] == 0


def test_ear_missing_stated_or_unparsed_executed_is_a_mismatch_whatever_the_judge():
    from dataclasses import replace

    from core.measure.metrics import PRESETS
    from core.measure.metrics_run import compute_task, task_pairs

    task = _task([["A"]], ["A", "B", "C"])
    task.steps[1] = replace(task.steps[1], stated=None)
    task.steps[2] = replace(task.steps[2], executed="None", parsed=False)

    def llm_says_yes(pair):  # the `llm` configuration sends every pair to the model
        return Verdict(True, "llm") if pair.kind == "stated_vs_executed" else _scripted(pair)

    values, *_ = compute_task(task, llm_says_yes, PRESETS["default"])
    assert values["ear"] == pytest.approx(1 / 3)
    assert [p.a for p in task_pairs(task) if p.kind == "stated_vs_executed"] == ["click [0]"]
