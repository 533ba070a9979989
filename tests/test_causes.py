"""Suggested failure causes where the reviewer already is: the read model (one task's causes with evidence
and decision, primary causes in Triage, shares per run, two runs compared by cause, the landing page's
groups), Accept/Reject through the one writer of annotations, `show`, the HTML report and the pages.
Causes come from the real engine: the demo build's rules-only diagnosis, one task left open by the rules
answered by a (fake) model, and wav-demo's diagnosis forgotten to stand for a run not diagnosed yet."""

from __future__ import annotations

import shutil

import pytest
from apptest_support import page_texts
from cause_support import MODEL_REASONING, OPEN_TASK, diagnose_with_model, forget_diagnosis
from demo_support import BABEL, NAV, OPAGENT, WAV

from core.diagnose.taxonomy import CAUSE_LABEL, NOT_DIAGNOSED
from core.errors import InputError, NotFound
from core.queries import causes, failures, triage
from core.queries.annotations import current
from core.queries.compare import compare_runs
from core.queries.runs import verdicts_sql
from core.review.annotations import decide_cause
from core.store import Store


@pytest.fixture
def seeded(demo_db, tmp_path):
    """A copy of the shipped demo as diagnosed by its build, with the task the rules left open answered by
    a model, and wav-demo not diagnosed."""
    path = tmp_path / "causes.duckdb"
    shutil.copy(demo_db, path)
    with Store(path) as store:
        diagnose_with_model(store)
        forget_diagnosis(store, WAV)
    return path


@pytest.fixture
def rules_only(demo_db, tmp_path):
    """A copy of the shipped demo as its build diagnosed it: OPEN_TASK is undecided."""
    path = tmp_path / "rules_only.duckdb"
    shutil.copy(demo_db, path)
    return path


@pytest.fixture
def store(seeded):
    with Store(seeded) as s:
        yield s


def _failed(store, run):
    return {
        t
        for (t,) in store.query(
            f"WITH v AS ({verdicts_sql()}) SELECT task_id FROM v WHERE verdict IN ('failure', 'error')",
            {"run": run},
        )
    }


@pytest.mark.slow
def test_a_task_has_its_primary_cause_first_with_evidence_that_links_to_the_network_event(store):
    found = causes.task_causes(store, NAV, 374)
    assert found.primary.cause == "environment" and found.primary.is_primary
    assert found.primary.name == "environment broken"
    (event,) = found.primary.evidence
    seq, status = store.query(
        "SELECT seq, status FROM network_events WHERE run = ? AND task_id = 374 AND status >= 500", [NAV]
    )[0]
    assert (event.kind, event.seq, event.status) == ("event", seq, status)
    assert [c.is_primary for c in found.causes] == [True] + [False] * len(found.others)
    assert found.others and all(not c.is_primary for c in found.others)
    assert found.decision is None
    assert causes.task_causes(store, NAV, 157) is None  # a pass has no suggestion


def test_a_model_suggestion_carries_its_reasoning_and_the_evaluator_line(store):
    found = causes.task_causes(store, *OPEN_TASK)
    assert found.primary.source == "model" and found.primary.reasoning == MODEL_REASONING
    (line,) = found.primary.evidence
    sentence = store.query(
        "SELECT explanation FROM evaluations WHERE run = ? AND task_id = ?", list(OPEN_TASK)
    )
    assert (line.kind, line.text) == ("evaluator", sentence[0][0])


