"""Reviewer annotations: append-only writes, latest wins, labels in Triage and per run/site, marks on
judged pairs, judge agreement from the database (by hand, and on real alignments of the demo data
against the textbook κ formula), and `judge-agreement --from-db`."""

from __future__ import annotations

import shutil

import pytest
from cli_support import run_cli
from demo_support import BABEL, GOLD

from core.errors import InputError
from core.queries import annotations as qa
from core.queries.alignment import alignment_view
from core.queries.triage import TriageFilter, apply_filter, options, triage_table
from core.review.annotations import PairMark, add_label, annotate, mark_pairs, retire_label
from core.store import Store

PAPER_LABELS = {
    "context drift", "incoherent decomposition", "wrong element", "gave up early", "evaluator too strict",
    "environment broken",
}  # fmt: skip
# Migration 7: one label per failure cause the paper's six do not name.
CAUSE_LABELS = {"hit the step limit", "looped", "answered wrong", "invalid action"}


@pytest.fixture
def demo_copy(demo_db, tmp_path):
    path = tmp_path / "demo.duckdb"
    shutil.copy(demo_db, path)
    return path


def _failed_tasks(store: Store, run: str, n: int) -> list[tuple[int, str]]:
    return store.query(
        "SELECT e.task_id, t.site_key FROM evaluations e JOIN tasks t USING (task_id)"
        " WHERE e.run = ? AND e.status = 'failure' ORDER BY e.task_id LIMIT ?",
        [run, n],
    )


def test_vocabulary_is_seeded_with_the_papers_diagnosis_and_one_label_per_cause(store):
    assert {v["label"] for v in qa.vocabulary(store)} == PAPER_LABELS | CAUSE_LABELS


def test_annotations_are_append_only_and_the_latest_wins(demo_copy):
    with Store(demo_copy) as s:
        (task, _), (other, _) = _failed_tasks(s, "webarena-render-babelcloud", 2)
        run = "webarena-render-babelcloud"
        annotate(
            s, "task", "alice", run=run, task_id=task, label="wrong element", note="clicked the wrong row"
        )
        annotate(s, "task", "bob", run=run, task_id=task, label="evaluator too strict")
        annotate(s, "task", "bob", run=run, task_id=other, label="gave up early")
        now = qa.current(s, "task", run, task)
        assert (now["label"], now["author"], now["note"]) == ("evaluator too strict", "bob", None)
        history = qa.history(s, "task", run, task)
        assert [(h["author"], h["label"]) for h in history] == [
            ("bob", "evaluator too strict"),
            ("alice", "wrong element"),
        ]
        table = triage_table(s, run)
        assert table.row(task).label == "evaluator too strict" and table.row(other).label == "gave up early"

        # Clearing is a new row: the task has no label any more, the history keeps all three rows.
        # A step's or an event's label also reaches its task's Triage row (and filter).
        annotate(s, "step", "bob", run=run, task_id=other, episode="0", step_idx=2, label="context drift")
        annotate(s, "event", "bob", run=run, task_id=other, event_seq=5, label="gave up early")
        table = triage_table(s, run)
        assert table.row(other).label == "context drift, gave up early"
        assert "context drift" in options(table)["labels"]
        picked = apply_filter(table, TriageFilter(labels=("context drift", "wrong element")))
        assert picked.task_ids() == [other]

        annotate(s, "task", "carol", run=run, task_id=task)
        assert qa.current(s, "task", run, task) is None
        assert len(qa.history(s, "task", run, task)) == 3
        table = triage_table(s, run)
        assert table.row(task).label is None and table.row(other).label == "context drift, gave up early"
        assert s.query("SELECT count(*) FROM annotations")[0][0] == 6


def test_writes_need_an_author_a_known_label_and_the_targets_key(store):
    with pytest.raises(InputError, match="reviewer's name"):
        annotate(store, "task", "  ", run="r", task_id=1, label="wrong element")
    with pytest.raises(InputError, match="not in the label vocabulary"):
        annotate(store, "task", "ada", run="r", task_id=1, label="bad luck")
    with pytest.raises(InputError, match="needs task_id, episode, step_idx"):
        annotate(store, "step", "ada", run="r", note="x")
    with pytest.raises(InputError, match="not one of"):
        annotate(store, "gold", "ada", run="r", note="x")
    with pytest.raises(InputError, match="comma"):
        add_label(store, "slow, then wrong", "ada")
    assert store.query("SELECT count(*) FROM annotations")[0][0] == 0


