"""Offline WebArena evaluators: the harness's rules, and agreement with the real runs' own verdicts."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest
from build_cache import built_db
from fake_openai import FakeOpenAI

from core.errors import TrajreviewError
from core.ingest.agentlab import import_agentlab
from core.ingest.opagent import import_opagent
from core.ingest.webarena_render import import_webarena_render
from core.measure.judge.llm import LLMStage, load_prompts
from core.measure.llm.config import LLMConfig
from core.scoring.offline import webarena as wa
from core.scoring.offline.agreement import agreement
from core.scoring.offline.fuzzy import KINDS, FuzzyJudge
from core.scoring.offline.run import evaluate_run_offline
from core.scoring.offline.urls import canonical_url
from core.store import Store

BABELCLOUD = ("webarena-render", "babelcloud__webarena", "gbox", "trajectories")


# -- the harness's rules -----------------------------------------------------------------------------
def test_string_match_rules_of_the_harness():
    # must_include of a single one-character reference is a token match: '0' is not in '10'.
    assert wa.string_match({"must_include": ["0"]}, "There are 0 comments.").status == "success"
    assert wa.string_match({"must_include": ["0"]}, "10").status == "failure"
    # ... but with two references it is a substring match, as in the harness.
    assert wa.string_match({"must_include": ["0", "1"]}, "10").status == "success"
    # Cleaning: outer quotes, case, whitespace; exact_match compares cleaned strings.
    assert wa.string_match({"exact_match": "Yes"}, "  'yes' ").status == "success"
    assert wa.string_match({"exact_match": "Yes"}, "yes, it is").status == "failure"
    # ' |OR| ' is not an alternative in string_match's must_include (only in program_html).
    out = wa.string_match({"must_include": ["65 |OR| 3"]}, "3")
    assert out.status == "failure" and out.explanation == "must include '65 |OR| 3'; the agent answered '3'"


def test_na_rule_and_fuzzy_match_need_an_llm_offline():
    assert wa.string_match({"fuzzy_match": "N/A"}, "N/A").status == "success"
    out = wa.string_match({"fuzzy_match": "N/A"}, "The item does not exist", string_note="no such item")
    assert out.status == "unresolved" and out.unresolved_reason == "needs_llm" and "LLM" in out.explanation
    # The LLM's verdict replaces the score so far (the harness's N/A branch).
    assert wa.string_match({"fuzzy_match": "N/A"}, "gone", fuzzy=lambda q: True).status == "success"
    fuzzy = wa.string_match({"fuzzy_match": ["3 min"]}, "about three minutes")
    assert fuzzy.status == "unresolved" and "needs an LLM judge" in fuzzy.explanation
    # A decided failure wins over an unresolved factor; no answer at all fails an LLM question too.
    mixed = wa.string_match({"must_include": ["Pittsburgh"], "fuzzy_match": ["3 min"]}, "Boston, 3 minutes")
    assert mixed.status == "failure"
    assert wa.string_match({"fuzzy_match": ["3 min"]}, None).status == "failure"
    assert (
        wa.string_match({"must_include": ["0"]}, None).explanation
        == "must include '0'; the agent gave no answer"
    )


def test_url_match_rules_and_placeholders():
    assert canonical_url("http://ecs_ip:8023/a11yproject/-/issues") == "__GITLAB__/a11yproject/-/issues"
    assert (
        canonical_url("http://ec2-1-2.compute.amazonaws.com:7780/admin/sales") == "__SHOPPING_ADMIN__/sales"
    )
    assert canonical_url("https://cn.bing.com/search?q=x") == "https://cn.bing.com/search?q=x"
    ref = "__GITLAB__/byteblaze/metaseq/-/issues/?search=OPT&label_name%5B%5D=question"
    ok = "http://ecs_ip:8023/byteblaze/metaseq/-/issues/?sort=created_date&label_name%5B%5D=question&search=OPT"
    assert wa.url_match(ref, ok).status == "success"  # GOLD in PRED: extra query keys are fine
    missing = wa.url_match(ref, "http://ecs_ip:8023/byteblaze/metaseq/-/issues/?search=OPT")
    assert missing.status == "failure" and "label_name[]='question'" in missing.explanation
    other = wa.url_match("__SHOPPING__/a.html |OR| __SHOPPING__/b.html", "http://localhost:7770/c.html")
    assert other.status == "failure" and other.explanation.startswith("the last page was __SHOPPING__/c.html")
    assert (
        wa.url_match("__SHOPPING__/b.html |OR| __SHOPPING__/a.html", "http://h:7770/a.html/").status
        == "success"
    )
    unknown = wa.url_match(ref, None)
    assert unknown.status == "unresolved" and unknown.unresolved_reason == "no_last_url"


def test_program_html_says_what_it_checks_on_the_live_site():
    out = wa.program_html(
        [
            {
                "url": "func:shopping_get_latest_order_url()",
                "locator": "document.querySelector('.order-status').outerText",
                "required_contents": {"must_include": ["Completed"]},
            }
        ]  # fmt: skip
    )
    assert out.status == "unresolved" and out.unresolved_reason == "needs_live_site"
    assert out.explanation == (
        "checked on the live site: the latest order's page (element .order-status) must include 'Completed'; "
        "cannot be re-checked offline"
    )


# -- real runs ---------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def runs_db(tasks_db: Path, shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """babelcloud, OpAgent and the AgentLab sample, imported (and so evaluated offline) once."""
    sources = (shared_data.joinpath(*BABELCLOUD), shared_data / "oagent-run", shared_data / "browsergym-run")

    def build(path: Path) -> None:
        shutil.copy(tasks_db, path)
        with Store(path) as store:
            import_webarena_render(store, sources[0], "babelcloud")
            import_opagent(store, sources[1], "opagent")
            import_agentlab(store, sources[2], "agentlab")

    return built_db(tmp_path_factory, "offline-runs", build, sources, "runs.duckdb")


@pytest.fixture
def runs(runs_db: Path):
    with Store(runs_db, read_only=True) as store:
        yield store


def test_babelcloud_agrees_with_its_logs_on_every_decidable_task(runs: Store):
    a = agreement(runs, "babelcloud")
    assert a.verdict_source == "source-log" and a.tasks == 812
    assert (a.all_decidable, a.agree) == (234, 234)
    assert a.undecidable_by_reason == {"needs_live_site": 411, "needs_llm": 96, "no_last_url": 205}


def test_opagent_agrees_with_its_scores_except_the_documented_tasks(runs: Store):
    a = agreement(runs, "opagent")
    assert a.verdict_source == "opagent-score" and a.tasks == 809
    assert (a.all_decidable, a.agree) == (284, 280)
    # 82, 214: no answer, scored 1.0 by OpAgent's fallback judge; 386: '65 |OR| 3' read as alternatives;
    # 342: the recorded last page matches, the scorer read another (docs/offline-evaluation.md).
    assert a.run_pass_offline_fail == [82, 214, 386] and a.run_fail_offline_pass == [342]
    flagged = runs.query(
        "SELECT task_id FROM evaluations WHERE run = 'opagent' AND offline_disagrees ORDER BY 1"
    )
    assert [t for (t,) in flagged] == [82, 214, 342, 386]


def test_the_runs_own_verdict_is_never_overwritten(runs: Store, shared_data: Path):
    scores = {
        int(p.stem): orjson.loads(p.read_bytes())[-1]["score"]
        for p in (shared_data / "oagent-run" / "final_results").glob("*.json")
    }
    stored = runs.query("SELECT task_id, status, score, source FROM evaluations WHERE run = 'opagent'")
    assert all(s == "opagent-score" and score == scores[t] for t, _, score, s in stored)
    row = runs.query_dicts("SELECT * FROM evaluations WHERE run = 'opagent' AND task_id = 386")[0]
    assert (row["status"], row["offline_status"], row["offline_disagrees"]) == ("success", "failure", True)
    assert row["explanation"].startswith(
        "the run's own verdict is success, but re-checked offline: must include"
    )


def test_every_failed_task_has_a_sentence_and_one_row_per_evaluator(runs: Store):
    for run in ("babelcloud", "opagent", "agentlab"):
        assert not runs.query(
            "SELECT task_id FROM evaluations WHERE run = ? AND status <> 'success' AND explanation IS NULL",
            [run],
        )
    # One row per evaluator of the task's config, with the config's source.
    counts = runs.query(
        """SELECT r.source, count(*) FROM evaluator_results r WHERE r.run = 'opagent' GROUP BY 1"""
    )
    assert counts == [("offline-run-config", 333 + 410 + 205)]  # eval_types occurrences in the README
    assert runs.query("SELECT DISTINCT source FROM evaluator_results WHERE run = 'agentlab'") == [
        ("offline-original-config",)
    ]
    row = runs.query_dicts("SELECT * FROM evaluator_results WHERE run = 'babelcloud' AND task_id = 29")[0]
    assert row["status"] == "failure" and row["explanation"] == "must include '1'; the agent answered '0'"


def test_a_transcript_records_no_last_page_so_url_match_stays_unresolved(
    runs: Store, runs_db: Path, tmp_path: Path
):
    """babelcloud's steps are its agent's tool calls, which name the page only where the session starts:
    the last page is unknown, at import and when re-evaluated from the stored steps alike."""
    query = "SELECT DISTINCT status, unresolved_reason FROM evaluator_results WHERE run = 'babelcloud' AND evaluator = 'url_match'"
    assert runs.query(query) == [("unresolved", "no_last_url")]
    # 16 renders hold no call that acts on the page: the harness's early stops, sessions cut before any
    # call, and sessions whose calls only looked (screenshots, tab lists) before the answer.
    assert (
        runs.query("SELECT count(*) FROM trajectories WHERE run = 'babelcloud' AND answer_only")[0][0] == 16
    )
    first_url = runs.query(
        "SELECT count(*) FROM steps WHERE run = 'babelcloud' AND kind = 'action' AND url IS NOT NULL"
    )[0][0]
    assert first_url > 0  # some steps do name a page: the stored re-evaluation must not pick theirs
    path = tmp_path / "again.duckdb"
    shutil.copy(runs_db, path)
    with Store(path) as store:
        evaluate_run_offline(store, "babelcloud")
        assert store.query(query) == [("unresolved", "no_last_url")]


def test_evaluate_offline_refuses_runs_with_traces(tmp_path: Path):
    from core.ingest.records import RunMeta
    from core.ingest.writer import import_run

    with Store(tmp_path / "x.duckdb") as store:
        with pytest.raises(TrajreviewError, match="no run named"):
            evaluate_run_offline(store, "nope")
        import_run(store, RunMeta(name="traced", source_format="wav-run", source_path="x"))
        with pytest.raises(TrajreviewError, match="has network traces: score it with `trajreview evaluate"):
            evaluate_run_offline(store, "traced")


def _fuzzy_stage(fake: FakeOpenAI) -> LLMStage:
    config = LLMConfig(base_url=fake.base_url, api_key="test", model="fake", concurrency=4, timeout_s=10.0)
    return LLMStage(config, load_prompts(kinds=KINDS))


def test_fuzzy_questions_go_to_the_llm_once_and_are_cached(runs_db: Path, tmp_path: Path):
    path = tmp_path / "copy.duckdb"
    shutil.copy(runs_db, path)
    with Store(path) as store, FakeOpenAI() as fake:
        stage = _fuzzy_stage(fake)
        summary = evaluate_run_offline(store, "babelcloud", fuzzy_judge=FuzzyJudge(store, stage))
        asked = [q["messages"][-1]["content"] for q in fake.questions]
        assert stage.stats.answered == len(asked) > 0 and stage.stats.could_not_decide == 0
        assert {"Student answer" in text for text in asked} == {True, False}  # fuzzy_match and ua_match
        assert summary.unresolved_reasons.get("needs_llm", 0) == 0
        again = _fuzzy_stage(fake)
        before = len(fake.requests)
        evaluate_run_offline(store, "babelcloud", fuzzy_judge=FuzzyJudge(store, again))
        assert len(fake.requests) == before  # every verdict came from the judgments cache
        assert again.stats.cache_hits == len(asked) and again.stats.asked == 0


def test_read_models_for_the_review_page(runs: Store):
    from core.queries.offline import task_verdicts
    from core.queries.task import evaluator_rows

    rows = evaluator_rows(runs, "opagent", 386)
    assert [(r["evaluator"], r["source"], r["status"]) for r in rows] == [
        ("string_match", "offline-run-config", "failure")
    ]
    assert rows[0]["expected"] == {"must_include": ["65 |OR| 3"]} and rows[0]["actual"] == "3"
    verdict = task_verdicts(runs, "opagent", 386)
    assert verdict["status"] == "success" and verdict["offline_disagrees"] and not verdict["answer_only"]
    flagged = runs.query(
        "SELECT task_id FROM evaluations WHERE run = 'opagent' AND offline_disagrees ORDER BY 1"
    )
    assert [t for (t,) in flagged] == [82, 214, 342, 386]
    answer_only = "SELECT count(*) FROM trajectories WHERE run = ? AND is_answer AND answer_only"
    assert (
        runs.query(answer_only, ["babelcloud"])[0][0] == 16  # renders without a call that acts on the page
        and runs.query(answer_only, ["opagent"])[0][0] == 0
    )
    assert task_verdicts(runs, "opagent", 163) is None  # no file for that task
