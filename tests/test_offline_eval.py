"""WebArena's original evaluators offline: their semantics, their agreement with the real runs' own
verdicts, a sentence for every failure of the demo, and answer-only attempts."""

from __future__ import annotations

import orjson
import pytest

from core.offline_eval import (
    SOURCE_ORIGINAL,
    SOURCE_RECORDED,
    TaskInput,
    clean_answer,
    evaluate_task,
    exact_match,
    must_include,
    placeholder_url,
    url_match,
)
from core.offline_runs import evaluate_offline
from core.store import Store


def _config(eval_types, **ev):
    return {"intent": "q", "sites": ["shopping"], "eval": {"eval_types": eval_types, **ev}}


def test_string_rules_follow_the_harness():
    assert clean_answer(" 'Yoga Ball' ") == "yoga ball" and clean_answer('"N/A"') == "n/a"
    assert exact_match("Yoga ball", "'yoga BALL'") and not exact_match("Yoga ball", "yoga balls")
    # A lone one-character reference is a token, not a substring: "0" is not in "10" (harness guard).
    assert not must_include("0", "There are 10 of them", tokenize=True)
    assert must_include("0", "0 orders", tokenize=True) and must_include("0", "10", tokenize=False)
    assert must_include("65 |OR| 3", "3", tokenize=True)  # the original dataset's alternatives
    assert not must_include("65 |OR| 3", "36", tokenize=True)


def test_string_match_sentences_say_what_was_expected_and_answered():
    cfg = _config(["string_match"], reference_answers={"must_include": ["0"]})
    out = evaluate_task(TaskInput(1, cfg, SOURCE_ORIGINAL, "N/A", None, None))
    (ev,) = out.evaluators
    assert ev.status == "failure" and ev.explanation == "must include '0'; the agent answered 'N/A'"
    fuzzy = _config(["string_match"], reference_answers={"fuzzy_match": ["May: 8 orders"]})
    ev = evaluate_task(TaskInput(1, fuzzy, SOURCE_ORIGINAL, "eight in May", None, None)).evaluators[0]
    assert ev.status == "unresolved" and "needs an LLM judge" in ev.explanation
    ev = evaluate_task(TaskInput(1, fuzzy, SOURCE_ORIGINAL, None, None, None)).evaluators[0]
    assert ev.status == "failure"  # the harness fails an empty answer without asking the LLM
    na = _config(["string_match"], reference_answers={"fuzzy_match": "N/A"}, string_note="no such product")
    assert evaluate_task(TaskInput(1, na, SOURCE_ORIGINAL, "N/A", None, None)).status == "success"
    ev = evaluate_task(TaskInput(1, na, SOURCE_ORIGINAL, "42", None, None)).evaluators[0]
    assert ev.status == "unresolved" and "unachievable" in ev.explanation


def test_url_match_base_path_query_and_placeholders():
    cfg = _config(
        ["url_match"], reference_url="__SHOPPING__/catalogsearch/result/?q=usb+wifi |OR| __SHOPPING__/x"
    )
    ok = url_match(cfg, "http://10.0.0.1:7770/catalogsearch/result/?q=usb+wifi&p=2", None)
    assert ok.status == "success"
    bad = url_match(cfg, "http://10.0.0.1:7770/catalogsearch/result/?q=usb", None)
    assert (
        bad.status == "failure"
        and "q=usb wifi" in bad.explanation
        and "the agent ended on" in bad.explanation
    )
    # A host without a WebArena port maps to the task's only site through its first page.
    assert (
        url_match(cfg, "http://3.16.151.31/catalogsearch/result/?q=usb+wifi", "http://3.16.151.31/").status
        == "success"
    )
    assert url_match(cfg, "http://other.example/x", None).status == "unresolved"
    assert placeholder_url("http://h:8023/a/b?c=1", {}) == "__GITLAB__/a/b?c=1"


