"""Suspected evaluator defects and the success rate with confirmed defects, on the shipped demo as the real
engine diagnoses it: the read model (core/queries/defects.py) with the rules' comparison and its fallback
to the stored task, the reviewer's confirmation through the task page's own write (decide_cause), the rate
beside the official one on every reader of it (core/queries/defect_rate.py), `diagnose --defects`, and
the page. Rows with the comparison keys the rules do not write yet come from tests/defect_support.py."""

from __future__ import annotations

import csv
import io
import re
import shutil
from pathlib import Path

import orjson
import pytest
from apptest_support import page_texts
from cli_support import run_cli
from defect_support import insert_defect, strip_comparison
from demo_support import BABEL, NAV, OPAGENT, WAV

from core.diagnose.findings import Evidence
from core.diagnose.run import diagnose_run
from core.diagnose.taxonomy import CAUSE_LABEL
from core.queries import breakdowns, compare, defect_list, defect_rate, defects
from core.queries.evidence import parse_json
from core.queries.runs import runs_table, verdicts_sql
from core.review.annotations import annotate, decide_cause
from core.store import Store
from core.values import is_missing, normalise_text

RUNS = (OPAGENT, BABEL, WAV, NAV)
DEFECT = "evaluator_strict"


@pytest.fixture(scope="module")
def diagnosed_db(demo_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the shipped demo with every run diagnosed again (rules only) by the real engine."""
    path = tmp_path_factory.mktemp("defects") / "demo.duckdb"
    shutil.copy(demo_db, path)
    with Store(path) as store:
        for run in RUNS:
            diagnose_run(store, run, llm=None)
    return path


@pytest.fixture
def db(diagnosed_db: Path, tmp_path: Path) -> Path:
    """A writable copy of the diagnosed demo for one test."""
    path = tmp_path / "demo.duckdb"
    shutil.copy(diagnosed_db, path)
    return path


def _failed(store: Store, run: str) -> set[int]:
    rows = store.query(
        f"WITH v AS ({verdicts_sql()}) SELECT task_id FROM v WHERE verdict IN ('failure', 'error')",
        {"run": run},
    )
    return {t for (t,) in rows}


def _suggested(store: Store, run: str) -> set[int]:
    rows = store.query("SELECT task_id FROM failure_causes WHERE run = ? AND cause = ?", [run, DEFECT])
    return {t for (t,) in rows} & _failed(store, run)


def _leaves(value) -> list[str]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [] if value is None or isinstance(value, bool) else [str(value)]


def _accept(store: Store, run: str, task_id: int, author: str = "Ada") -> None:
    decide_cause(store, run, task_id, DEFECT, "accepted", author, label=CAUSE_LABEL[DEFECT])


# -- the list --------------------------------------------------------------------------------------------
def test_every_evaluator_strict_task_of_a_run_is_listed(db: Path):
    with Store(db) as store:
        listed = {run: [d.task_id for d in defects.run_defects(store, run)] for run in RUNS}
        for run in RUNS:
            assert listed[run] == sorted(_suggested(store, run)), run
        assert sum(map(len, listed.values())) >= 3  # the demo has suspected defects in more than one run
        counts = defects.defect_counts(store).set_index("run")
        assert {r: int(n) for r, n in counts["suspected"].items()} == {
            r: len(t) for r, t in listed.items() if t
        }
        assert (counts["confirmed"] == 0).all() and (counts["rejected"] == 0).all()
        # A non-primary row is listed too: the task keeps its primary cause.
        task = min(_failed(store, OPAGENT) - _suggested(store, OPAGENT))
        insert_defect(
            store, OPAGENT, task, [Evidence("evaluator", "string_match: failed", check="string_match")]
        )
        found = {d.task_id: d for d in defects.run_defects(store, OPAGENT)}
        assert task in found and not found[task].is_primary and found[task].rule == "test_rule"


def test_the_rules_comparison_and_witnesses_are_shown_as_recorded(db: Path):
    with Store(db) as store:
        recorded = 0
        for run in RUNS:
            evidence = {
                t: orjson.loads(e)
                for t, e in store.query(
                    "SELECT task_id, evidence::VARCHAR FROM failure_causes WHERE run = ? AND cause = ?",
                    [run, DEFECT],
                )
            }
            for d in defects.run_defects(store, run):
                item = next(
                    (e for e in evidence[d.task_id] if e["kind"] == "evaluator" and e.get("check")), None
                )
                assert d.from_evidence == (item is not None)
                if item is None:
                    continue
                recorded += 1
                for key in ("check", "reference", "actual", "verified"):
                    assert getattr(d, key)[:100] == normalise_text(item[key])[:100], (run, d.task_id, key)
                witnesses = [(e["run"], e["supports"]) for e in evidence[d.task_id] if e["kind"] == "witness"]
                assert [(w.run, w.supports) for w in d.witnesses] == witnesses
        assert recorded >= 1  # the demo's diagnosis already writes the keys for some rules

        # Every key, as a rule will write it (the helper stands for that rule).
        task = min(_failed(store, BABEL) - _suggested(store, BABEL))
        insert_defect(store, BABEL, task, [
            Evidence("evaluator", "url_match: the last page differs", check="url_match", reference="__GITLAB__/a",
                     actual="http://host/a/", verified="__GITLAB__/a"),
            Evidence("witness", "run x failed with the same page", run="run-x", task_id=task, supports=True),
            Evidence("witness", "run y passed with another page", run="run-y", task_id=task, supports=False),
        ], primary=False, rule="other_runs_agree")  # fmt: skip
        (d,) = [d for d in defects.run_defects(store, BABEL) if d.task_id == task]
        assert (d.check, d.reference, d.actual, d.verified) == (
            "url_match",
            "__GITLAB__/a",
            "http://host/a/",
            "__GITLAB__/a",
        )
        assert d.witnesses_text() == "supports: run-x; against: run-y" and d.from_evidence


def test_rows_written_before_the_comparison_keys_fall_back_to_the_stored_task(db: Path):
    with Store(db) as store:
        same_answer_witnesses = 0
        for run in (OPAGENT, BABEL):
            assert strip_comparison(store, run) >= 1
            rows = store.query_dicts(
                """SELECT f.task_id, coalesce(t.final_answer, ar.raw_text) AS answer, t.final_url,
                          k.eval::VARCHAR AS verified_eval, r.agent
                   FROM failure_causes f JOIN runs r ON r.name = f.run
                   LEFT JOIN trajectories t ON t.run = f.run AND t.task_id = f.task_id AND t.is_answer
                   LEFT JOIN agent_responses ar ON ar.run = f.run AND ar.task_id = f.task_id
                   LEFT JOIN tasks k ON k.task_id = f.task_id
                   WHERE f.run = ? AND f.cause = ?""",
                [run, DEFECT],
            )
            stored = {r["task_id"]: r for r in rows}
            for d in defects.run_defects(store, run):
                assert not d.from_evidence
                assert all((d.check, d.reference, d.actual, d.verified, d.sites, d.intent, d.summary)), d
                failing = store.query_dicts(
                    """SELECT evaluator, expected::VARCHAR AS expected FROM evaluator_results
                       WHERE run = ? AND task_id = ? AND status <> 'success' ORDER BY status <> 'failure', idx LIMIT 1""",
                    [run, d.task_id],
                )[0]
                assert d.check == failing["evaluator"]
                clipped = d.reference.endswith("…")  # a long reference is shown up to TEXT_LIMIT
                for value in _leaves(parse_json(failing["expected"])):
                    assert normalise_text(value) in d.reference or clipped, (d.task_id, value)
                assert not clipped or len(d.reference) == defects.TEXT_LIMIT
                row = stored[d.task_id]
                # (every demo defect has a failing evaluator: the run's own verdict alone is not the case here)
                page_check = d.check in defects.PAGE_CHECKS and row["final_url"]
                assert (
                    d.actual[:200] == normalise_text(row["final_url"] if page_check else row["answer"])[:200]
                )
                for evaluator in parse_json(row["verified_eval"]) or []:
                    expected = evaluator.get("expected") or {}
                    if (
                        evaluator.get("evaluator") == "AgentResponseEvaluator"
                        and expected.get("status") == "SUCCESS"
                    ):
                        for value in _leaves(expected.get("retrieved_data")):
                            assert value in d.verified, (d.task_id, value)
                # Another agent's run that failed this task with the same answer supports ours.
                others = store.query_dicts(
                    """SELECT e.run, coalesce(t.final_answer, ar.raw_text) AS answer FROM evaluations e
                       JOIN runs r ON r.name = e.run
                       LEFT JOIN trajectories t ON t.run = e.run AND t.task_id = e.task_id AND t.is_answer
                       LEFT JOIN agent_responses ar ON ar.run = e.run AND ar.task_id = e.task_id
                       WHERE e.task_id = ? AND e.run <> ? AND e.status IN ('failure', 'error') AND r.agent <> ?""",
                    [d.task_id, run, row["agent"]],
                )
                for other in others:
                    if (
                        normalise_text(other["answer"] or "").casefold()
                        == normalise_text(row["answer"] or "").casefold()
                    ):
                        same_answer_witnesses += 1
                        assert (other["run"], True) in [(w.run, w.supports) for w in d.witnesses]
        assert same_answer_witnesses >= 2  # both runs answered tasks 25 and 28 alike in the demo


def test_the_review_of_each_defect_follows_the_reviewers_decisions(db: Path):
    with Store(db) as store:
        first, second = [d.task_id for d in defects.run_defects(store, OPAGENT)][:2]
        _accept(store, OPAGENT, first, "Ada")
        decide_cause(store, OPAGENT, second, DEFECT, "rejected", "Bob")
        found = {d.task_id: d for d in defects.run_defects(store, OPAGENT)}
        assert (found[first].review, found[first].reviewed_by) == (defects.CONFIRMED, "Ada")
        assert (found[second].review, found[second].reviewed_by) == (defects.REJECTED, "Bob")
        assert all(d.review == defects.NOT_REVIEWED for t, d in found.items() if t not in (first, second))
        counts = defects.defect_counts(store).set_index("run").loc[OPAGENT]
        assert (counts["confirmed"], counts["rejected"]) == (1, 1)
        # Accepted after the rejection: confirmed again.
        _accept(store, OPAGENT, second, "Cy")
        assert {d.task_id: d.review for d in defects.run_defects(store, OPAGENT)}[second] == defects.CONFIRMED


# -- the rate with confirmed defects -----------------------------------------------------------------------
def _run_row(store: Store, run: str):
    return runs_table(store).set_index("run").loc[run]


def _site_moves(store: Store, run: str) -> dict[str, int]:
    table = breakdowns.breakdowns(store, [run])
    sites = table[table["dimension"] == "site"]
    for row in sites.itertuples(index=False):
        if row.defects_moved:
            assert row.with_defects_rate == pytest.approx((row.successes + row.defects_moved) / row.scored)
        else:
            assert is_missing(row.with_defects_rate) and is_missing(row.with_defects)
    return {row.value: int(row.defects_moved) for row in sites.itertuples(index=False) if row.defects_moved}


def test_an_acceptance_moves_the_rate_by_exactly_the_confirmed_tasks(db: Path, tmp_path: Path):
    with Store(db) as store:
        before = _run_row(store, OPAGENT)
        assert (
            before["defects_moved"] == 0
            and is_missing(before["with_defects"])
            and _site_moves(store, OPAGENT) == {}
        )
        listed = defects.run_defects(store, OPAGENT)
        assert len(listed) >= 2
        accepted = listed[:2]
        for d in accepted:
            _accept(store, OPAGENT, d.task_id)
        after = _run_row(store, OPAGENT)
        # The official figures do not move; the second figure moves by exactly the accepted failed tasks.
        for column in ("scored", "successes", "failures", "errors", "success_rate", "ci_low", "ci_high"):
            assert after[column] == before[column], column
        assert after["defects_moved"] == 2
        assert after["with_defects_rate"] == pytest.approx((before["successes"] + 2) / before["scored"])
        assert after["with_defects"].endswith(f"of {before['scored']} (+2 tasks)")
        assert defects.run_defect_rate(store, OPAGENT) == defect_rate.DefectRate(
            int(before["scored"]), int(before["successes"]), 2
        )
        sites: dict[str, int] = {}
        for d in accepted:
            sites[d.sites] = sites.get(d.sites, 0) + 1
        assert _site_moves(store, OPAGENT) == sites
        assert _run_row(store, BABEL)["defects_moved"] == 0  # another run's rate is its own

        # Compare, each run over the paired tasks; the official difference stays official.
        cmp = compare.compare_runs(store, BABEL, OPAGENT)
        paired = set(cmp.pairs["task_id"])
        assert cmp.with_defects[OPAGENT].moved == sum(d.task_id in paired for d in accepted)
        assert cmp.with_defects[OPAGENT].successes == round(cmp.success["rate_b"] * cmp.success["n"])
        assert cmp.with_defects[BABEL].moved == 0

        # A confirmed defect on a passed task moves nothing.
        passed = store.query(
            f"WITH v AS ({verdicts_sql()}) SELECT min(task_id) FROM v WHERE verdict = 'success'",
            {"run": OPAGENT},
        )[0][0]
        annotate(store, "task", "Ada", run=OPAGENT, task_id=passed, label=CAUSE_LABEL[DEFECT])
        assert _run_row(store, OPAGENT)["defects_moved"] == 2

    # The HTML report and `trajreview report` show it beside the official rate.
    text = after["with_defects"]
    out = tmp_path / "report.html"
    run_cli("report", "--html", str(out), "--run", BABEL, "--run", OPAGENT, db=db, check=True)
    html = out.read_text(encoding="utf-8")
    assert defect_rate.WITH_DEFECTS in html and text in html
    printed = run_cli("report", "--run", OPAGENT, "--format", "csv", db=db, check=True).stdout
    assert f"{OPAGENT},{before['successes']}/{before['scored']}," in printed and text in printed

    with Store(db) as store:
        # A rejection un-confirms one; a later, different label the other: back to the official rate alone.
        decide_cause(store, OPAGENT, accepted[0].task_id, DEFECT, "rejected", "Bob")
        assert _run_row(store, OPAGENT)["defects_moved"] == 1
        annotate(
            store, "task", "Bob", run=OPAGENT, task_id=accepted[1].task_id, label=CAUSE_LABEL["wrong_answer"]
        )
        back = _run_row(store, OPAGENT)
        assert (
            back["defects_moved"] == 0
            and is_missing(back["with_defects"])
            and is_missing(back["with_defects_rate"])
        )
        assert _site_moves(store, OPAGENT) == {}
    assert "no confirmed evaluator defects" in run_cli("report", "--run", OPAGENT, db=db, check=True).stdout


# -- the command line --------------------------------------------------------------------------------------
def test_diagnose_defects_prints_the_list_in_three_formats(db: Path):
    with Store(db, read_only=True) as store:
        listed = defects.run_defects(store, OPAGENT)
    n = len(listed)
    md = run_cli("diagnose", "--defects", "--run", OPAGENT, "--format", "md", db=db, check=True).stdout
    lines = md.splitlines()
    assert lines[0].startswith(f"# Suspected evaluator defects of run {OPAGENT}: {n} tasks")
    table = [line for line in lines if line.startswith("| ")]
    assert len(table) == n + 1 and table[0].startswith("| task | sites | intent | check |")
    assert [line.split(" | ")[0] for line in table[1:]] == [f"| {d.task_id}" for d in listed]
    rows = list(csv.DictReader(io.StringIO(run_cli(
        "diagnose", "--defects", "--run", OPAGENT, "--format", "csv", db=db, check=True).stdout)))  # fmt: skip
    assert [int(r["task_id"]) for r in rows] == [d.task_id for d in listed]
    assert list(rows[0]) == list(defect_list.COLUMNS) and all(r["check"] and r["verified"] for r in rows)
    shown = run_cli("diagnose", "--defects", "--run", OPAGENT, db=db, check=True).stdout
    assert (
        shown.startswith(defect_list.defects_heading(OPAGENT, listed))
        and "suspected evaluator defects" in shown
    )

    for args, message in (
        (("--run", "no-such-run"), "error: no run named 'no-such-run'"),
        (
            ("--run", OPAGENT, "--format", "json"),
            "error: --format: with --defects must be one of table, csv, md",
        ),
        ((), "error: --run:"),
        (("--run", OPAGENT, "--agreement"), "error: --agreement: does not apply to --defects"),
    ):
        result = run_cli("diagnose", "--defects", *args, db=db)
        assert result.returncode == 2 and result.stdout == ""
        assert result.stderr.startswith(message) and len(result.stderr.strip().splitlines()) == 1, (
            result.stderr
        )


def test_agent_text_stays_text_in_the_markdown_list(db: Path):
    hostile = "x | y <img src=x onerror=alert(1)> *bold* [link](http://evil)\nnext line"
    with Store(db) as store:
        task = min(_failed(store, OPAGENT) - _suggested(store, OPAGENT))
        insert_defect(store, OPAGENT, task, [
            Evidence("evaluator", "string_match: failed", check="string_match", reference="ref", actual=hostile,
                     verified="v"),
        ])  # fmt: skip
        listed = defects.run_defects(store, OPAGENT)
    md = defect_list.defects_markdown(OPAGENT, listed)
    (row,) = [line for line in md.splitlines() if line.startswith(f"| {task} |")]
    cells = len(defect_list.COLUMNS) - 1  # the heading names the run
    assert row.replace("\\|", "").count("|") == cells + 1
    assert re.search(r"(?<!\\)[<>]", md) is None  # no tag a Markdown renderer would read as HTML
    assert "\\<img src=x onerror=alert(1)\\>" in md and "\\*bold\\*" in md
    assert "next line" in row  # one table row, whatever the agent's line breaks


# -- the pages ---------------------------------------------------------------------------------------------
def test_the_defects_page_opens_cold_from_its_url(open_page, db: Path):
    with Store(db) as store:
        listed = defects.run_defects(store, OPAGENT)
        _accept(store, OPAGENT, listed[0].task_id)
    at = open_page(db, "views/defects.py", run=OPAGENT)
    text = page_texts(at)
    assert f"Suspected evaluator defects of run {OPAGENT}: {len(listed)} tasks (1 confirmed" in text
    assert defect_rate.WITH_DEFECTS in text and "(+1 task)" in text
    (frame,) = at.dataframe
    shown = frame.value
    assert [int(t) for t in shown["task_id"]] == [d.task_id for d in listed]
    assert list(shown["open"]) == [f"task?run={OPAGENT}&task={d.task_id}" for d in listed]
    assert list(shown["review"]) == [defects.CONFIRMED] + [defects.NOT_REVIEWED] * (len(listed) - 1)
    assert {b.proto.label for b in at.get("download_button")} == {"CSV", "xlsx", "Markdown"}

    at = open_page(db, "views/defects.py", run=OPAGENT, review=defects.CONFIRMED)
    assert [int(t) for t in at.dataframe[0].value["task_id"]] == [listed[0].task_id]
    at = open_page(db, "views/triage.py", run=OPAGENT)  # Triage links its run's list, with the count
    (link,) = [link for link in at.get("page_link") if link.proto.page.endswith("defects")]
    assert link.proto.query_string == f"run={OPAGENT}"
    assert link.proto.label.replace("\\", "").startswith(
        f"{len(listed)} suspected evaluator defects in {OPAGENT} (1 confirmed)"
    )
    at = open_page(db, "views/defects.py", run="no-such-run")
    assert any("No run named 'no-such-run'" in e.value for e in at.error)


def test_runs_page_shows_the_rate_with_confirmed_defects_beside_the_official_one(open_page, db: Path):
    at = open_page(db)
    columns = list(at.dataframe[0].value.columns)
    assert "success" in columns and "with_defects" not in columns  # nothing confirmed: nothing extra
    with Store(db) as store:
        counts = defects.defect_counts(store).set_index("run")
        links = {
            link.proto.query_string for link in at.get("page_link") if link.proto.page.endswith("defects")
        }
        assert links == {f"run={run}" for run in counts.index}
        task = defects.run_defects(store, OPAGENT)[0].task_id
        _accept(store, OPAGENT, task)
        expected = _run_row(store, OPAGENT)
    at = open_page(db)
    table = at.dataframe[0].value.set_index("run")
    assert (
        table.loc[OPAGENT, "with_defects"] == expected["with_defects"]
        and "(+1 task)" in expected["with_defects"]
    )
    assert table.loc[OPAGENT, "success"].startswith(f"{expected['success_rate'] * 100:.1f} %")
    assert table["with_defects"].drop(OPAGENT).isna().all()
    labels = [link.proto.label.replace("\\", "") for link in at.get("page_link")]
    assert any(label.startswith(f"{OPAGENT}: {int(counts.loc[OPAGENT, 'suspected'])} suspected · 1 confirmed")
               for label in labels)  # fmt: skip


def test_a_stored_value_reads_as_one_line_whatever_its_shape():
    assert defects.value_text(None) == ""
    assert defects.value_text("Mist") == "Mist"
    assert (
        defects.value_text({"must_include": ["a", "b"], "exact_match": "c", "fuzzy_match": "N/A"})
        == "a; b; c; N/A"
    )
    assert defects.value_text([1, "two", 3.5]) == "1; two; 3.5"
    nested = [{"username": "ziostraccette", "count": 0}]
    assert defects.value_text(nested) == '[{"username":"ziostraccette","count":0}]'
    assert len(defects.value_text([{"k": "x" * 2000}])) == defects.TEXT_LIMIT  # cut, as a cell of the list


def test_the_table_says_what_confirmed_defects_move_and_a_run_without_any_says_so(db: Path):
    with Store(db) as store:
        task = defects.run_defects(store, OPAGENT)[0].task_id
        _accept(store, OPAGENT, task)
        rate = defects.run_defect_rate(store, OPAGENT)
        assert defects.run_defects(store, WAV) == []
    shown = run_cli("diagnose", "--defects", "--run", OPAGENT, db=db, check=True).stdout
    assert f"success rate {rate.successes}/{rate.scored}; {rate.sentence()}" in " ".join(shown.split())
    empty = run_cli("diagnose", "--defects", "--run", WAV, db=db, check=True).stdout
    assert "suspected evaluator defects" not in empty and empty.strip()


def test_without_a_failing_check_stored_the_reference_is_the_one_the_run_was_scored_with(db: Path):
    """A defect whose task has no failing evaluator row (the run's own verdict alone, or rows written before
    the comparison keys): the reference comes from the config the verdict used, here OpAgent's original one."""
    with Store(db) as store:
        strip_comparison(store, OPAGENT)
        task = defects.run_defects(store, OPAGENT)[0].task_id
        store.query("DELETE FROM evaluator_results WHERE run = ? AND task_id = ?", [OPAGENT, task])
        original = parse_json(
            store.query("SELECT reference_answers::VARCHAR FROM original_tasks WHERE task_id = ?", [task])[0][
                0
            ]
        )
        d = next(d for d in defects.run_defects(store, OPAGENT) if d.task_id == task)
    wanted = [v for v in _leaves(original) if v]
    assert wanted and all(normalise_text(v) in d.reference for v in wanted), (d.reference, original)
    assert not d.from_evidence and d.check  # the check named by the rule's sentence, as stored
