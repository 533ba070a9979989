"""Suggested failure causes on the whole OpAgent and babelcloud runs (the demo built from ../shared/data),
and their agreement with our 252 hand labels (tests/fixtures/failure_labels): the figures
docs/failure-causes.md reports, each asserted at the measured value minus a small margin."""

from __future__ import annotations

from pathlib import Path

import pytest
from demo_support import BABEL, OPAGENT

from core.diagnose.agreement import agreement_from_labels, read_labels, rule_precision
from core.diagnose.precision import RULE_PRECISION
from core.store import Store

FIXTURE = Path(__file__).parent / "fixtures" / "failure_labels"
FIRST = [FIXTURE / "opagent.csv", FIXTURE / "babelcloud.csv"]  # 92 labels, a tune and a holdout half each
DEVELOPED = [*FIRST, FIXTURE / "added.csv"]  # and 40 more held out, read before the last rule changes
FRESH = [FIXTURE / "fresh.csv"]  # 40 more, labelled after the rules-2 rules were frozen
FRESH2 = [FIXTURE / "fresh2.csv"]  # 40 more, labelled blind to rules-4 (measured once, then read: docs)
FRESH3 = [FIXTURE / "fresh3.csv"]  # 40 more, labelled after rules-4 was final: measured blind, not read
LABELS = [*DEVELOPED, *FRESH, *FRESH2, *FRESH3]


@pytest.fixture(scope="module")
def whole(full_demo_db: Path):
    with Store(full_demo_db, read_only=True) as store:
        yield store


def _figures(result) -> tuple[tuple[int, ...], tuple[int, int, int]]:
    """(n, undecided, to the fallback, of them labelled wrong_answer), and evaluator_strict's (suggested,
    agreed, labelled): what the agreement tests assert."""
    strict = {s.cause: s for s in result.per_cause}["evaluator_strict"]
    counts = (result.n, result.n_undecided, result.n_fallback, result.n_fallback_right)
    return counts, (strict.n_suggested, strict.n_agreed, strict.n_labelled)


def _share_by_rules(store, run: str) -> tuple[int, int]:
    ((failed, by_rule),) = store.query(
        "SELECT count(*), count(*) FILTER (WHERE source = 'rule' AND cause <> 'undecided')"
        " FROM failure_causes WHERE run = ? AND is_primary",
        [run],
    )
    return by_rule, failed


def test_every_failed_opagent_task_has_one_primary_cause(whole):
    failed = whole.query(
        "SELECT task_id FROM evaluations WHERE run = ? AND status IN ('failure', 'error') ORDER BY 1",
        [OPAGENT],
    )
    primaries = whole.query(
        "SELECT task_id FROM failure_causes WHERE run = ? AND is_primary ORDER BY 1", [OPAGENT]
    )
    assert len(failed) == 228 and primaries == failed
    undecided = whole.query(
        "SELECT summary FROM failure_causes WHERE run = ? AND is_primary AND cause = 'undecided'", [OPAGENT]
    )
    # docs: the 4 the rules leave open are attempts that recorded no answer.
    assert len(undecided) == 4
    assert all(
        s.startswith("No rule decided; no model configured (") and "without an answer" in s
        for (s,) in undecided
    )


def test_the_rules_alone_decide_most_failures(whole):
    """docs/failure-causes.md: the rules decide 224 of 228 OpAgent failures (98 %) and 252 of 260 babelcloud
    failures (97 %; the 8 others are renders cut by the harness's parse-failure stop without an answer);
    the target is 80 %."""
    by_rule, failed = _share_by_rules(whole, OPAGENT)
    assert by_rule / failed >= 0.95 and by_rule / failed >= 0.80
    by_rule, failed = _share_by_rules(whole, BABEL)
    assert failed == 260 and by_rule == 252
    # Of those, a specific cause (not the fallback): OpAgent 119 (52 %), babelcloud 57 (22 %).
    specific = dict(
        whole.query(
            "SELECT run, count(*) FROM failure_causes WHERE is_primary AND source = 'rule'"
            " AND cause <> 'undecided' AND rule <> 'answered_wrong' GROUP BY run"
        )
    )
    assert specific[OPAGENT] >= 112 and specific[BABEL] >= 52


