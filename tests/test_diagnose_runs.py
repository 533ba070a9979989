"""Suggested failure causes on the whole OpAgent and babelcloud runs (the demo built from ../shared/data),
and their agreement with our 172 hand labels (tests/fixtures/failure_labels): the figures
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
FRESH = [FIXTURE / "fresh.csv"]  # 40 more, labelled after the rules were frozen: the blind measure
LABELS = [*DEVELOPED, *FRESH]


@pytest.fixture(scope="module")
def whole(full_demo_db: Path):
    with Store(full_demo_db, read_only=True) as store:
        yield store


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
    # docs: the 5 the rules leave open are attempts that recorded no answer.
    assert len(undecided) == 5
    assert all(
        s.startswith("No rule decided; no model configured (") and "without an answer" in s
        for (s,) in undecided
    )


def test_the_rules_alone_decide_most_failures(whole):
    """docs/failure-causes.md: the rules decide 223 of 228 OpAgent failures (98 %) and all 260 babelcloud
    failures; the target is 80 %."""
    by_rule, failed = _share_by_rules(whole, OPAGENT)
    assert by_rule / failed >= 0.95 and by_rule / failed >= 0.80
    by_rule, failed = _share_by_rules(whole, BABEL)
    assert failed == 260 and by_rule == failed
    # Of those, a specific cause (not the fallback): OpAgent 112 (49 %), babelcloud 58 (22 %).
    specific = dict(
        whole.query(
            "SELECT run, count(*) FROM failure_causes WHERE is_primary AND source = 'rule'"
            " AND cause <> 'undecided' AND rule <> 'answered_wrong' GROUP BY run"
        )
    )
    assert specific[OPAGENT] >= 105 and specific[BABEL] >= 52


def test_agreement_on_the_fresh_labels(whole):
    """The blind measure: 40 failures labelled after the rules were frozen. A specific cause for 12 (κ 0.77
    [0.48, 1.00], accuracy 0.83); 28 went to the fallback (labelled wrong_answer on 5). With the fallback
    read as wrong_answer, κ 0.26. evaluator_strict: right on 5 of 5, recall 0.36 (5 of 14)."""
    result = agreement_from_labels(whole, FRESH)
    assert (result.n, result.n_undecided, result.n_fallback, result.n_fallback_right) == (12, 0, 28, 5)
    assert result.kappa >= 0.7 and result.accuracy >= 0.8 and result.kappa_all >= 0.2
    low, high = result.kappa_ci
    assert low is not None and low < result.kappa < high
    strict = {s.cause: s for s in result.per_cause}["evaluator_strict"]
    assert (strict.n_suggested, strict.n_agreed, strict.n_labelled) == (5, 5, 14)


def test_agreement_on_the_held_out_labels(whole):
    """The holdout half of the first 132 labels (86 tasks): a specific cause for 33, κ 0.71 [0.52, 0.87];
    51 to the fallback, 2 undecided. Not blind any more: the last rule changes were made after reading its
    misses. evaluator_strict recall 0.32 (12 of 38)."""
    result = agreement_from_labels(whole, DEVELOPED, "holdout")
    assert (result.n, result.n_undecided, result.n_fallback) == (34, 2, 50)
    assert result.accuracy >= 0.75 and result.kappa >= 0.65 and result.kappa_all >= 0.25
    only = agreement_from_labels(whole, DEVELOPED, "holdout", runs_only=[OPAGENT])
    held_out = sum(1 for path in DEVELOPED for row in read_labels(path, "holdout") if row[0] == OPAGENT)
    assert only.n + only.n_undecided + only.n_fallback == held_out and only.n < result.n
    scores = {s.cause: s for s in result.per_cause}
    assert scores["evaluator_strict"].precision >= 0.9 and scores["evaluator_strict"].n_labelled == 38
    assert 0.3 <= scores["evaluator_strict"].recall < 0.6


def test_agreement_on_all_labels_and_where_the_rules_are_sure(whole):
    """All 172 labels: κ 0.77 over the 66 with a specific suggestion. evaluator_strict is right on 26 of 27,
    the loop on 13 of 13; the fallback takes 103 tasks and is right (answered wrong) on 23."""
    result = agreement_from_labels(whole, LABELS)
    assert result.n + result.n_undecided + result.n_fallback == 172 and result.kappa >= 0.72
    scores = {s.cause: s for s in result.per_cause}
    assert scores["evaluator_strict"].precision >= 0.9 and scores["evaluator_strict"].n_suggested >= 25
    assert scores["looped"].precision >= 0.9
    assert (result.n_fallback, result.n_fallback_right) == (102, 23)


def test_agreement_on_the_tune_half_is_higher(whole):
    """The rules were written on the tune half: κ 0.86 there over specific suggestions."""
    tune = agreement_from_labels(whole, DEVELOPED, "tune")
    assert tune.kappa >= 0.8 and tune.kappa > agreement_from_labels(whole, FRESH).kappa


def test_each_rules_stated_precision_is_what_the_labels_measure(whole):
    """core/diagnose/precision.py states each rule's precision on our labels; it is what they measure."""
    assert rule_precision(whole, LABELS) == RULE_PRECISION


def test_the_whole_runs_show_drift_and_equivalent_values(whole):
    """OpAgent's task 563 (a gitlab and reddit task) never went to reddit; task 9 searched cn.bing.com after
    the map's pages could not be reached (the environment first, the drift beside it); task 333 answered
    359.55 where the reference wrote 359.546."""
    rows = whole.query(
        "SELECT task_id, rule, is_primary FROM failure_causes WHERE run = ? AND task_id IN (9, 333, 563)"
        " AND rule IN ('drifted_off_site', 'equivalent_values', 'tool_server_errors')",
        [OPAGENT],
    )
    assert set(rows) == {
        (563, "drifted_off_site", True), (9, "tool_server_errors", True), (9, "drifted_off_site", False),
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