def test_vocabulary_edits_and_retired_labels_stay_where_used(store):
    annotate(store, "step", "ada", run="r", task_id=7, episode="0", step_idx=3, label="context drift")
    add_label(store, "login expired", "ada", "the session was logged out mid-task")
    retire_label(store, "context drift", "bob")
    labels = {v["label"]: v for v in qa.vocabulary(store, include_retired=True)}
    assert labels["login expired"]["description"] == "the session was logged out mid-task"
    assert labels["context drift"]["retired"] and labels["context drift"]["uses"] == 1
    assert "context drift" not in {v["label"] for v in qa.vocabulary(store)}
    with pytest.raises(InputError, match="not in the label vocabulary"):
        annotate(store, "task", "ada", run="r", task_id=7, label="context drift")
    # The step keeps its retired label when its note is edited.
    annotate(
        store, "step", "ada", run="r", task_id=7, episode="0", step_idx=3, label="context drift", note="why"
    )
    annotate(store, "event", "ada", run="r", task_id=7, event_seq=12, label="login expired")
    add_label(store, "context drift", "carol")  # back on the list, description kept
    labels = {v["label"]: v for v in qa.vocabulary(store)}
    assert labels["context drift"]["description"].startswith("the agent lost track")


def test_label_counts_per_run_and_site(demo_copy):
    with Store(demo_copy) as s:
        babel = _failed_tasks(s, "webarena-render-babelcloud", 3)
        opagent = _failed_tasks(s, "opagent", 1)
        for task, _ in babel:
            annotate(s, "task", "ada", run="webarena-render-babelcloud", task_id=task, label="wrong element")
        (op_task, op_site) = opagent[0]
        annotate(
            s, "step", "ada", run="opagent", task_id=op_task, episode="0", step_idx=0, label="context drift"
        )
        annotate(s, "run", "ada", run="opagent", label="environment broken")
        counts = qa.label_counts(s)
        expected = {}
        for _, site in babel:
            expected[("webarena-render-babelcloud", site, "wrong element")] = (
                expected.get(("webarena-render-babelcloud", site, "wrong element"), 0) + 1
            )
        expected[("opagent", op_site, "context drift")] = 1
        expected[("opagent", "whole run", "environment broken")] = 1
        assert {(r.run, r.site, r.label): r.n for r in counts.itertuples()} == expected


def _mark(run, task, stage, verdict, mark, gold_idx, step_idx=0, config="offline") -> PairMark:
    return PairMark(run, task, "0", "g", 1, 0, gold_idx, step_idx, config, verdict, stage, None, mark)


def test_kappa_by_hand_with_an_unresolved_pair(store):
    # Judge says same on 6 of 10 pairs; the reviewer agrees on 4 of those and on 3 of the 4 "different":
    # observed 0.7, chance 0.6 * 0.5 + 0.4 * 0.5 = 0.5, κ = (0.7 - 0.5) / 0.5 = 0.4.
    rows = [(True, "right")] * 4 + [(True, "wrong")] * 2 + [(False, "wrong")] * 1 + [(False, "right")] * 3
    marks = [_mark("r", 1, "lexical", v, m, i) for i, (v, m) in enumerate(rows)]
    marks.append(_mark("r", 1, "llm", None, "wrong", 99))  # the judge could not answer
    marks.append(_mark("r", 1, "rule", True, "right", 50))
    marks.append(_mark("r", 1, "rule", True, "right", 51))
    assert mark_pairs(store, marks, "ada") == len(marks)
    # A correction: the last mark of a pair wins (pair 0 flips to wrong, then back to right).
    mark_pairs(store, [_mark("r", 1, "lexical", True, "wrong", 0)], "bob")
    mark_pairs(store, [_mark("r", 1, "lexical", True, "right", 0)], "ada")
    result = qa.judge_agreement(store)
    stages = {s.stage: s for s in result.per_stage}
    lexical = stages["lexical"]
    assert (lexical.n, lexical.agree, lexical.unresolved) == (10, 7, 0)
    assert lexical.accuracy == pytest.approx(0.7) and lexical.kappa == pytest.approx(0.4)
    assert lexical.kappa_ci[0] < 0.4 < lexical.kappa_ci[1]
    assert stages["llm"].n == 0 and stages["llm"].unresolved == 1 and stages["llm"].kappa is None
    assert stages["rule"].n == 2 and stages["rule"].accuracy == 1.0 and stages["rule"].kappa is None
    assert (result.overall.n, result.overall.unresolved) == (12, 1)
    assert [s.stage for s in result.per_stage] == ["rule", "lexical", "llm"]
    assert store.query("SELECT count(*) FROM annotations")[0][0] == len(marks) + 2


def _textbook_kappa(pairs: list[tuple[bool, bool]]) -> float:
    """κ from the 2×2 table: 2(ad − bc) / ((a+b)(b+d) + (a+c)(c+d)), a = both same, d = both different."""
    a = sum(j and t for j, t in pairs)
    b = sum(j and not t for j, t in pairs)
    c = sum(not j and t for j, t in pairs)
    d = sum(not j and not t for j, t in pairs)
    return 2 * (a * d - b * c) / ((a + b) * (b + d) + (a + c) * (c + d))