def test_triage_rows_carry_the_primary_cause_and_filter_on_it(store):
    table = triage.triage_table(store, OPAGENT)
    by_task = {r.task_id: r for r in table.rows}
    assert {t for t, r in by_task.items() if r.cause} == _failed(store, OPAGENT)
    assert by_task[OPEN_TASK[1]].cause_by_model and by_task[OPEN_TASK[1]].cause == "wrong_element"
    opts = triage.options(table)["causes"]
    assert opts == [c for c in causes.ORDER if c in {r.cause for r in table.rows}]
    truncated = {
        t
        for (t,) in store.query(
            "SELECT task_id FROM trajectories WHERE run = ? AND termination = 'truncated'", [OPAGENT]
        )
    }
    # Both cut tasks of the demo looped into the cap (148, 335): the loop is their cause, the cap how
    # they ended; step_limit stays beside it, not primary.
    shown = triage.apply_filter(table, triage.TriageFilter(causes=("looped",)))
    assert truncated and truncated <= set(shown.task_ids())
    assert not triage.apply_filter(table, triage.TriageFilter(causes=("step_limit",))).task_ids()
    others = store.query(
        "SELECT DISTINCT task_id FROM failure_causes WHERE run = ? AND cause = 'step_limit' AND NOT is_primary",
        [OPAGENT],
    )
    assert {t for (t,) in others} == truncated
    # The filter travels in the URL.
    flt = triage.filter_from_params(lambda name: ["looped"] if name == "cause" else [])
    assert flt.causes == ("looped",) and flt.fingerprint() != triage.TriageFilter().fingerprint()


def test_a_run_not_diagnosed_offers_no_cause_and_says_how(store):
    table = triage.triage_table(store, WAV)
    assert triage.options(table)["causes"] == []
    assert not causes.is_diagnosed(store, WAV) and causes.is_diagnosed(store, NAV)
    assert f"trajreview diagnose --run {WAV}" in causes.diagnose_hint(WAV)
    assert causes.undiagnosed_runs(store, [WAV, NAV]) == [WAV]


def test_counts_by_primary_cause_cover_every_failed_task_with_shares_and_intervals(store):
    table = causes.cause_breakdown(store, [OPAGENT, WAV, NAV])
    assert set(table["run"]) == {OPAGENT, NAV}  # wav-demo is not diagnosed
    for run in (OPAGENT, NAV):
        part = table[table["run"] == run]
        assert part["tasks"].sum() == len(_failed(store, run)) == part["failed"].iloc[0]
        assert part["share"].sum() == pytest.approx(1.0)
        assert (part["ci_low"] <= part["share"]).all() and (part["share"] <= part["ci_high"]).all()
    opagent = table[table["run"] == OPAGENT].set_index("cause")
    assert opagent.loc["wrong_element", "by_model"] == 1
    assert list(opagent.index) == [c for c in causes.ORDER if c in opagent.index]  # precedence order


def test_compare_by_cause_counts_fixed_and_broken_tasks_per_primary_cause(store):
    cmp = causes.compare_causes(store, OPAGENT, BABEL)
    rows = store.query(
        f"""WITH v AS ({verdicts_sql(one_run=False)})
            SELECT a.task_id, a.verdict, b.verdict FROM v a JOIN v b ON a.task_id = b.task_id
            WHERE a.run = ? AND b.run = ?""",
        [OPAGENT, BABEL],
    )
    fixed = {t for t, va, vb in rows if va in ("failure", "error") and vb == "success"}
    broke = {t for t, va, vb in rows if va == "success" and vb in ("failure", "error")}
    assert cmp.fixed == len(fixed) > 0 and cmp.broke == len(broke) > 0
    primary_a = {t: c for _, t, c, _ in store.query(causes.primary_causes_sql(), {"run": OPAGENT})}
    primary_b = {t: c for _, t, c, _ in store.query(causes.primary_causes_sql(), {"run": BABEL})}
    for change in cmp.changes:
        assert change.fixed == sum(1 for t in fixed if primary_a.get(t) == change.cause)
        assert change.broke == sum(1 for t in broke if primary_b.get(t) == change.cause)
    # The totals are the Compare page's 2x2: A failed and B passed, A passed and B failed.
    outcomes = compare_runs(store, OPAGENT, BABEL).outcomes
    assert (cmp.fixed, cmp.broke) == (outcomes["B only"], outcomes["A only"])
    sentence = cmp.sentence()
    assert f"{BABEL} fixed {len(fixed)} of {OPAGENT}'s failures" in sentence
    assert f"broke {len(broke)} of {OPAGENT}'s passes" in sentence