def test_agreement_on_the_fresh_labels(whole):
    """Labelled after the `rules-2` rules were frozen (no longer blind for `rules-4`, whose changes read its
    misses too): 40 failures. A specific cause for 15 (κ 0.89 [0.64, 1.00], accuracy 0.93); 25 went to the
    fallback (labelled wrong_answer on 5). With the fallback read as wrong_answer, κ 0.37.
    evaluator_strict: right on 9 of 9, recall 0.64 (9 of 14)."""
    result = agreement_from_labels(whole, FRESH)
    assert _figures(result) == ((15, 0, 25, 5), (9, 9, 14))
    assert result.kappa >= 0.8 and result.accuracy >= 0.9 and result.kappa_all >= 0.3
    low, high = result.kappa_ci
    assert low is not None and low < result.kappa < high


def test_agreement_on_the_second_fresh_labels(whole):
    """fresh2.csv: 40 failures (20 of each run, seed 42) labelled by readers who saw neither the rules, their
    suggestions nor the other labels. Measured blind once on the rules before the changes read from its
    misses (κ 0.73 [0.41, 1.00] over 10, evaluator_strict 3 of 3, recall 3 of 14: docs/failure-causes.md);
    now a specific cause for 11 (κ 0.86 [0.59, 1.00]), 29 to the fallback (labelled wrong_answer on 11);
    evaluator_strict right on 5 of 5, recall 0.36 (5 of 14)."""
    result = agreement_from_labels(whole, FRESH2)
    assert _figures(result) == ((11, 0, 29, 11), (5, 5, 14))
    assert result.kappa >= 0.8 and result.accuracy >= 0.85


def test_agreement_on_the_third_fresh_labels_read_blind(whole):
    """fresh3.csv: 40 more failures (20 of each run, seed 43), labelled the same way after every rule of
    `rules-4` was written, and measured once without being read: the blind measure of the final rules.
    A specific cause for 13 (κ 0.70 [0.39, 1.00], accuracy 0.77), 25 to the fallback (labelled wrong_answer
    on 3), 2 undecided; evaluator_strict right on 4 of 6, recall 0.27 (4 of 15)."""
    result = agreement_from_labels(whole, FRESH3)
    assert _figures(result) == ((13, 2, 25, 3), (6, 4, 15))
    assert result.kappa >= 0.65 and result.accuracy >= 0.75


def test_every_named_cause_is_right_8_times_in_10_on_the_held_out_labels(whole):
    """The holdout half and the three fresh files (206 tasks): κ 0.86 [0.76, 0.96] over 79 specific
    suggestions; every cause a rule names is right at least 8 times in 10 (evaluator_strict 40 of 43, the
    loop 14 of 16, gave up 14 of 16); evaluator_strict recall 0.50 (40 of 80), short of the issue's 0.6."""
    held_out = [
        (run, task, cause)
        for path in [*DEVELOPED, *FRESH, *FRESH2, *FRESH3] for run, task, cause in read_labels(path, "holdout")
    ]  # fmt: skip
    assert len(held_out) == 206
    result = agreement_from_labels(whole, [*DEVELOPED, *FRESH, *FRESH2, *FRESH3], "holdout")
    assert result.n == 79 and result.kappa >= 0.8
    scores = {s.cause: s for s in result.per_cause}
    assert all(s.precision is None or s.precision >= 0.8 for s in scores.values())
    strict = scores["evaluator_strict"]
    assert (strict.n_suggested, strict.n_agreed, strict.n_labelled) == (43, 40, 80)


