"""The Gold tab through Streamlit's AppTest on the demo database: save, a refused save that keeps the
draft, history, diff, restore, a draft from the agent's trajectory, stale metrics, the link from Triage,
and a read-only instance that shows no write control."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys

import pytest
from demo_support import GOLD
from streamlit.testing.v1 import AppTest

import dashboard.db
from core.gold import editing as ge
from core.paths import REPO_ROOT
from core.store import Store

APP = str(REPO_ROOT / "dashboard" / "app.py")
TASK, TRIAGE = "views/task.py", "views/triage.py"
TASK_ID = 603  # two alternatives in the demo gold, five steps each, with OpAgent's metrics against them


@pytest.fixture
def gold_db(demo_db, tmp_path):
    path = tmp_path / "gold.duckdb"
    shutil.copy(demo_db, path)
    return path


@pytest.fixture
def gold_tab(monkeypatch, gold_db):
    def _open(
        task: int = TASK_ID, run: str = "opagent", read_only: bool = False, name: str | None = "Ada"
    ) -> AppTest:
        monkeypatch.setenv("TRAJREVIEW_DB", str(gold_db))
        monkeypatch.setenv("TRAJREVIEW_READ_ONLY", "1" if read_only else "")
        at = AppTest.from_file(APP, default_timeout=90)
        at.switch_page(TASK)
        at.query_params.update(run=run, task=str(task), tab="Gold")
        if name:
            at.session_state["trajreview_reviewer_name"] = name
        at.run()
        _ok(at)
        return at

    return _open


def _ok(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def _grid(at: AppTest):
    editors = [d for d in at.dataframe if d.key and ":grid:" in d.key]
    assert len(editors) == 1
    return editors[0]


def _reason(at: AppTest):
    return next(t for t in at.text_input if t.key and ":reason:" in t.key)


def _edit(at: AppTest, edits: dict) -> None:
    at.session_state[_grid(at).key] = {"edited_rows": {}, "added_rows": [], "deleted_rows": [], **edits}
    at.run()
    _ok(at)


def _save(at: AppTest, reason: str) -> None:
    _reason(at).input(reason).run()
    at.button(key="gold-save").click().run()
    _ok(at)


def test_save_writes_a_new_version_from_the_grid(gold_tab, gold_db):
    at = gold_tab()
    grid = _grid(at).value
    with Store(gold_db, read_only=True) as s:
        v1 = ge.version_content(s, GOLD, TASK_ID, 1)
    assert grid["text"].tolist() == [x.text for x in v1[0]]
    assert at.button(key="gold-save").disabled  # nothing changed yet
    # Change step 2, delete step 4, insert a flagged step between 1 and 2 (order 1.5).
    _edit(at, {"edited_rows": {1: {"text": "Click on 'Directions'"}}, "deleted_rows": [3],
               "added_rows": [{"order": 1.5, "text": "Look at the map", "flags": "check"}]})  # fmt: skip
    assert "Unsaved changes" in " ".join(c.value for c in at.caption)
    _save(at, "shorter directions")
    with Store(gold_db, read_only=True) as s:
        v2 = ge.version_content(s, GOLD, TASK_ID, 2)
        top = ge.history(s, GOLD, TASK_ID)[0]
    assert [x.text for x in v2[0]] == [v1[0][0].text, "Look at the map", "Click on 'Directions'", v1[0][2].text,
                                       v1[0][4].text]  # fmt: skip
    assert v2[0][1].flags == ("check",) and v2[1] == v1[1]
    assert (top["version"], top["author"], top["reason"]) == (2, "Ada", "shorter directions")
    # The page now shows version 2, an empty reason for the next edit, the history and the stale metrics.
    assert any("Current: version 2 by Ada" in c.value for c in at.caption)
    assert _reason(at).value == ""
    assert any("Stale metrics" in w.value for w in at.warning)
    history = next(d for d in at.dataframe if d.key is None and "version" in d.value.columns).value
    assert history["version"].tolist() == [2, 1] and history["reason"].tolist()[0] == "shorter directions"


def test_a_refused_save_keeps_the_draft_and_says_who_saved(gold_tab, gold_db):
    at = gold_tab()
    _edit(at, {"edited_rows": {4: {"text": "Click the 'Go' button and wait"}}})
    with Store(gold_db) as s:  # another reviewer saves while Ada edits
        ge.save_gold(s, GOLD, TASK_ID, [["Click 'Directions'"]], "Bob", "bob's version", 1)
    _save(at, "wait for the route")
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and errors[0].startswith(
        f"Not saved: Bob saved version 2 of task {TASK_ID} in {GOLD}"
    )
    assert "\n" not in errors[0]
    with Store(gold_db, read_only=True) as s:
        assert [h["version"] for h in ge.history(s, GOLD, TASK_ID)] == [2, 1]
    # The draft is still on screen, with the reason, next to a warning and the diff against version 2.
    assert at.session_state[_grid(at).key]["edited_rows"] == {4: {"text": "Click the 'Go' button and wait"}}
    assert _reason(at).value == "wait for the route"
    at.run()
    assert any("version 2 has been saved since" in w.value for w in at.warning)
    at.button(key="gold-rebase").click().run()
    at.button(key="gold-save").click().run()
    _ok(at)
    with Store(gold_db, read_only=True) as s:
        v3 = ge.version_content(s, GOLD, TASK_ID, 3)
    assert v3[0][4].text == "Click the 'Go' button and wait"


def test_history_diff_and_restore(gold_tab, gold_db):
    with Store(gold_db) as s:  # a shorter version 2 that keeps the first and last step
        v1 = ge.version_content(s, GOLD, TASK_ID, 1)
        ge.save_gold(s, GOLD, TASK_ID, [[v1[0][0].text, v1[0][-1].text]], "Bob", "short", 1)
    at = gold_tab()
    caption = next(c.value for c in at.caption if c.value.startswith("Version 1 (left)"))
    with Store(gold_db, read_only=True) as s:
        changes = [r for r in ge.diff_versions(s, GOLD, TASK_ID, 1, 2) if r["kind"] != "same"]
    assert f"{len(changes)} step change(s)" in caption
    diff = next(d for d in at.dataframe if "change" in d.value.columns).value
    assert len(diff) == len(changes) and "− removed" in diff["change"].tolist()
    at.toggle[0].set_value(False).run()  # every step, not only the changed ones
    assert len(next(d for d in at.dataframe if "change" in d.value.columns).value) > len(changes)
    at.button(key="gold-restore").click().run()
    _ok(at)
    with Store(gold_db, read_only=True) as s:
        assert ge.version_content(s, GOLD, TASK_ID, 3) == v1
        assert ge.history(s, GOLD, TASK_ID)[0]["reason"] == "restore version 1"
    assert _grid(at).value["text"].tolist() == [x.text for x in v1[0]]  # the draft restarts from it


def test_start_from_the_agent_trajectory_and_recompute(gold_tab, gold_db):
    at = gold_tab(task=148)  # a task without gold in any set
    assert any("no gold" in c.value for c in at.caption)
    at.button(key="gold-from-agent").click().run()
    _ok(at)
    with Store(gold_db, read_only=True) as s:
        (episode,) = s.query(
            "SELECT episode FROM trajectories WHERE run = 'opagent' AND task_id = 148 AND is_answer"
        )[0]
        draft = ge.draft_from_trajectory(s, "opagent", 148, episode)
    assert _grid(at).value["text"].tolist() == draft and draft
    _save(at, "from the agent's steps")
    with Store(gold_db, read_only=True) as s:
        assert [x.text for x in ge.version_content(s, GOLD, 148, 1)[0]] == draft
    # An edit made elsewhere makes its metrics stale; one button recomputes them.
    with Store(gold_db) as s:
        ge.save_gold(s, GOLD, TASK_ID, [["Click 'Go'"]], "Bob", "short", 1)
    at = gold_tab(task=TASK_ID)
    assert any("Stale metrics" in w.value for w in at.warning)
    next(b for b in at.button if b.label == "Recompute (offline judge)").click().run()
    _ok(at)
    assert not any("Stale metrics" in w.value for w in at.warning)
    with Store(gold_db, read_only=True) as s:
        assert ge.stale_metrics(s, TASK_ID, GOLD) == []


def test_without_a_name_nothing_can_be_saved(gold_tab):
    at = gold_tab(name=None)
    assert any(t.label.startswith("Your name") for t in at.text_input)
    _edit(at, {"edited_rows": {0: {"text": "Click 'Close'"}}})
    _reason(at).input("why").run()
    assert at.button(key="gold-save").disabled


def test_read_only_shows_gold_and_history_but_no_write_control(gold_tab, gold_db):
    with Store(gold_db) as s:
        ge.save_gold(s, GOLD, TASK_ID, [["Click 'Go'"]], "Bob", "short", 1)
    at = gold_tab(read_only=True, name=None)
    assert not [d for d in at.dataframe if d.key and ":grid:" in d.key]  # no editor
    assert not at.text_input and not at.sidebar.text_input
    labels = {b.label for b in at.button}
    assert not labels & {"Save new version", "Discard draft", "Add an alternative", "Start from this agent trajectory",
                         "Recompute (offline judge)", "Create gold set"}  # fmt: skip
    assert not any(b.label.startswith("Restore version") for b in at.button)
    assert any("Stale metrics" in w.value for w in at.warning)  # reading stays possible
    assert any("change" in d.value.columns for d in at.dataframe)


def test_triage_links_tasks_without_gold_and_marks_stale_metrics(monkeypatch, gold_db):
    with Store(gold_db) as s:
        ge.save_gold(s, GOLD, TASK_ID, [["Click 'Go'"]], "Bob", "short", 1)
    monkeypatch.setenv("TRAJREVIEW_DB", str(gold_db))
    at = AppTest.from_file(APP, default_timeout=90)
    at.switch_page(TRIAGE)
    at.query_params["run"] = "opagent"
    at.run()
    _ok(at)
    table = at.dataframe[0].value
    without = table[~table["has_gold"]]
    assert (
        len(without)
        and (
            without["write_gold"] == [f"task?run=opagent&task={t}&tab=Gold" for t in without["task_id"]]
        ).all()
    )
    assert table[table["has_gold"]]["write_gold"].isna().all()
    assert table[table["metrics_stale"]]["task_id"].tolist() == [TASK_ID]


def test_a_lock_that_outlasts_the_retry_is_one_line_and_keeps_the_draft(gold_tab, gold_db, monkeypatch):
    at = gold_tab()
    _edit(at, {"edited_rows": {0: {"text": "Click 'Close'"}}})
    _reason(at).input("shorter").run()
    # Another process holds the file (as an import's final transaction would) for longer than the retry.
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from core.store import Store; s = Store(sys.argv[1]);"
         " print('held', flush=True); time.sleep(30)", str(gold_db)],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"
        monkeypatch.setattr(
            dashboard.db,
            "_open",
            lambda path, *_: Store(path, lock_timeout_s=1.0, host=dashboard.db.store_host()),
        )
        at.button(key="gold-save").click().run()
        _ok(at)
        errors = [e.value for e in at.error]
        assert len(errors) == 1 and "in use by another process" in errors[0] and "\n" not in errors[0]
        assert at.session_state[_grid(at).key]["edited_rows"] == {0: {"text": "Click 'Close'"}}
        assert _reason(at).value == "shorter"
    finally:
        holder.kill()
        holder.wait()
    at.button(key="gold-save").click().run()  # the lock is gone: the same draft saves
    _ok(at)
    with Store(gold_db, read_only=True) as s:
        assert ge.version_content(s, GOLD, TASK_ID, 2)[0][0].text == "Click 'Close'"


def test_an_untouched_draft_follows_a_newer_version(gold_tab, gold_db):
    at = gold_tab()
    with Store(gold_db) as s:
        ge.save_gold(s, GOLD, TASK_ID, [["Click 'Directions'"]], "Bob", "bob's version", 1)
    at.run()
    _ok(at)
    assert _grid(at).value["text"].tolist() == ["Click 'Directions'"]
    assert not any("has been saved since" in w.value for w in at.warning)


def _draft_texts(at: AppTest) -> list[str]:
    """The step texts the grid shows: its data with the edits of its widget state applied."""
    grid = _grid(at)
    texts = grid.value["text"].tolist()
    for row, change in at.session_state[grid.key]["edited_rows"].items():
        texts[int(row)] = change.get("text", texts[int(row)])
    return texts


def _failing(original):
    """`original` that raises what no core function announces (named as `original`, which db.read asks)."""

    @functools.wraps(original)
    def failing(*args, **kwargs):
        raise RuntimeError("disk on fire\nand a second line")

    return failing


@pytest.mark.parametrize(
    "where, fails, says",
    [
        ("a save", "core.gold.editing.save_gold", "Not saved: RuntimeError: disk on fire"),
        (
            "a read",
            "core.gold.editing.history",
            "Could not read this part of the page: RuntimeError: disk on fire",
        ),
        (
            "the page's own code",
            "dashboard.components.gold_history.render",
            "This page stopped on an unexpected error: RuntimeError: disk on fire",
        ),  # fmt: skip
    ],
)
def test_an_unexpected_error_is_one_line_logged_and_keeps_the_draft(where, fails, says, gold_tab, gold_db,
                                                                    monkeypatch, caplog):  # fmt: skip
    """Any exception a page meets (not only trajreview's own errors): one line on the page, its traceback
    in the server log, and the reviewer's draft (grid and reason) still there once it is gone."""
    import importlib
    import logging

    at = gold_tab()
    _edit(at, {"edited_rows": {0: {"text": "Click 'Close'"}}})
    _reason(at).input("shorter").run()
    module, name = fails.rsplit(".", 1)
    with monkeypatch.context() as broken, caplog.at_level(logging.ERROR):
        owner = importlib.import_module(module)
        broken.setattr(owner, name, _failing(getattr(owner, name)))
        dashboard.db.forget_reads()  # else the read comes from the cache and never fails
        if where == "a save":
            at.button(key="gold-save").click().run()
        else:
            at.run()
        _ok(at)  # no exception, no traceback on the page
        assert [e.value for e in at.error] == [f"{says} (the details are in the server log)."]
    (record,) = [r for r in caplog.records if r.exc_info]
    assert record.levelno == logging.ERROR and "disk on fire" in str(record.exc_info[1])
    at.run()  # the failure is gone: the draft is there, as it was
    _ok(at)
    assert _draft_texts(at)[0] == "Click 'Close'" and _reason(at).value == "shorter"
    at.button(key="gold-save").click().run()
    _ok(at)
    with Store(gold_db, read_only=True) as s:
        top = ge.history(s, GOLD, TASK_ID)[0]
        assert (top["version"], top["reason"]) == (2, "shorter")
        assert ge.version_content(s, GOLD, TASK_ID, 2)[0][0].text == "Click 'Close'"


def test_the_grid_edits_step_text_and_moves_steps_with_buttons(gold_tab, gold_db):
    import json

    at = gold_tab()
    grid = _grid(at)
    config = json.loads(grid.proto.columns)
    # The position is read-only (an edit can never land in it); the step text is the editable cell.
    assert config["order"]["disabled"] is True and not config["text"].get("disabled")
    before = grid.value["text"].tolist()
    at.selectbox(key=f"gold:opagent:{TASK_ID}:{GOLD}:move:0").set_value(3).run()
    at.button(key="gold-move-up").click().run()
    _ok(at)
    moved = _grid(at).value
    assert moved["text"].tolist() == [before[0], before[2], before[1], *before[3:]]
    assert moved["order"].tolist() == [float(i + 1) for i in range(len(before))]
    assert at.selectbox(key=f"gold:opagent:{TASK_ID}:{GOLD}:move:0").value == 2  # the picker follows the step
    _reason(at).input("step 3 first").run()
    at.button(key="gold-save").click().run()
    _ok(at)
    with Store(gold_db, read_only=True) as s:
        saved = ge.version_content(s, GOLD, TASK_ID, 2)[0]
    assert [x.text for x in saved] == [before[0], before[2], before[1], *before[3:]]


def test_the_name_is_asked_at_the_top_of_the_gold_tab_as_the_docs_say(gold_tab, repo_root):
    at = gold_tab(name=None)
    assert [t.label for t in at.text_input][0] == "Your name (goes on every save)"
    assert not at.sidebar.text_input  # not in the sidebar
    assert not any("sidebar" in str(c.value) for c in at.caption)
    docs = " ".join((repo_root / "docs" / "reviewers.md").read_text().split())
    assert "asks for it once per browser session at the top of the Gold tab" in docs


def test_restoring_the_current_content_is_refused_before_it_is_written(gold_tab, gold_db):
    with Store(gold_db) as s:
        ge.save_gold(s, GOLD, TASK_ID, [["Click 'Go'"]], "Bob", "short", 1)
        ge.restore(s, GOLD, TASK_ID, 1, "Bob", 2)  # version 3 = version 1's content
    at = gold_tab()
    at.selectbox(key=f"gold-restore-pick:{TASK_ID}:{GOLD}").set_value(1).run()
    assert at.button(key="gold-restore").disabled
    assert any("Version 1 is the same as the current version 3" in c.value for c in at.caption)
    at.selectbox(key=f"gold-restore-pick:{TASK_ID}:{GOLD}").set_value(2).run()
    at.button(key="gold-restore").click().run()
    _ok(at)
    # After a restore the diff shows what it changed: the replaced version against the new one.
    assert (at.query_params["gfrom"], at.query_params["gto"]) == ("3", "4")
    assert any(c.value.startswith("Version 3 (left) → version 4 (right)") for c in at.caption)