def test_the_landing_page_groups_a_diagnosed_run_by_its_primary_cause(store):
    groups = failures.failures_by_cause(store, NAV)
    assert sorted(g.cause for g in groups) == sorted(
        causes.cause_name(c) for (_, _, c, _) in store.query(causes.primary_causes_sql(), {"run": NAV})
    )
    assert all(item.cause for g in groups for item in g.items)
    # A cause named first; no specific cause found after every cause, however many tasks it holds.
    opagent = failures.failures_by_cause(store, OPAGENT)
    names = [g.cause for g in opagent]
    fallback = names.index(causes.cause_name("no_specific_cause"))
    assert len(opagent[fallback].items) == max(len(g.items) for g in opagent)
    assert all(causes.cause_name(c) not in names[fallback:] for c in causes.PRECEDENCE)
    model = [i for g in opagent for i in g.items if i.cause_by_model]
    assert [(OPAGENT, i.task_id) for i in model] == [OPEN_TASK]
    # A run without causes keeps the evaluator-sentence groups.
    assert all(item.cause is None for g in failures.failures_by_cause(store, WAV) for item in g.items)


def test_accept_labels_the_task_with_who_and_when_in_one_write_and_keeps_its_note(store):
    from core.review.annotations import annotate

    annotate(store, "task", "Ada", run=NAV, task_id=374, note="look at the 502")
    decide_cause(store, NAV, 374, "environment", "accepted", "Grace", label=CAUSE_LABEL["environment"])
    now = current(store, "task", NAV, 374)
    assert (now["label"], now["note"], now["author"]) == ("environment broken", "look at the 502", "Grace")
    d = causes.task_causes(store, NAV, 374).decision
    assert (d.decision, d.cause, d.author) == ("accepted", "environment", "Grace") and d.at is not None
    assert "environment broken" in triage.triage_table(store, NAV).row(374).label


def test_reject_records_the_decision_and_leaves_the_label(store):
    decide_cause(store, NAV, 374, "environment", "rejected", "Grace")
    assert current(store, "task", NAV, 374) is None
    d = causes.task_causes(store, NAV, 374).decision
    assert (d.decision, d.author) == ("rejected", "Grace")


def test_decisions_are_checked(store):
    with pytest.raises(InputError):
        decide_cause(store, NAV, 374, "environment", "maybe", "Grace")
    with pytest.raises(InputError):
        decide_cause(store, NAV, 374, "environment", "accepted", "Grace")  # no label
    with pytest.raises(NotFound):
        decide_cause(store, NAV, 374, "looped", "rejected", "Grace")  # not suggested for this task
    with pytest.raises(InputError):
        decide_cause(store, NAV, 374, "environment", "rejected", " ")
    assert store.query("SELECT count(*) FROM annotations WHERE target = 'diagnosis'")[0][0] == 0


def test_an_undecided_suggestion_cannot_be_decided(rules_only):
    with Store(rules_only) as store:
        assert causes.task_causes(store, *OPEN_TASK).primary.cause == "undecided"
        with pytest.raises(InputError):
            decide_cause(store, *OPEN_TASK, "undecided", "rejected", "Grace")


@pytest.mark.slow
def test_show_prints_the_causes_with_their_evidence(seeded):
    from typer.testing import CliRunner

    from core.cli.main import app

    runner = CliRunner()
    out = runner.invoke(app, ["--db", str(seeded), "show", "--run", NAV, "--task", "374"])
    assert out.exit_code == 0, out.output
    assert "suggested cause: environment broken (rule trace_server_errors)" in out.output
    assert "evidence event 359 (HTTP 502)" in out.output
    out = runner.invoke(app, ["--db", str(seeded), "show", "--run", OPAGENT, "--task", str(OPEN_TASK[1])])
    assert "(suggested by a model)" in out.output and "reasoning:" in out.output
    out = runner.invoke(app, ["--db", str(seeded), "show", "--run", WAV, "--task", "107"])
    assert f"not diagnosed yet (`trajreview diagnose --run {WAV}`)" in out.output


