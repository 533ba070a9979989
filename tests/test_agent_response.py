"""Agent-response parsing and lint: built from the real demo responses and the official answer variants."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError
from webarena_verified.core.evaluation.evaluators.agent_response_evaluator import AgentResponseEvaluator
from webarena_verified.types.agent_response import FinalAgentResponse

from core.scoring.agent_response import agent_response_row, check_agent_response


@pytest.fixture(scope="session")
def demo_responses(shipped_data: Path) -> dict[int, str]:
    run = shipped_data / "webarena-verified" / "demo-run"
    return {tid: (run / str(tid) / "agent_response.json").read_text() for tid in (107, 108)}


@pytest.fixture(scope="session")
def exact_answers(shipped_data: Path) -> dict[int, list]:
    data = json.loads(
        (shipped_data / "webarena-verified/test-assets/e2e_test_retrieved_data.json").read_text()
    )
    return {int(k): v["exact_match"] for k, v in data.items()}


def _rules(text: str) -> list[str]:
    return [f.rule for f in check_agent_response(text).lint]


def _engine_view(text: str):
    """What the official evaluator extracts from raw text (its own method)."""
    return AgentResponseEvaluator._get_actual_agent_response_dict(None, text)  # type: ignore[arg-type]


def test_real_demo_responses_are_clean(demo_responses):
    for text in demo_responses.values():
        check = check_agent_response(text)
        assert check.lint == [] and check.parse_error is None
        assert check.parsed == json.loads(text)


_TYPE_RULES = {
    "missing_field",
    "invalid_task_type",
    "invalid_status",
    "nested_array",
    "retrieved_data_not_list",
    "schema",
}


def test_lint_agrees_with_the_official_model_on_every_answer(exact_answers):
    """Each canonical answer wrapped in a response: the lint flags a type error iff the official model rejects it."""
    assert len(exact_answers) > 100
    accepted = rejected = 0
    for task_id, answer in exact_answers.items():
        items = answer if isinstance(answer, list) else [answer]
        text = json.dumps(
            {"task_type": "RETRIEVE", "status": "SUCCESS", "retrieved_data": items, "error_details": None}
        )
        try:
            FinalAgentResponse.model_validate_json(text)
            official_ok = True
        except ValidationError:
            official_ok = False
        flagged = set(_rules(text)) & _TYPE_RULES
        assert official_ok is (not flagged), (task_id, flagged)
        accepted += official_ok
        rejected += not official_ok
    assert accepted and rejected  # the variants exercise both sides (alternatives are nested lists)


def test_code_fence_and_prose_follow_the_engine(demo_responses):
    body = demo_responses[108].strip()
    fenced = f"Here is my answer:\n```json\n{body}\n```\nThanks."
    check = check_agent_response(fenced)
    assert check.parsed == _engine_view(fenced) == json.loads(body)  # the engine unwraps fences too
    assert [f.rule for f in check.lint] == ["code_fence", "prose_around_json"]
    assert check.parse_error is None

    prose = f"The final answer is {body} as requested."
    check = check_agent_response(prose)
    assert isinstance(_engine_view(prose), str)  # the engine cannot read it
    assert check.parsed == json.loads(body) and check.parse_error  # we show what was meant, and say it failed
    assert "prose_around_json" in [f.rule for f in check.lint]


def test_schema_rules(demo_responses):
    good = json.loads(demo_responses[108])

    def variant(**changes) -> str:
        obj = {**good, **changes}
        return json.dumps({k: v for k, v in obj.items() if v is not ...})

    assert _rules(variant(task_type=...)) == ["missing_field"]
    assert _rules(variant(task_type="FETCH")) == ["invalid_task_type"]
    assert _rules(variant(status="DONE")) == ["invalid_status"]
    assert _rules(variant(task_type="retrieve", status="success")) == []  # the engine upper-cases
    assert _rules(variant(retrieved_data=[1, "two"])) == ["mixed_item_types"]
    assert _rules(variant(retrieved_data=[{"month": "Jan"}, {"count": 1}])) == ["mixed_object_keys"]
    assert _rules(variant(retrieved_data=[[1, 2]])) == ["nested_array"]
    assert _rules(variant(retrieved_data="Jan")) == ["retrieved_data_not_list"]
    assert _rules(variant(retrieved_data=None)) == ["retrieved_data_missing"]
    assert _rules(variant(error_details="oops")) == ["error_details_on_success"]
    assert _rules(variant(status="NOT_FOUND_ERROR", retrieved_data=None)) == ["error_details_missing"]
    assert _rules(variant(task_type="NAVIGATE")) == ["retrieved_data_not_null"]
    assert _rules(variant(task_type="MUTATE", retrieved_data=[])) == []
    assert _rules(variant(confidence=0.9)) == ["unknown_field"]
    legacy = {"performed_operation": "RETRIEVE", **{k: v for k, v in good.items() if k != "task_type"}}
    assert _rules(json.dumps(legacy)) == ["legacy_keys"]
    assert "legacy_keys" in _rules(json.dumps({"action": "retrieve", "results": good["retrieved_data"]}))


def test_unparseable_and_empty():
    assert _rules("") == ["empty"]
    assert _rules("I could not find it.") == ["not_json"]
    assert _rules("[1, 2]") == ["not_object"]
    assert check_agent_response(None).lint[0].rule == "missing"
    hostile = "{" * 50_000 + "<script>alert(1)</script>" + "}" * 50_000
    assert "not_json" in _rules(hostile)  # bounded search, no crash


def test_row_shape(demo_responses):
    row = agent_response_row("r", 107, check_agent_response(demo_responses[107]))
    assert row["raw_text"] == demo_responses[107]
    assert json.loads(row["parsed"])["task_type"] == "NAVIGATE"
    assert json.loads(row["lint"]) == [] and row["n_lint_issues"] == 0
    bad = agent_response_row("r", 1, check_agent_response("nope"))
    assert bad["parsed"] is None and bad["parse_error"] and bad["n_lint_issues"] == 1
