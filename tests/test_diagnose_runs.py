"""Suggested failure causes on the whole OpAgent and babelcloud runs (the demo built from ../shared/data),
and their agreement with our 92 hand labels (tests/fixtures/failure_labels): the figures
docs/failure-causes.md reports, each asserted at the measured value minus a small margin."""

from __future__ import annotations

from pathlib import Path

import pytest
from demo_support import BABEL, OPAGENT

from core.diagnose.agreement import agreement_from_labels
from core.store import Store

FIXTURE = Path(__file__).parent / "fixtures" / "failure_labels"
LABELS = [FIXTURE / "opagent.csv", FIXTURE / "babelcloud.csv"]


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


def test_agreement_on_the_held_out_labels(whole):
    """Measured on the holdout half, which no rule was written on: n=45 (1 undecided apart), accuracy
    0.40, κ 0.27 [0.14, 0.42]. Below the 0.8 aim; the floors catch a rule change that makes it worse."""
    result = agreement_from_labels(whole, LABELS, "holdout")
    assert (result.n, result.n_undecided) == (45, 1)
    assert result.accuracy >= 0.37 and result.kappa >= 0.22
    low, high = result.kappa_ci
    assert low is not None and low < result.kappa < high
    # Per run: OpAgent κ 0.29 (n=22), babelcloud κ 0.25 (n=23).
    opagent, babel = (agreement_from_labels(whole, path, "holdout") for path in LABELS)
    only = agreement_from_labels(whole, LABELS, "holdout", runs_only=[OPAGENT])
    assert (only.n, only.kappa) == (opagent.n, opagent.kappa)
    assert (opagent.n, babel.n) == (22, 23) and opagent.kappa >= 0.24 and babel.kappa >= 0.2
    # The table of disagreements in the docs: most are strict evaluators and drift taken for wrong answers.
    wrong = sorted(((n, label, s) for label, s, n in result.confusion if label != s), reverse=True)
    assert [(label, s) for _, label, s in wrong[:2]] == [
        ("evaluator_strict", "wrong_answer"), ("drifted", "wrong_answer")
    ]  # fmt: skip


def test_agreement_on_all_labels_and_where_the_rules_are_sure(whole):
    """All 92 labels: κ 0.39. evaluator_strict and step_limit are never suggested wrongly (precision 1.0);
    wrong_answer, the rule of last resort, takes most disagreements (precision 0.32)."""
    result = agreement_from_labels(whole, LABELS)
    assert result.n + result.n_undecided == 92 and result.kappa >= 0.34
    scores = {s.cause: s for s in result.per_cause}
    assert scores["evaluator_strict"].precision == 1.0 and scores["evaluator_strict"].n_suggested >= 12
    assert scores["step_limit"].precision == 1.0 and scores["step_limit"].recall == 1.0
    assert scores["wrong_answer"].recall == 1.0 and scores["wrong_answer"].precision <= 0.4
    assert scores["drifted"].n_suggested == 0  # no rule suggests drift: the model's (docs)


def test_agreement_on_the_tune_half_is_higher(whole):
    """The rules were written on the tune half: κ 0.52 there, against 0.27 held out."""
    tune = agreement_from_labels(whole, LABELS, "tune")
    holdout = agreement_from_labels(whole, LABELS, "holdout")
    assert tune.kappa >= 0.47 and tune.kappa > holdout.kappa


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
    labels = [arg for path in LABELS for arg in ("--labels", str(path))]
    out = run_cli("diagnose", "--agreement", *labels, "--split", "holdout", db=db, check=True).stdout
    with Store(db, read_only=True) as store:
        expected = agreement_from_labels(store, LABELS, "holdout")
    assert f"n={expected.n} tasks ({expected.n_undecided} undecided" in out
    assert (
        f"Cohen's kappa {expected.kappa:.2f} [{expected.kappa_ci[0]:.2f}, {expected.kappa_ci[1]:.2f}]" in out
    )
    data = json.loads(
        run_cli(
            "diagnose", "--agreement", *labels, "--run", OPAGENT, "--format", "json", db=db, check=True
        ).stdout
    )
    assert data["n"] + data["n_undecided"] == 46 and data["labels"].endswith(f"run {OPAGENT}")
    bad = run_cli("diagnose", "--agreement", "--split", "holdout", db=db)
    assert bad.returncode == 2 and "--labels" in bad.stderr
