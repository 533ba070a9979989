"""Reviewer writes in the dashboard through AppTest on the demo data: marks on judged pairs, labels and
notes, the Labels & judge page, the name asked once per session, and a read-only instance that shows
no write control."""

from __future__ import annotations

import shutil

import pytest
from demo_support import GOLD
from streamlit.testing.v1 import AppTest

from core.store import Store
from dashboard.db import fingerprint

TRIAGE, TASK, JUDGE = "views/triage.py", "views/task.py", "views/judge.py"
RUN = "opagent"


@pytest.fixture
def db(demo_db, tmp_path):
    path = tmp_path / "demo.duckdb"
    shutil.copy(demo_db, path)
    return path


@pytest.fixture
def task_id(db) -> int:
    with Store(db, read_only=True) as s:
        return s.query(
            "SELECT task_id FROM metrics WHERE run = ? AND n_agent > n_gold ORDER BY task_id LIMIT 1", [RUN]
        )[0][0]


def _mark_controls(at: AppTest):
    return [b for b in at.button_group if (b.key or "").startswith("w:mark-")]


def _annotations(db, target: str) -> list[dict]:
    with Store(db, read_only=True) as s:
        return s.query_dicts("SELECT * FROM annotations WHERE target = ? ORDER BY id", [target])


def test_marks_need_a_name_then_write_one_row_each(open_page, db, task_id):
    at = open_page(db, TASK, run=RUN, task=str(task_id), tab="Alignment")
    controls = _mark_controls(at)
    assert controls and all(c.disabled for c in controls)  # nobody said who they are yet
    at.text_input(key="name-marks").input("Ada Reviewer").run()
    controls = _mark_controls(at)
    assert not any(c.disabled for c in controls)
    controls[0].set_value("wrong").run()
    _mark_controls(at)[1].set_value("right").run()
    rows = _annotations(db, "judgment")
    assert [(r["label"], r["author"]) for r in rows] == [("wrong", "Ada Reviewer"), ("right", "Ada Reviewer")]
    assert all(r["run"] == RUN and r["task_id"] == task_id and r["gold_set"] == GOLD for r in rows)
    assert {r["judge_verdict"] for r in rows} <= {True, False}
    assert any(f"2 of {len(controls)} pairs marked" in m.value for m in at.markdown)
    assert [c.value for c in _mark_controls(at)[:2]] == ["wrong", "right"]  # read back after the rerun

    # Another session: the name is asked again; the marks are there.
    again = open_page(db, TASK, run=RUN, task=str(task_id), tab="Alignment")
    assert [c.value for c in _mark_controls(again)[:2]] == ["wrong", "right"]
    assert again.text_input(key="name-marks").value in ("", None)


def test_task_label_and_note_then_triage_filters_by_it(open_page, db, task_id):
    at = open_page(db, TASK, name="Ada", run=RUN, task=str(task_id))
    key = f"task-{RUN}-{task_id}"
    at.selectbox(key=f"label-{key}").select("wrong element")
    at.text_area(key=f"note-{key}").input("clicked the second row instead of the first")
    next(b for b in at.button if b.label == "Save" and key in (b.form_id or "")).click().run()
    assert not at.exception
    rows = _annotations(db, "task")
    assert [(r["label"], r["note"], r["author"]) for r in rows] == [
        ("wrong element", "clicked the second row instead of the first", "Ada")
    ]
    assert any("wrong element" in m.value for m in at.markdown)

    triage = open_page(db, TRIAGE, run=RUN, label="wrong element")
    assert triage.dataframe[0].value["task_id"].tolist() == [task_id]
    assert "wrong element" in triage.multiselect(key="url:label").options


def test_step_label_on_the_steps_tab(open_page, db, task_id):
    at = open_page(db, TASK, name="Ada", run=RUN, task=str(task_id), step="1")
    key = f"step-{RUN}-{task_id}-0-1"
    at.selectbox(key=f"label-{key}").select("context drift")
    next(b for b in at.button if b.label == "Save" and key in (b.form_id or "")).click().run()
    rows = _annotations(db, "step")
    assert [(r["step_idx"], r["episode"], r["label"]) for r in rows] == [(1, "0", "context drift")]
    triage = open_page(db, TRIAGE, run=RUN, label="context drift")
    assert triage.dataframe[0].value["task_id"].tolist() == [task_id]