def _words(text: str) -> set[str]:
    return {w for w in text.lower().split() if len(w) >= 4 and w.isalpha()}


def test_agreement_on_real_alignments_matches_the_textbook_formula(demo_copy):
    # A stand-in reviewer, independent of the judge: same when the two steps share a word of 4+ letters.
    with Store(demo_copy) as s:
        tasks = [t for (t,) in s.query(
            "SELECT task_id FROM metrics WHERE run = 'opagent' AND n_agent > n_gold ORDER BY task_id LIMIT 12"
        )]  # fmt: skip
        marks, truth_of = [], {}
        for task in tasks:
            view = alignment_view(s, "opagent", task, GOLD)
            for p in view.pairs:
                truth = bool(_words(p.gold_text) & _words(p.agent_text))
                mark = None if p.verdict is None else ("right" if truth == p.verdict else "wrong")
                marks.append(PairMark("opagent", task, view.episode, view.gold_set, view.gold_version,
                                      view.alternative, p.gold_idx, p.step_idx, p.judge_config, p.verdict,
                                      p.stage, p.score, mark or "right"))  # fmt: skip
                truth_of[(task, p.gold_idx, p.step_idx)] = (p.verdict, truth, p.stage)
        mark_pairs(s, marks, "stand-in reviewer")
        result = qa.judge_agreement(s)
    resolved = [(v, t) for v, t, _ in truth_of.values() if v is not None]
    assert {v for v, _ in resolved} == {True, False}  # both verdicts are checked, not only aligned pairs
    assert result.overall.n == len(resolved)
    assert result.overall.unresolved == len(truth_of) - len(resolved)
    assert result.overall.kappa == pytest.approx(_textbook_kappa(resolved))
    assert result.overall.accuracy == pytest.approx(sum(v == t for v, t in resolved) / len(resolved))
    for stage in result.per_stage:
        group = [(v, t) for v, t, st in truth_of.values() if st == stage.stage and v is not None]
        assert stage.n == len(group)
        if len({v for v, _ in group}) == 2 or len({t for _, t in group}) == 2:
            assert stage.kappa == pytest.approx(_textbook_kappa(group))


def test_cli_judge_agreement_from_db(demo_copy):
    out = run_cli("judge-agreement", "--from-db", db=demo_copy, check=True).stdout
    assert "no reviewer marks on judged pairs yet" in out
    with Store(demo_copy) as s:
        rows = [(True, "right")] * 3 + [(False, "right")] * 2 + [(True, "wrong")]
        mark_pairs(s, [_mark("opagent", 2, "rule", v, m, i) for i, (v, m) in enumerate(rows)], "ada")
        mark_pairs(s, [_mark("opagent", 2, "llm", None, "right", 9)], "ada")
    out = run_cli("judge-agreement", "--from-db", db=demo_copy, check=True).stdout
    # 6 answered: 5 agree; judge same 4/6, reviewer same 3/6: chance 0.5, κ = (5/6 - 0.5) / 0.5 = 0.667.
    assert "7 marked pairs, 1 the judge could not answer (excluded); accuracy 0.833" in out
    assert "Cohen's kappa 0.667 (too few to tell, n=6)" in out  # 6 pairs: below the bootstrap's minimum
    assert any(line.split("│")[1].strip() == "rule" for line in out.splitlines() if line.count("│") > 3)
    out = run_cli("judge-agreement", "--from-db", "--run", BABEL, db=demo_copy, check=True).stdout
    assert "no reviewer marks" in out
    bad = run_cli("judge-agreement", "--from-db", "--run", "nope", db=demo_copy)
    assert bad.returncode == 2 and bad.stderr.strip() == "error: no run named 'nope'"
    neither = run_cli("judge-agreement", db=demo_copy)
    assert neither.returncode == 2 and "--from-db" in neither.stderr


def test_cli_labels(demo_copy):
    out = run_cli("labels", db=demo_copy, check=True).stdout
    assert "no reviewer labels yet" in out and "incoherent decomposition" in out
    with Store(demo_copy) as s:
        (task, site), *_ = _failed_tasks(s, "opagent", 1)
        annotate(s, "task", "ada", run="opagent", task_id=task, label="gave up early")
    out = run_cli("labels", "--run", "opagent", db=demo_copy, check=True).stdout
    row = next(line for line in out.splitlines() if "gave up early" in line and "opagent" in line)
    assert [c.strip() for c in row.split("│")[1:5]] == ["opagent", site, "gave up early", "1"]
    assert f"no reviewer labels on run {BABEL}" in run_cli("labels", "--run", BABEL, db=demo_copy).stdout
    bad = run_cli("labels", "--run", "nope", db=demo_copy)
    assert bad.returncode == 2 and bad.stderr.strip() == "error: no run named 'nope'"
