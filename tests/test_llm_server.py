"""The LLM stages against a real OpenAI-compatible server: llama-cpp-python's server on SmolLM2-135M
(tests/llm_server_support.py), real questions from the OpAgent run and the paper's human gold, sent
through the product's own client.

Deselected by default; `pytest -m llm_server` runs them (`.ci/run` does, after the main suite). They
check the plumbing, not the verdicts: a 135M model answers nearly everything "equivalent". The server
has one slot, so every request waits for the one before it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest
from llm_server_support import RunningServer, llama_server

from core.measure.judge.cascade import CascadeJudge
from core.measure.judge.llm import LLMStage
from core.measure.llm.cache import JudgmentCache
from core.measure.llm.client import LLMClient
from core.measure.llm.config import LLMConfig
from core.measure.llm.diagnosis import CAUSES, DiagnosisReply, FailedTask, diagnosis_kind
from core.measure.llm.server import server_support
from core.measure.metrics_run import run_metrics
from core.paths import shared_data_dir
from core.store import Store

pytestmark = [pytest.mark.llm_server, pytest.mark.slow, pytest.mark.server]

# Two OpAgent tasks with paper gold whose cascade leaves 4 pairs to an LLM (3 gold/agent steps, 1
# requirement in the answer); 102 failed.
TASKS = [102, 164]
FAILED = 102


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> RunningServer:
    with llama_server(tmp_path_factory.mktemp("llama") / "server.log") as running:
        yield running


@pytest.fixture(scope="module")
def opagent_db(tmp_path_factory) -> Path:
    from core.ingest.gold import import_gold
    from core.ingest.opagent import import_opagent
    from core.ingest.tasks import import_tasks

    path = tmp_path_factory.mktemp("opagent") / "opagent.duckdb"
    data = shared_data_dir()
    with Store(path) as store:
        import_tasks(store)
        import_gold(store, data / "human-gold" / "Golden Human Trajectories.xlsx", "paper-gold")
        import_opagent(store, data / "oagent-run", "opagent", paradigm="step_by_step")
    return path


@pytest.fixture
def opagent(opagent_db: Path, tmp_path: Path):
    path = tmp_path / "copy.duckdb"
    shutil.copy(opagent_db, path)
    with Store(path) as store:
        yield store


def config(server: RunningServer, model: str = "smollm2", **overrides) -> LLMConfig:
    # The server serves its one model under any name: a new name is a new detection.
    values = {"base_url": server.base_url, "api_key": "none", "model": model, "concurrency": 2,
              "timeout_s": 120.0, "question_timeout_s": 300.0, **overrides}  # fmt: skip
    return LLMConfig(**values)


def test_support_is_detected_from_openapi_once(server):
    before = server.chat_requests()
    support, probes = server_support(config(server, "smollm2-detect"))
    assert (support.mode, support.detected_by, support.token_param) == (
        "json_object_schema", "openapi+probe", "max_tokens"
    )  # fmt: skip
    assert probes == 1 and server.chat_requests() == before + 1
    again, probes_again = server_support(config(server, "smollm2-detect"))
    assert again == support and probes_again == 0 and server.chat_requests() == before + 1


def test_without_openapi_the_real_500_on_json_schema_falls_back_once(server, monkeypatch):
    """The issue's failure: json_schema answered with HTTP 500. The probes find json_object instead, with
    one request for json_schema (not retried)."""
    monkeypatch.setattr("core.measure.llm.server._from_openapi", lambda _config: None)
    before, before_500 = server.chat_requests(), server.chat_requests(500)
    support, probes = server_support(config(server, "smollm2-no-openapi"))
    assert (support.mode, support.detected_by, probes) == ("json_object", "probe", 2)
    assert server.chat_requests() == before + 2 and server.chat_requests(500) == before_500 + 1


def test_cascade_on_real_pairs_answers_in_json_mode_and_caches(server, opagent):
    judge = CascadeJudge("cascade", store=opagent, llm=LLMStage(config(server)))
    before = server.chat_requests()
    first = run_metrics(opagent, "opagent", "paper-gold", judge, task_ids=TASKS)
    stats = first.llm
    assert stats.asked == 4 and stats.answered >= 1 and stats.answered + stats.could_not_decide == 4
    assert stats.mode == "json_object_schema" and set(stats.by_mode) == {"json_object_schema"}
    assert server.chat_requests() - before == stats.requests + stats.detection_requests
    rows = opagent.query("SELECT kind, verdict, answer FROM judgments ORDER BY kind")
    assert len(rows) == stats.answered
    assert {kind for kind, _, _ in rows} <= {"gold_vs_agent", "requirement_in_answer"}
    assert all(orjson.loads(answer)["equivalent"] is verdict for _, verdict, answer in rows)

    again = CascadeJudge("cascade", store=opagent, llm=LLMStage(config(server)))
    before = server.chat_requests()
    second = run_metrics(opagent, "opagent", "paper-gold", again, task_ids=TASKS)
    # Only what the first run could not decide is asked again; every answer comes from the cache.
    assert second.llm.cache_hits == stats.answered and second.llm.asked == stats.could_not_decide
    assert server.chat_requests() - before == second.llm.requests


def test_diagnosis_of_a_failed_task_is_parsed_and_cached(server, opagent):
    (intent,) = opagent.query("SELECT intent FROM tasks WHERE task_id = ?", [FAILED])[0]
    (why,) = opagent.query(
        "SELECT explanation FROM evaluations WHERE run = 'opagent' AND task_id = ?", [FAILED]
    )[0]
    steps = opagent.query(
        "SELECT coalesce(readable, executed_action) FROM steps WHERE run = 'opagent' AND task_id = ? ORDER BY idx",
        [FAILED],
    )
    task = FailedTask(intent, "\n".join(f"{i}. {text}" for i, (text,) in enumerate(steps, 1)), why)
    kinds = {"diagnosis": diagnosis_kind()}
    cache = JudgmentCache(opagent, model="smollm2", kinds=kinds)
    client = LLMClient(config(server))
    (answer,) = client.ask_many([task], kinds, cache=cache)
    assert isinstance(answer.reply, DiagnosisReply), answer.problem
    assert answer.reply.cause in CAUSES and answer.reply.reasoning.strip()
    assert client.stats.by_mode == {"json_object_schema": client.stats.requests}
    before = server.chat_requests()
    (cached,) = LLMClient(config(server)).ask_many([task], kinds, cache=cache)
    assert cached.cached and cached.reply == answer.reply and server.chat_requests() == before


def test_an_answer_cut_at_the_cap_could_not_decide(server, opagent):
    """Real replies cut by the server at 4 tokens: unresolved, not stored, and the metrics that needed
    them are NULL for that reason."""
    judge = CascadeJudge("cascade", store=opagent, llm=LLMStage(config(server, max_tokens=4)))
    summary = run_metrics(opagent, "opagent", "paper-gold", judge, task_ids=TASKS)
    assert summary.llm.unresolved == {"cut off at the output cap": 4} and summary.llm.answered == 0
    assert opagent.query("SELECT count(*) FROM judgments")[0][0] == 0
    reasons = opagent.query(
        "SELECT null_reasons FROM metrics WHERE run = 'opagent' AND task_id = ? AND judge_config = 'cascade'",
        [FAILED],
    )[0][0]
    assert "unresolved_pairs" in orjson.loads(reasons).values()


def test_a_slow_answer_could_not_decide(server, opagent):
    # All 4 questions go out at once: asked one after another, those after two silent ones would not be
    # sent at all (the server would count as stopped), another way of not deciding.
    stage = LLMStage(config(server, concurrency=4, question_timeout_s=0.05))
    judge = CascadeJudge("cascade", store=opagent, llm=stage)
    summary = run_metrics(opagent, "opagent", "paper-gold", judge, task_ids=TASKS)
    assert summary.llm.answered == 0 and summary.llm.unresolved == {"timed out": 4}
    assert opagent.query("SELECT count(*) FROM judgments")[0][0] == 0
    assert summary.unresolved_tasks == 2


def test_diagnose_asks_a_real_server_what_the_rules_leave_open(server, opagent):
    """`diagnose_run` on the whole OpAgent run: the tasks no rule decides go to the real server as
    diagnosis questions; each reply becomes a `model` row with its reasoning, or stays undecided saying the
    model could not decide. Nothing the rules decided changes."""
    from core.diagnose.run import diagnose_run

    diagnose_run(opagent, "opagent")
    by_rules = opagent.query(
        "SELECT task_id, cause FROM failure_causes WHERE run = 'opagent' AND is_primary AND cause <> 'undecided'"
        " ORDER BY 1"
    )
    open_tasks = [t for (t,) in opagent.query(
        "SELECT task_id FROM failure_causes WHERE run = 'opagent' AND is_primary AND cause = 'undecided' ORDER BY 1"
    )]  # fmt: skip
    assert open_tasks
    before = server.chat_requests()
    result = diagnose_run(opagent, "opagent", llm=config(server))
    assert result.llm.asked == len(open_tasks) and server.chat_requests() > before
    rows = opagent.query(
        "SELECT task_id, cause, source, summary, reasoning FROM failure_causes"
        " WHERE run = 'opagent' AND is_primary AND list_contains(?, task_id) ORDER BY 1",
        [open_tasks],
    )
    assert [r[0] for r in rows] == open_tasks
    for _, cause, source, summary, reasoning in rows:
        assert source == "model"
        if cause == "undecided":
            assert "the model could not decide" in summary
        else:
            assert cause in CAUSES and reasoning.strip() and summary.startswith("Suggested by a model:")
    assert (
        opagent.query(
            "SELECT task_id, cause FROM failure_causes WHERE run = 'opagent' AND is_primary AND source = 'rule'"
            " AND cause <> 'undecided' ORDER BY 1"
        )
        == by_rules
    )
    assert (
        result.llm.answered == opagent.query("SELECT count(*) FROM judgments WHERE kind = 'diagnosis'")[0][0]
    )