def test_run_label_on_triage(open_page, db):
    at = open_page(db, TRIAGE, name="Ada", run=RUN)
    at.selectbox(key=f"label-run-{RUN}").select("environment broken")
    next(b for b in at.button if b.label == "Save" and f"run-{RUN}" in (b.form_id or "")).click().run()
    rows = _annotations(db, "run")
    assert [(r["run"], r["task_id"], r["label"], r["author"]) for r in rows] == [
        (RUN, None, "environment broken", "Ada")
    ]


def test_labels_and_judge_page(open_page, db, task_id):
    empty = open_page(db, JUDGE, name="Ada")
    assert any("No reviewer marks yet" in i.value for i in empty.info)
    assert {"context drift", "environment broken"} <= set(empty.dataframe[0].value["label"])

    at = open_page(db, TASK, name="Ada", run=RUN, task=str(task_id), tab="Alignment")
    for i, value in enumerate(["right", "wrong", "right"]):
        _mark_controls(at)[i].set_value(value).run()
    with Store(db) as s:
        from core.review.annotations import annotate

        annotate(s, "task", "Ada", run=RUN, task_id=task_id, label="gave up early")
    page = open_page(db, JUDGE, name="Ada")
    table = page.dataframe[0].value
    overall = table[table["stage"] == "all"].iloc[0]
    assert overall["n"] + overall["unresolved"] == 3
    assert len(page.get("plotly_chart")) == 2  # κ per stage, labels per run and site
    assert page.metric[0].value == "3"

    page.text_input(key="w:new-label").input("login expired")
    page.text_input(key="w:new-label-description").input("the session was logged out")
    next(b for b in page.button if b.label == "Add label").click().run()
    vocab = page.dataframe[-1].value
    assert "login expired" in set(vocab["label"])


def test_read_only_instance_shows_no_write_control(open_page, db, task_id):
    with Store(db) as s:
        from core.review.annotations import PairMark, annotate, mark_pairs

        annotate(s, "task", "Ada", run=RUN, task_id=task_id, label="wrong element", note="seen")
        mark_pairs(s, [PairMark(RUN, task_id, "0", GOLD, 1, 0, 0, 0, "offline", True, "rule", 1.0, "right")],
                   "Ada")  # fmt: skip
    before = fingerprint(db)
    pages = [
        open_page(db, TASK, read_only=True, name="Ada", run=RUN, task=str(task_id)),
        open_page(db, TASK, read_only=True, name="Ada", run=RUN, task=str(task_id), tab="Alignment"),
        open_page(db, TASK, read_only=True, name="Ada", run=RUN, task=str(task_id), tab="Network"),
        open_page(db, JUDGE, read_only=True, name="Ada"),
    ]
    writes = {
        "Save",
        "Add label",
        "Retire",
        "Log in to write",
        "Compute metrics for this task (offline judge)",
    }
    for at in pages:
        assert not [b.label for b in at.button if b.label in writes]
        assert not _mark_controls(at)
        assert not [t.key for t in at.text_input if not t.key.startswith("url:")]
        assert not at.text_area
    assert fingerprint(db) == before  # opened read-only: the file never changed
    # What reviewers wrote is still shown.
    assert any("wrong element" in m.value for m in pages[0].markdown)
    assert any("Read-only instance" in c.value for c in pages[0].caption)


def test_name_is_asked_once_per_session_and_can_be_changed(open_page, db):
    at = open_page(db, JUDGE)
    assert at.button(key="FormSubmitter:w:add-label-Add label").disabled
    at.text_input(key="name-vocabulary").input("Ada").run()
    assert any("Writing as **Ada**" in c.value for c in at.sidebar.caption)
    assert not at.button(key="FormSubmitter:w:add-label-Add label").disabled
    at.sidebar.button(key="forget-name").click().run()
    assert not at.exception
    assert at.button(key="FormSubmitter:w:add-label-Add label").disabled
    assert at.text_input(key="name-vocabulary").value in ("", None)