def test_agreement_on_the_held_out_labels(whole):
    """The holdout half of the first 132 labels (86 tasks): a specific cause for 40, κ 0.92 [0.79, 1.00];
    44 to the fallback, 2 undecided. Not blind any more: the last rule changes were made after reading its
    misses. evaluator_strict right on 22 of 23, recall 0.59 (22 of 37)."""
    result = agreement_from_labels(whole, DEVELOPED, "holdout")
    assert (result.n, result.n_undecided, result.n_fallback) == (40, 2, 44)
    assert result.accuracy >= 0.9 and result.kappa >= 0.85 and result.kappa_all >= 0.35
    only = agreement_from_labels(whole, DEVELOPED, "holdout", runs_only=[OPAGENT])
    held_out = sum(1 for path in DEVELOPED for row in read_labels(path, "holdout") if row[0] == OPAGENT)
    assert only.n + only.n_undecided + only.n_fallback == held_out and only.n < result.n
    scores = {s.cause: s for s in result.per_cause}
    assert scores["evaluator_strict"].precision >= 0.9 and scores["evaluator_strict"].n_labelled == 37
    assert 0.5 <= scores["evaluator_strict"].recall < 0.7


def test_agreement_on_all_labels_and_where_the_rules_are_sure(whole):
    """All 252 labels: κ 0.88 over the 101 with a specific suggestion. evaluator_strict is right on 51 of 54,
    the loop on 21 of 24; the fallback takes 145 tasks and is right (answered wrong) on 37."""
    result = agreement_from_labels(whole, LABELS)
    assert result.n + result.n_undecided + result.n_fallback == 252 and result.kappa >= 0.85
    scores = {s.cause: s for s in result.per_cause}
    assert scores["evaluator_strict"].precision >= 0.9 and scores["evaluator_strict"].n_suggested >= 52
    assert scores["looped"].precision >= 0.85
    # Every cause a rule names is right at least 8 times in 10 on the labels (the fallback names none).
    assert all(s.precision is None or s.precision >= 0.8 for s in scores.values())
    assert (result.n_fallback, result.n_fallback_right) == (145, 37)


def test_agreement_on_the_tune_half_is_higher(whole):
    """The rules were written on the tune half: κ 0.92 there over specific suggestions."""
    tune = agreement_from_labels(whole, DEVELOPED, "tune")
    assert tune.kappa >= 0.8 and tune.kappa > agreement_from_labels(whole, FRESH).kappa


def test_each_rules_stated_precision_is_what_the_labels_measure(whole):
    """core/diagnose/precision.py states each rule's precision on our labels; it is what they measure."""
    assert rule_precision(whole, LABELS) == RULE_PRECISION


def test_the_whole_runs_show_drift_and_equivalent_values(whole):
    """OpAgent's task 563 (a gitlab and reddit task) never went to reddit; task 9 searched cn.bing.com after
    the map site showed 'upstream request timeout' at its first step (the environment first, the drift
    beside it); task 333 answered 359.55 where the reference wrote 359.546."""
    rows = whole.query(
        "SELECT task_id, rule, is_primary FROM failure_causes WHERE run = ? AND task_id IN (9, 333, 563)"
        " AND rule IN ('drifted_off_site', 'equivalent_values', 'tool_server_errors', 'start_page_failed')",
        [OPAGENT],
    )
    assert set(rows) == {
        (563, "drifted_off_site", True), (9, "start_page_failed", True), (9, "drifted_off_site", False),
        (333, "equivalent_values", True),
    }  # fmt: skip


def test_a_strict_evaluator_cites_the_passing_tasks_of_its_template(whole):
    """OpAgent task 325 (a trailing space in the reference URL) cites, beside the evaluator line, the
    tasks of its template that passed in the run."""
    import orjson

    ((rule, evidence),) = whole.query(
        "SELECT rule, evidence FROM failure_causes WHERE run = ? AND task_id = 325 AND is_primary", [OPAGENT]
    )
    assert rule == "differs_only_in_format"
    (template,) = [e["text"] for e in orjson.loads(evidence) if e["kind"] == "template"]
    siblings = whole.query(
        "SELECT e.task_id FROM evaluations e JOIN tasks t USING (task_id) WHERE e.run = ? AND e.status = 'success'"
        " AND t.intent_template_id = (SELECT intent_template_id FROM tasks WHERE task_id = 325) ORDER BY 1",
        [OPAGENT],
    )
    assert siblings and all(str(t) in template for (t,) in siblings)