@pytest.mark.slow
def test_the_html_report_includes_the_causes_breakdown(store):
    from dashboard import report

    text = report.build(store, [WAV, NAV, OPAGENT, BABEL])
    assert "Failures by suggested cause" in text and "share of failures [95 % CI]" in text
    assert f"trajreview diagnose --run {WAV}" in text
    assert "environment broken" in text
    assert "By suggested cause" in text and "s failures" in text


def test_the_task_page_shows_the_suggestion_and_accept_labels_the_task(open_page, seeded):
    at = open_page(seeded, "views/task.py", name="Ada Lovelace", run=NAV, task="374")
    assert "Suggested cause: environment broken" in page_texts(at)
    links = {link.proto.label.replace("\\", ""): link.proto.query_string for link in at.get("page_link")}
    event = next(label for label in links if label.startswith("event #359 · HTTP 502"))
    assert links[event] == f"run={NAV}&task=374&tab=Network&ev=359"  # the Network tab opens on that event
    accept = next(b for b in at.button if b.key == "cause-accept")
    accept.click().run()
    assert not at.exception
    assert "environment broken accepted by Ada Lovelace" in page_texts(at).replace("*", "")
    buttons = {b.key: b for b in at.button}
    assert buttons["cause-accept"].disabled and not buttons["cause-reject"].disabled  # the other choice stays
    with Store(seeded, read_only=True) as s:
        assert current(s, "task", NAV, 374)["author"] == "Ada Lovelace"


def test_step_evidence_links_to_the_step_and_a_model_suggestion_says_so(open_page, seeded):
    with Store(seeded, read_only=True) as s:
        task, step, last, n = s.query(
            "SELECT task_id, (evidence->0->>'step_idx')::INTEGER, (evidence->-1->>'step_idx')::INTEGER,"
            " json_array_length(evidence) AS n FROM failure_causes WHERE run = ? AND is_primary"
            " AND cause = 'looped' ORDER BY n DESC, task_id LIMIT 1", [OPAGENT],
        )[0]  # fmt: skip
    at = open_page(seeded, "views/task.py", name="Ada", run=OPAGENT, task=str(task))
    queries = [link.proto.query_string for link in at.get("page_link")]
    assert f"run={OPAGENT}&task={task}&tab=Steps&step={step}" in queries
    # The rule named after its cause is not named again; past the first few, the evidence is folded away.
    text = page_texts(at).replace("*", "")
    assert "Suggested cause: looped · found by a rule" in text and "rule looped" not in text
    assert n > 3
    more = next(e for e in at.expander if e.label == f"{n - 3} more evidence items")
    assert f"run={OPAGENT}&task={task}&tab=Steps&step={last}" in [
        link.proto.query_string for link in more.get("page_link")
    ]
    at = open_page(seeded, "views/task.py", name="Ada", run=OPEN_TASK[0], task=str(OPEN_TASK[1]))
    text = page_texts(at)
    assert "suggested by a model" in text and "The model's reasoning:" in text
    reject = next(b for b in at.button if b.key == "cause-reject")
    reject.click().run()
    assert "rejected by Ada" in page_texts(at).replace("*", "")


def test_triage_filters_on_the_cause_in_its_url_and_shows_the_cause_column(open_page, seeded):
    at = open_page(seeded, "views/triage.py", run=OPAGENT, cause=["step_limit", "wrong_element"])
    with Store(seeded, read_only=True) as s:
        wanted = {t for _, t, c, _ in s.query(causes.primary_causes_sql(), {"run": OPAGENT})
                  if c in ("step_limit", "wrong_element")}  # fmt: skip
        total = len(triage.triage_table(s, OPAGENT))
    assert f"**{len(wanted)}** of {total} tasks" in [c.value for c in at.caption][1]
    shown = at.dataframe[0].value
    assert set(shown["task_id"]) == wanted
    assert "wrong element (model)" in set(shown["cause"])
    assert set(shown["cause"]) <= {"hit the step limit", "wrong element", "wrong element (model)"}


