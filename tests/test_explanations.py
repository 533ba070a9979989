"""Each kind of failure gets a sentence with the right content, on constructed failing cases scored for real."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.scoring import explanations
from core.scoring.engine import ScoringInput, score_inputs
from tests.test_scoring_conformance import MATRIX_CONFIG, _entry


@pytest.fixture(scope="session")
def template(shipped_data: Path) -> dict:
    return json.loads(
        (shipped_data / "webarena-verified" / "test-assets" / "har_entry_template.json").read_text()
    )


def _score(task_id: int, response: dict | str | None, trace: list[dict]):
    text = response if isinstance(response, str) or response is None else json.dumps(response)
    [score] = score_inputs(
        [ScoringInput(task_id=task_id, agent_response=text, har_entries=trace)],
        config=MATRIX_CONFIG,
        workers=1,
    )
    return score


def _failed(score, evaluator: str):
    rows = [r for r in score.evaluator_results if r.evaluator == evaluator and r.status != "success"]
    assert rows, f"expected a failing {evaluator}"
    return rows[0]


def test_status_mismatch(template: dict) -> None:
    # Task 22 expects NOT_FOUND_ERROR; the agent claims success.
    score = _score(
        22,
        {"task_type": "RETRIEVE", "status": "SUCCESS", "retrieved_data": None},
        [_entry(template, "GET", "/")],
    )
    row = _failed(score, "AgentResponseEvaluator")
    assert "status: expected NOT_FOUND_ERROR, agent said SUCCESS" in row.explanation
    assert row.explanation in score.explanation


def test_retrieved_data_missing_and_unexpected(template: dict) -> None:
    # Task 3 expects 'Quest Lumaflex™ Band' and one of three stasis balls.
    answer = {
        "task_type": "RETRIEVE",
        "status": "SUCCESS",
        "retrieved_data": ["Sprite Yoga Strap", "Cruise Stasis Ball 65 cm"],
    }
    row = _failed(_score(3, answer, [_entry(template, "GET", "/")]), "AgentResponseEvaluator")
    assert row.explanation.startswith("retrieved_data: missing 'quest lumaflex")
    assert "unexpected 'sprite yoga strap'" in row.explanation
    assert "stasis" not in row.explanation  # an accepted alternative is not reported


def test_no_matching_post_names_nearest_event(template: dict) -> None:
    # Task 448 expects POST __GITLAB__/-/profile answered 302; the agent's POST got 200.
    trace = [
        _entry(template, "GET", "__GITLAB__/-/profile/account"),
        _entry(template, "POST", "__GITLAB__/-/profile/preferences", status=200, post={"x": "1"}),
    ]
    row = _failed(_score(448, {"task_type": "MUTATE", "status": "SUCCESS"}, trace), "NetworkEventEvaluator")
    assert row.explanation.startswith(
        "no POST to __GITLAB__/-/profile; nearest: POST __GITLAB__/-/profile/preferences"
    )
    assert "(status 200, expected 302)" in row.explanation
    assert row.nearest_event_seq == 1 and row.matched_event_seq is None


def test_status_and_body_differences_of_the_candidate(template: dict) -> None:
    post = {"user[website_url]": "https://wrong.example"}
    trace = [_entry(template, "POST", "__GITLAB__/-/profile", status=200, post=post)]
    row = _failed(_score(448, {"task_type": "MUTATE", "status": "SUCCESS"}, trace), "NetworkEventEvaluator")
    assert "(event 0)" in row.explanation
    assert "status: expected 302, got 200" in row.explanation
    assert (
        "post_data user[website_url]: expected 'https://egg.tart.com', got 'https://wrong.example'"
        in row.explanation
    )
    assert row.nearest_event_seq == 0


def test_query_param_mismatch(template: dict) -> None:
    # Task 156 expects the merge requests dashboard filtered by assignee_username=byteblaze.
    trace = [_entry(template, "GET", "__GITLAB__/dashboard/merge_requests?assignee_username=someone")]
    row = _failed(_score(156, {"task_type": "NAVIGATE", "status": "SUCCESS"}, trace), "NetworkEventEvaluator")
    assert "query param assignee_username: expected 'byteblaze', got 'someone'" in row.explanation


def test_last_navigation_elsewhere(template: dict) -> None:
    trace = [
        _entry(template, "GET", "__GITLAB__/dashboard/merge_requests?assignee_username=byteblaze"),
        _entry(template, "GET", "__GITLAB__/dashboard/todos"),
    ]
    row = _failed(_score(156, {"task_type": "NAVIGATE", "status": "SUCCESS"}, trace), "NetworkEventEvaluator")
    assert row.explanation == (
        "last navigation was __GITLAB__/dashboard/todos, expected __GITLAB__/dashboard/merge_requests"
        "?assignee_username=byteblaze"
    )
    assert row.nearest_event_seq == 1


def test_match_is_located(template: dict) -> None:
    trace = [
        _entry(template, "GET", "__GITLAB__/-/profile"),
        _entry(
            template,
            "POST",
            "__GITLAB__/-/profile",
            status=302,
            post={"user[website_url]": "https://egg.tart.com"},
        ),
    ]
    score = _score(448, {"task_type": "MUTATE", "status": "SUCCESS", "retrieved_data": None}, trace)
    assert score.status == "success"
    network = [r for r in score.evaluator_results if r.evaluator == "NetworkEventEvaluator"]
    assert [r.matched_event_seq for r in network] == [1]
    assert all(r.explanation is None for r in score.evaluator_results)


def test_hostile_values_are_clipped(template: dict) -> None:
    html = "<html><body>" + "<script>alert(1)</script>\n" * 200 + "</body></html>"
    score = _score(3, html, [_entry(template, "GET", "/")])
    row = _failed(score, "AgentResponseEvaluator")
    assert len(row.explanation) < 200
    assert "\n" not in row.explanation and row.explanation.endswith("…'")


def test_nearest_event_prefers_method_and_path() -> None:
    events = [
        explanations.EventBrief(0, "POST", "__GITLAB__/a/issues", 302),
        explanations.EventBrief(1, "GET", "__GITLAB__/a/issues/new", 200),
        explanations.EventBrief(2, "GET", "__GITLAB__/a/issues", 200),
    ]
    assert explanations.nearest_event("GET", "__GITLAB__/a/issues", events).seq == 2
    assert explanations.nearest_event("POST", "__GITLAB__/a/issues", events).seq == 0
    assert explanations.nearest_event("PUT", "__GITLAB__/a/issues/new?x=1", events).seq == 1
    assert explanations.nearest_event("GET", "__GITLAB__/x", []) is None