def test_the_agreement_command_on_the_held_out_labels(full_demo_db: Path, tmp_path: Path):
    import json
    import shutil

    from cli_support import run_cli

    db = tmp_path / "whole.duckdb"
    shutil.copy(full_demo_db, db)
    labels = [arg for path in DEVELOPED for arg in ("--labels", str(path))]
    out = run_cli("diagnose", "--agreement", *labels, "--split", "holdout", db=db, check=True).stdout
    with Store(db, read_only=True) as store:
        expected = agreement_from_labels(store, DEVELOPED, "holdout")
    assert f"n={expected.n} tasks with a specific cause ({expected.n_undecided} undecided and" in out
    assert f"{expected.n_fallback} tasks, labelled answered wrong on {expected.n_fallback_right}" in out
    assert (
        f"Cohen's kappa {expected.kappa:.2f} [{expected.kappa_ci[0]:.2f}, {expected.kappa_ci[1]:.2f}]" in out
    )
    data = json.loads(
        run_cli(
            "diagnose", "--agreement", *labels, "--run", OPAGENT, "--format", "json", db=db, check=True
        ).stdout
    )
    opagent_labels = sum(1 for path in DEVELOPED for row in read_labels(path) if row[0] == OPAGENT)
    assert data["n"] + data["n_undecided"] + data["n_fallback"] == opagent_labels
    assert data["labels"].endswith(f"run {OPAGENT}")
    bad = run_cli("diagnose", "--agreement", "--split", "holdout", db=db)
    assert bad.returncode == 2 and "--labels" in bad.stderr


# --- rules-4: each rule on the real task it was written for, and reverted --------------------------------


@pytest.fixture(scope="module")
def task_facts(whole):
    from core.diagnose.facts import load_facts

    runs = (OPAGENT, BABEL, "agentlab-sample")
    return {(run, f.task_id): f for run in runs for f in load_facts(whole, run)}


def _primary(f):
    from core.diagnose.rules import find_causes

    found = find_causes(f)
    return (found[0].cause, found[0].rule) if found else (None, None)


def test_verified_values_are_read_as_verified_reads_them(task_facts):
    """Verified's nested list is one value with alternatives (babelcloud 21: 'Anglebert Dinkherhump' or its
    parts), a boolean is a yes or no answer (174 'No' for [false], OpAgent 178 'Yes' for [true]), and a
    precise number is the answer's rounded to its precision (OpAgent 248: '40.442, -79.940' for 40.4424191,
    -79.9397388). Another answer is not."""
    from dataclasses import replace

    cases = {
        (BABEL, 21): "Catso, Dibbins",
        (BABEL, 174): "Yes",
        (OPAGENT, 178): "No",
        (OPAGENT, 248): "40, -80",
    }
    for key, wrong in cases.items():
        f = task_facts[key]
        assert _primary(f) == ("evaluator_strict", "verified_reference_matches"), key
        assert _primary(replace(f, answer=wrong))[1] != "verified_reference_matches", key
    # A yes inside a sentence says nothing; a number written without decimals rounds nothing.
    f = task_facts[(OPAGENT, 178)]
    assert _primary(replace(f, answer="No idea, yes or no"))[1] != "verified_reference_matches"


def test_a_url_differing_in_case_is_a_strict_evaluator(task_facts):
    """OpAgent 646 posted in /f/DIY and ended on its post; the original url_match wanted /f/diy."""
    from dataclasses import replace

    f = task_facts[(OPAGENT, 646)]
    cause, rule = _primary(f)
    assert (cause, rule) == ("evaluator_strict", "url_differs_in_format")
    other = replace(f, final_url=f.final_url.replace("/f/DIY/", "/f/Art/"))
    assert _primary(other)[1] != "url_differs_in_format"