def test_an_undecided_suggestion_offers_no_decision_and_an_undiagnosed_run_says_how(
    open_page, seeded, rules_only
):
    at = open_page(rules_only, "views/task.py", name="Ada", run=OPEN_TASK[0], task=str(OPEN_TASK[1]))
    assert "Suggested cause: undecided" in page_texts(at)
    assert not [b for b in at.button if b.key in ("cause-accept", "cause-reject")]
    at = open_page(seeded, "views/task.py", name="Ada", run=WAV, task="107")
    assert causes.diagnose_hint(WAV) in page_texts(at)
    at = open_page(seeded, "views/triage.py", run=WAV)
    box = next(m for m in at.multiselect if m.label == "Suggested cause")
    assert box.disabled and box.options == []


def test_the_pages_show_causes(open_page, seeded):
    at = open_page(seeded, "views/breakdowns.py", runs=[OPAGENT, WAV], dim="failure cause")
    assert f"trajreview diagnose --run {WAV}" in page_texts(at)
    assert at.get("plotly_chart")
    at = open_page(seeded, "views/compare.py", a=OPAGENT, b=BABEL)
    assert f"{BABEL} fixed" in page_texts(at)
    at = open_page(seeded, "views/judge.py")
    assert "Suggested causes vs reviewer labels" in [h.value for h in at.subheader]


def test_the_agreement_panel_shows_the_engines_figures_with_n_and_intervals(store):
    """The Labels page panel over the engine's agreement with reviewers' labels: one accepted suggestion
    and one task labelled with another cause give n = 2, below the bootstrap's minimum."""
    from core.diagnose.agreement import agreement_from_store
    from core.measure.stats import TOO_FEW
    from core.review.annotations import annotate
    from dashboard.components.cause_agreement import agreement_rows, kappa_text

    decide_cause(store, NAV, 374, "environment", "accepted", "Grace", label=CAUSE_LABEL["environment"])
    decide_cause(store, BABEL, 2, "evaluator_strict", "rejected", "Grace")
    annotate(store, "task", "Grace", run=BABEL, task_id=2, label=CAUSE_LABEL["gave_up"])
    # The rule of last resort names no cause: a label there is counted apart, not as a disagreement.
    (fallback,) = store.query(
        "SELECT task_id FROM failure_causes WHERE run = ? AND is_primary AND rule = 'answered_wrong'"
        " ORDER BY task_id LIMIT 1",
        [BABEL],
    )[0]
    annotate(store, "task", "Grace", run=BABEL, task_id=fallback, label=CAUSE_LABEL["gave_up"])
    result = agreement_from_store(store, [NAV, BABEL])
    assert (result.n, result.n_undecided, result.n_fallback, result.n_fallback_right) == (2, 0, 1, 0)
    rows = agreement_rows(result).set_index("cause")
    assert rows.loc["environment broken", "precision [95 % CI]"].endswith(" of 1")
    assert rows.loc["environment broken", "precision [95 % CI]"].startswith("100.0 %")
    assert rows.loc["gave up early", "precision [95 % CI]"] == "– (none suggested)"
    assert rows.loc["gave up early", "recall [95 % CI]"].startswith("0.0 %")
    assert TOO_FEW in kappa_text(result) and "n=2" in kappa_text(result)


def test_the_cause_chart_lists_causes_in_precedence_order_across_runs(store):
    from dashboard.charts import cause_bars

    table = causes.cause_breakdown(store, [NAV, BABEL, OPAGENT])
    shown = list(cause_bars(table).layout.yaxis.categoryarray)[::-1]  # plotly lists categories bottom up
    assert shown == [causes.cause_name(c) for c in causes.ORDER if c in set(table["cause"])]
    assert len(shown) > len(set(table.loc[table["run"] == NAV, "cause"]))  # more than one run's causes