def test_program_html_is_described_not_decided():
    cfg = _config(["program_html"], program_html=[
        {"url": "last", "locator": "", "required_contents": {"must_include": ["Completed"]}}])  # fmt: skip
    (ev,) = evaluate_task(TaskInput(1, cfg, SOURCE_RECORDED, "done", "http://h/x", None)).evaluators
    assert ev.status == "unresolved" and ev.needs == "the live site"
    assert (
        ev.explanation
        == "checked on the live site: the agent's last page must show 'Completed'; cannot be re-checked offline"
    )


@pytest.fixture(scope="module")
def demo(demo_db):
    with Store(demo_db, read_only=True) as s:
        yield s


def test_every_failed_task_of_the_demo_has_a_sentence(demo):
    missing = demo.query(
        "SELECT run, count(*) FROM evaluations WHERE status <> 'success'"
        " AND (explanation IS NULL OR trim(explanation) = '') GROUP BY run"
    )
    assert missing == []
    failed = dict(demo.query("SELECT run, count(*) FROM evaluations WHERE status <> 'success' GROUP BY run"))
    assert failed["opagent"] == 228 and failed["webarena-render-babelcloud"] == 260


@pytest.mark.parametrize(("run", "floor"), [("webarena-render-babelcloud", 1.0), ("opagent", 0.98)])
def test_decidable_evaluators_agree_with_the_runs_own_verdicts(demo_db, tmp_path, run, floor):
    import shutil

    path = tmp_path / "db.duckdb"
    shutil.copy(demo_db, path)
    with Store(path) as store:
        s = evaluate_offline(store, run)
        # The numbers docs/offline-evaluation.md reports; every disagreement there is explained.
        assert s.compared == s.decidable and s.compared >= 230
        assert s.agreement >= floor, s.disagreements
        flagged = {
            t
            for (t,) in store.query(
                "SELECT task_id FROM evaluations WHERE run = ? AND verdict_disagrees", [run]
            )
        }
        assert flagged == {t for t, _, _ in s.disagreements}
        # The run's own verdict is never overwritten.
        sources = {
            src for (src,) in store.query("SELECT DISTINCT source FROM evaluations WHERE run = ?", [run])
        }
        assert sources == {"source-log" if run.startswith("webarena-render") else "source-score"}


def test_offline_rows_say_which_config_they_used(demo):
    sources = dict(demo.query(
        "SELECT run, list(DISTINCT source ORDER BY source) FROM evaluator_results GROUP BY run"))  # fmt: skip
    assert sources["opagent"] == [SOURCE_RECORDED] and sources["webarena-render-babelcloud"] == [
        SOURCE_RECORDED
    ]
    assert sources["agentlab-sample"] == [SOURCE_ORIGINAL]  # AgentLab records no WebArena config
    assert sources["wav-demo"] == ["webarena-verified"]  # the engine's own rows are left alone


def test_answer_only_attempts_have_null_step_metrics_with_their_reason(demo):
    rows = demo.query_dicts(
        "SELECT m.ssr, m.rr, m.repr, m.ear, m.null_reasons FROM metrics m JOIN trajectories t"
        " USING (run, task_id, episode) WHERE t.answer_only AND m.run = 'webarena-render-babelcloud'"
    )
    assert len(rows) > 700  # babelcloud recorded one summarising step per task
    for r in rows:
        assert (r["ssr"], r["rr"], r["repr"], r["ear"]) == (None, None, None, None)
        reasons = orjson.loads(r["null_reasons"])
        assert {reasons[k] for k in ("ssr", "rr", "repr", "ear")} == {"answer_only"}
    # OpAgent's coordinate actions name no element: EAR is undefined there, with its reason.
    ear = demo.query("SELECT count(*), count(ear) FROM metrics WHERE run = 'opagent'")[0]
    assert ear[1] == 0
    reasons = demo.query("SELECT DISTINCT null_reasons->>'ear' FROM metrics WHERE run = 'opagent'")
    assert {r for (r,) in reasons} == {"coordinate_actions", "answer_only"}