def test_a_value_verified_corrected_that_the_agent_entered_is_a_strict_evaluator(task_facts):
    """OpAgent 780 raised two prices by $17 to 101.00 (steps 4 and 10); the original check wanted 64.00 (a
    cut), Verified 101.0. Had the agent typed the original's value, or another, the rule would not hold."""
    from dataclasses import replace

    from core.diagnose.rules_pages import verified_corrected_entry

    f = task_facts[(OPAGENT, 780)]
    finding = verified_corrected_entry(f)
    assert _primary(f)[1] == "verified_corrected_entry"
    assert [e.step_idx for e in finding.evidence if e.kind == "step"] == [4, 10]
    assert "'64.00'" in finding.summary and "'101.0'" in finding.summary
    for typed in ("64.00", "99.00"):
        steps = tuple(replace(s, typed=typed) if s.typed == "101.00" else s for s in f.steps)
        assert verified_corrected_entry(replace(f, steps=steps)) is None


def test_a_site_down_at_the_start_is_the_environment(task_facts):
    """OpAgent 10: the map site showed 'upstream request timeout' at step 0 (the agent's reading of the
    page says so); without that reading the task is no longer the environment's."""
    from dataclasses import replace

    f = task_facts[(OPAGENT, 10)]
    assert f.steps[0].saw_server_error and _primary(f) == ("environment", "start_page_failed")
    quiet = tuple(replace(s, saw_server_error=False) for s in f.steps)
    assert _primary(replace(f, steps=quiet))[0] != "environment"
    # A site failing later, which the agent recovers from, decides nothing (OpAgent 417, step 5).
    later = task_facts[(OPAGENT, 417)]
    assert any(s.saw_server_error for s in later.steps[2:]) and not any(
        s.saw_server_error for s in later.steps[:2]
    )
    assert _primary(later)[1] != "start_page_failed"


def test_a_page_of_the_public_web_out_of_reach_is_not_the_environment(task_facts):
    """OpAgent 674 went to the real reddit.com, which the sandbox cannot reach, and said it failed "due to a
    repeated network connection error": reviewers call that giving up. On a WebArena site it is the
    environment."""
    from dataclasses import replace

    from core.diagnose.rules_site import tool_server_errors

    f = task_facts[(OPAGENT, 674)]
    assert any("ERR_TUNNEL" in (s.error or "") for s in f.steps)
    assert tool_server_errors(f) is None and _primary(f)[0] == "gave_up"

    def on_site(text):
        return text.replace("https://www.reddit.com/r/games", "http://ecs_ip:9999/f/games")

    moved = tuple(
        replace(s, error=on_site(s.error), action=on_site(s.action)) if s.error else s for s in f.steps
    )
    assert tool_server_errors(replace(f, steps=moved)).cause == "environment"


def test_loops_by_nearby_clicks_and_rounds_of_pages(task_facts, monkeypatch):
    """OpAgent 443 clicked the editor's lines 7-8 five times a few pixels apart; AgentLab 143 walked order
    history → page 2 → order 148 twice and was cut at 10 steps. Both are loops; with clicks compared to the
    pixel, or pages not compared, they are not."""
    import core.diagnose.rules as rules

    assert _primary(task_facts[(OPAGENT, 443)]) == ("looped", "looped")
    assert _primary(task_facts[("agentlab-sample", 143)]) == ("looped", "looped")
    monkeypatch.setattr(rules, "CLICK_SAME_PX", 0)
    assert _primary(task_facts[(OPAGENT, 443)])[0] != "looped"
    monkeypatch.setattr(rules, "_page_cycled", lambda actions: None)
    assert _primary(task_facts[("agentlab-sample", 143)])[0] == "step_limit"


def test_a_harness_that_could_not_parse_is_how_it_ended_not_why(task_facts):
    """babelcloud 782's render ends with five placeholder steps and 'Early stop: Failed to parse actions
    for 3 times' (its sessions never called complete_task; the prices were saved): neither an invalid
    action nor giving up."""
    f = task_facts[(BABEL, 782)]
    assert "parse" in (f.termination_detail or "").lower()
    assert _primary(f)[0] not in ("invalid_action", "gave_up")