def test_the_landing_page_links_each_cause_group_to_triage_on_that_cause(open_page, seeded):
    with Store(seeded, read_only=True) as s:
        run = failures.latest_run(s)
        groups = failures.failures_by_cause(s, run)
        assert causes.is_diagnosed(s, run) and groups
    for place, g in enumerate(groups[:8]):  # one group's tasks at a time, chosen in the URL
        at = open_page(seeded, "views/runs.py", group=str(place))
        assert "by their suggested primary cause" in page_texts(at)
        queries = {link.proto.query_string for link in at.get("page_link")}
        code = g.items[0].cause
        assert f"run={run}&cause={code}&verdict=failure&verdict=error" in queries


def test_a_failed_task_without_a_cause_is_offered_and_found_as_none(store):
    store.query("DELETE FROM failure_causes WHERE run = ? AND task_id = 374", [NAV])
    table = triage.triage_table(store, NAV)
    assert triage.options(table)["causes"][-1] == triage.NONE
    shown = triage.apply_filter(table, triage.TriageFilter(causes=(triage.NONE,), verdicts=("failure",)))
    assert shown.task_ids() == [374]
    part = causes.cause_breakdown(store, [NAV])
    assert NOT_DIAGNOSED in set(part["name"]) and part["tasks"].sum() == len(_failed(store, NAV))


def test_the_fallback_is_said_as_no_cause_and_a_rule_shows_its_precision(open_page, seeded):
    """Task 22's only finding is the rule of last resort: the page says no specific cause was found, not
    'answered wrong'; task 25's rule shows how often it was right on our labels. Accepting the fallback
    makes it a cause like any other."""
    from core.diagnose.precision import RULE_PRECISION
    from core.diagnose.taxonomy import NO_SPECIFIC_SENTENCE

    at = open_page(seeded, "views/task.py", name="Ada", run=OPAGENT, task="22")
    text = page_texts(at).replace("*", "")
    assert NO_SPECIFIC_SENTENCE in text and "Suggested cause: answered wrong" not in text
    # Its figure says what it measures (how often nothing more specific was behind it), not "right on".
    assert RULE_PRECISION["answered_wrong"].fallback_sentence() in text and "This rule was" not in text
    at = open_page(seeded, "views/task.py", name="Ada", run=OPAGENT, task="25")
    text = page_texts(at).replace("*", "")
    assert "Suggested cause: evaluator stricter than the task" in text
    assert RULE_PRECISION["other_runs_agree"].sentence() in text
    queries = [link.proto.query_string for link in at.get("page_link")]
    assert f"run={BABEL}&task=25" in queries  # the witness opens the other run's attempt
    with Store(seeded) as s:
        table = triage.triage_table(s, OPAGENT)
        assert {r.task_id: r.cause for r in table.rows}[22] == "no_specific_cause"
        decide_cause(s, OPAGENT, 22, "wrong_answer", "accepted", "Ada", label=CAUSE_LABEL["wrong_answer"])
    at = open_page(seeded, "views/task.py", name="Ada", run=OPAGENT, task="22")
    assert "Suggested cause: answered wrong" in page_texts(at).replace("*", "")
    with Store(seeded, read_only=True) as s:
        assert {r.task_id: r.cause for r in triage.triage_table(s, OPAGENT).rows}[22] == "wrong_answer"


def test_the_headline_share_counts_specific_causes_only(store):
    table = causes.cause_breakdown(store, [OPAGENT])
    (line,) = causes.explained(table)
    no_specific = int(table.loc[table["cause"] == "no_specific_cause", "tasks"].sum())
    assert line.no_specific == no_specific > 0
    assert (
        line.specific + no_specific + int(table.loc[table["cause"] == "undecided", "tasks"].sum())
        == line.failed
    )
    assert f"a specific cause for {line.specific} of {line.failed} failed tasks" in line.sentence()