def test_a_near_miss_of_a_name_verified_no_longer_asks_is_no_wrong_element(task_facts):
    """babelcloud 7 gave the airport's terminal address; the original reference is OSM's aerodrome string,
    which Verified replaced by a name, state and postcode: a near miss of the old string says nothing."""
    from dataclasses import replace

    from core.diagnose.rules import near_miss_entity

    f = task_facts[(BABEL, 7)]
    assert near_miss_entity(f) is None
    assert near_miss_entity(replace(f, verified_data=None)).cause == "wrong_element"


def test_a_page_check_that_reads_another_page_than_its_template(task_facts):
    """Task 584 (both runs created forum Karaoke with the description and sidebar asked): its check reads
    #forum_description on /f/Karaoke, where tasks 580-583 of the same template, which passed, read it on
    /f/<forum>/edit. Had the siblings read the same page shape, or the agent not entered the values, no."""
    from dataclasses import replace

    from core.diagnose.rules_pages import check_unlike_template

    for run in (OPAGENT, BABEL):
        f = task_facts[(run, 584)]
        finding = check_unlike_template(f)
        assert finding is not None and _primary(f)[1] == "check_unlike_template", run
        assert "'__REDDIT__/f/Karaoke'" in finding.summary and "/edit" in finding.summary
        alike = tuple(
            tuple(dict(c, url=c["url"].removesuffix("/edit")) for c in checks)
            for checks in f.template_passed_checks
        )
        assert check_unlike_template(replace(f, template_passed_checks=alike)) is None
        blank = tuple(replace(s, typed=None) for s in f.steps)
        assert check_unlike_template(replace(f, steps=blank)) is None


def test_a_record_verified_moved_that_the_agent_worked_on(task_facts):
    """babelcloud 493: the original check reads order 307; Verified posts the comment to order 65, Grace
    Nguyen's latest pending order, which the agent opened ('View link for order 000000065', step 13) and
    commented on. Had the agent opened order 307 instead, no."""
    from dataclasses import replace

    from core.diagnose.rules_pages import verified_moved_target

    f = task_facts[(BABEL, 493)]
    finding = verified_moved_target(f)
    assert _primary(f)[1] == "verified_moved_target" and 13 in [e.step_idx for e in finding.evidence]
    assert "order_id 307" in finding.summary and "order_id 65" in finding.summary
    other = tuple(replace(s, action=s.action.replace("000000065", "000000307")) for s in f.steps)
    assert verified_moved_target(replace(f, steps=other)) is None


def test_values_entered_in_another_format(task_facts):
    """babelcloud 555 wrote the five newest memes' URLs on the site's public address
    (`http://www.reddit.com:9999/f/memes/…`) where the check wants the deployment's; the same pages.
    Other URLs are not."""
    from dataclasses import replace

    from core.diagnose.rules_pages import entered_in_another_format

    f = task_facts[(BABEL, 555)]
    assert _primary(f)[1] == "entered_in_another_format"
    finding = entered_in_another_format(f)
    (compared,) = [e for e in finding.evidence if e.kind == "evaluator"]
    # One step typed the file: the sentence says "step", and what the agent gave is that step's text.
    assert "(step 66)" in finding.summary and compared.actual.startswith(
        "http://www.reddit.com:9999/f/memes/"
    )
    other = tuple(
        replace(s, typed=s.typed.replace("/f/memes/", "/f/news/")) if s.typed else s for s in f.steps
    )
    assert entered_in_another_format(replace(f, steps=other)) is None


def test_a_check_that_misquotes_the_task(task_facts):
    """Tasks 653-657 quote "it broke after just three days of use"; their check wants 'it broke after three
    days of use'. babelcloud 656 typed the task's words with the order number and SKU: the check's fault.
    Without the SKU entered, or with a task that says the check's words, it is not."""
    from dataclasses import replace

    from core.diagnose.rules_pages import check_misquotes_task

    f = task_facts[(BABEL, 656)]
    assert _primary(f)[1] == "check_misquotes_task"
    no_sku = tuple(replace(s, typed=s.typed.replace("B0041MSF2S", "")) if s.typed else s for s in f.steps)
    assert check_misquotes_task(replace(f, steps=no_sku)) is None
    assert (
        check_misquotes_task(replace(f, intent=f.intent.replace("after just three", "after three"))) is None
    )
