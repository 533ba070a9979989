"""Editing gold: the paper's (../shared/data/human-gold) for versions against a base, conflicts, history,
diff, restore and export → import round trips; the demo's for drafts from a trajectory and stale metrics."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cli_support import run_cli
from demo_support import GOLD

from core.errors import InputError, NotFound
from core.gold import editing as ge
from core.gold.export import export_gold
from core.ingest.gold import import_gold
from core.store import Store

XLSX = "Golden Human Trajectories.xlsx"


@pytest.fixture(scope="session")
def gold_db(paper_gold_db: Path) -> Path:
    return paper_gold_db


@pytest.fixture
def gold_store(gold_db: Path, tmp_path: Path):
    path = tmp_path / "gold.duckdb"
    shutil.copy(gold_db, path)
    with Store(path) as store:
        yield store


def _texts(content) -> list[list[str]]:
    return [[s.text for s in alt] for alt in content]


def _as_steps(content) -> list[list[dict]]:
    return [[{"text": s.text, "flags": list(s.flags)} for s in alt] for alt in content]


def test_save_writes_a_new_version_and_keeps_the_old(gold_store: Store):
    v1 = ge.version_content(gold_store, "paper-gold", 101, 1)
    assert [len(a) for a in v1] == [5, 2]  # task 101 has two alternatives in the paper's file
    before = gold_store.query("SELECT * FROM gold_steps WHERE task_id = 101 ORDER BY ALL")
    steps = _as_steps(v1)
    steps[0][1]["text"] = "Click on 'Directions'"
    steps[0].insert(0, {"text": "Open the map", "flags": ["Check"]})
    version = ge.save_gold(gold_store, "paper-gold", 101, steps, "ann", "shorter step 2", 1)
    assert version == 2
    v2 = ge.version_content(gold_store, "paper-gold", 101, 2)
    assert _texts(v2)[0][:3] == ["Open the map", "Click the 'Close' button", "Click on 'Directions'"]
    assert v2[0][0].flags == ("check",) and _texts(v2)[1] == _texts(v1)[1]
    # Version 1 is untouched: every row of it is still there as it was.
    assert [
        r
        for r in gold_store.query("SELECT * FROM gold_steps WHERE task_id = 101 AND version = 1 ORDER BY ALL")
    ] == before
    top = ge.history(gold_store, "paper-gold", 101)
    assert [(h["version"], h["author"], h["reason"]) for h in top] == [
        (2, "ann", "shorter step 2"),
        (1, "paper", "imported"),
    ]
    assert top[0]["steps"] == 8 and top[0]["alternatives"] == 2


def test_a_save_based_on_an_older_version_is_refused_with_who_saved_what_when(gold_store: Store):
    steps = _as_steps(ge.version_content(gold_store, "paper-gold", 808, 1))
    ge.save_gold(gold_store, "paper-gold", 808, steps[:1] + [[{"text": "Click 'x'"}]], "ann", "added alt", 1)
    rows_before = gold_store.query("SELECT count(*) FROM gold_steps")[0][0]
    with pytest.raises(ge.GoldConflict) as caught:
        ge.save_gold(gold_store, "paper-gold", 808, [[{"text": "Click 'y'"}]], "bob", "mine", 1)
    err = caught.value
    assert (err.version, err.author, err.based_on, err.note) == (2, "ann", 1, "added alt")
    assert err.created_at is not None and "ann saved version 2 of task 808" in str(err)
    assert "draft is kept" in str(err) and "\n" not in str(err)
    assert gold_store.query("SELECT count(*) FROM gold_steps")[0][0] == rows_before  # nothing written
    # Based on the current version, the same save lands as version 3.
    assert ge.save_gold(gold_store, "paper-gold", 808, [[{"text": "Click 'y'"}]], "bob", "mine", 2) == 3


def test_bad_saves_write_nothing(gold_store: Store):
    rows = gold_store.query("SELECT count(*) FROM gold_steps")[0][0]
    with pytest.raises(InputError, match="reason"):
        ge.save_gold(gold_store, "paper-gold", 808, [["Click 'x'"]], "ann", "  ", 1)
    with pytest.raises(InputError, match="name"):
        ge.save_gold(gold_store, "paper-gold", 808, [["Click 'x'"]], None, "why", 1)
    with pytest.raises(InputError, match="non-empty step"):
        ge.save_gold(gold_store, "paper-gold", 808, [["  "], []], "ann", "why", 1)
    with pytest.raises(NotFound, match="no gold set named"):
        ge.save_gold(gold_store, "nope", 808, [["Click 'x'"]], "ann", "why", None)
    assert gold_store.query("SELECT count(*) FROM gold_steps")[0][0] == rows


def test_diff_names_added_removed_changed_and_moved_steps(gold_store: Store):
    v1 = ge.version_content(gold_store, "paper-gold", 101, 1)
    steps = _as_steps(v1)
    a = steps[0]
    # alternative 1: insert a step, swap steps 2 and 3, reword step 5; alternative 2: delete its first step.
    steps[0] = [a[0], {"text": "Zoom in on the map"}, a[2], a[1], a[3], {"text": a[4]["text"] + " again"}]
    steps[1] = steps[1][1:]
    ge.save_gold(gold_store, "paper-gold", 101, steps, "ann", "diff test", 1)
    rows = ge.diff_versions(gold_store, "paper-gold", 101, 1, 2)
    kinds = {(r["alternative"], r["kind"], r["old_idx"], r["new_idx"]) for r in rows}
    assert (1, "added", None, 2) in kinds
    assert any(r["kind"] == "moved" and r["alternative"] == 1 for r in rows)
    assert (1, "changed", 5, 6) in kinds
    assert (2, "removed", 1, None) in kinds and (2, "same", 2, 1) in kinds
    assert not any(
        r["kind"] in ("added", "removed") and r["alternative"] == 1 and r["old_idx"] in (2, 3) for r in rows
    )
    # Every step of both versions appears exactly once on its side.
    for side, version in (("old_idx", v1), ("new_idx", ge.version_content(gold_store, "paper-gold", 101, 2))):
        for alt, steps_of in enumerate(version):
            got = sorted(r[side] for r in rows if r["alternative"] == alt + 1 and r[side] is not None)
            assert got == list(range(1, len(steps_of) + 1))
    # A flag change on an unchanged text is a change, not "same".
    flagged = ge.diff_alternatives([[ge.EditStep("x")]], [[ge.EditStep("x", ("pink",))]])
    assert [r["kind"] for r in flagged] == ["changed"]


def test_restore_writes_the_old_content_as_a_new_version(gold_store: Store):
    v1 = ge.version_content(gold_store, "paper-gold", 101, 1)
    ge.save_gold(gold_store, "paper-gold", 101, [["Click 'Go'"]], "ann", "rewrite", 1)
    with pytest.raises(ge.GoldConflict):
        ge.restore(gold_store, "paper-gold", 101, 1, "bob", 1)
    assert ge.restore(gold_store, "paper-gold", 101, 1, "bob", 2) == 3
    assert ge.version_content(gold_store, "paper-gold", 101, 3) == v1
    assert ge.history(gold_store, "paper-gold", 101)[0]["reason"] == "restore version 1"
    assert [h["version"] for h in ge.history(gold_store, "paper-gold", 101)] == [3, 2, 1]


def test_a_new_gold_set_takes_gold_for_a_task_without_any(gold_store: Store):
    assert ge.create_gold_set(gold_store, "team", "ann") == "team"
    with pytest.raises(InputError, match="already exists"):
        ge.create_gold_set(gold_store, "team", "ann")
    assert ge.history(gold_store, "team", 148) == []
    assert ge.save_gold(gold_store, "team", 148, [["Click 'Orders'"]], "ann", "first gold", None) == 1
    with pytest.raises(ge.GoldConflict, match="started from no gold"):
        ge.save_gold(gold_store, "team", 148, [["Click 'Orders'"]], "bob", "first too", 0)
    assert ge.gold_set_names(gold_store) == ["paper-gold", "team"]


@pytest.mark.parametrize("fmt", ["xlsx", "csv", "jsonl"])
def test_export_then_import_gives_the_same_content(gold_store: Store, tmp_path: Path, fmt: str):
    # Edits the plain file cannot express: adjacent alternatives of one task, several flags, a text an
    # xlsx would take for a formula, a reordered and a deleted step.
    steps = _as_steps(ge.version_content(gold_store, "paper-gold", 1, 1))
    steps[0] = [steps[0][1], steps[0][0], *steps[0][3:]]
    steps.append(
        [{"text": "=SUM(A1) is typed into 'Search'", "flags": ["pink", "check"]}, {"text": "Press Enter"}]
    )
    ge.save_gold(gold_store, "paper-gold", 1, steps, "ann", "reorder", 1)
    ge.save_gold(
        gold_store, "paper-gold", 27, [["Click 'Forums'"], ["Click 'Alphabetical'"]], "ann", "alts", 1
    )
    out = tmp_path / f"gold.{fmt}"
    n = export_gold(gold_store, "paper-gold", out)
    import_gold(gold_store, out, f"rt-{fmt}", author="round trip")
    query = (
        "SELECT task_id, alternative, idx, text, flags FROM gold_steps g WHERE gold_set = ? AND version ="
        " (SELECT max(version) FROM gold_steps h WHERE h.gold_set = g.gold_set AND h.task_id = g.task_id)"
        " ORDER BY ALL"
    )
    original = gold_store.query(query, ["paper-gold"])
    assert len(original) == n and gold_store.query(query, [f"rt-{fmt}"]) == original
    back = ge.version_content(gold_store, f"rt-{fmt}", 1, 1)
    assert back[1][0] == ge.EditStep("=SUM(A1) is typed into 'Search'", ("pink", "check"))
    assert _texts(ge.version_content(gold_store, f"rt-{fmt}", 27, 1)) == [
        ["Click 'Forums'"],
        ["Click 'Alphabetical'"],
    ]


def test_cli_export_history_and_import_back(gold_db: Path, tmp_path: Path):
    db = tmp_path / "cli.duckdb"
    shutil.copy(gold_db, db)
    with Store(db) as store:
        ge.save_gold(store, "paper-gold", 101, [["Click 'Go'"]], "ann", "cli test", 1)
        total = store.query("SELECT count(*) FROM gold_steps WHERE version = 1 AND task_id <> 101")[0][0] + 1
    out = tmp_path / "export.csv"
    done = run_cli("export", "gold", "paper-gold", "--out", str(out), db=db)
    assert done.returncode == 0, done.stderr
    assert f"{total} steps of gold set paper-gold" in done.stdout
    back = run_cli("import", "gold", str(out), "--name", "from-csv", db=db)
    assert back.returncode == 0, back.stderr
    hist = run_cli("gold", "history", "paper-gold", "101", db=db)
    assert hist.returncode == 0 and "cli test" in hist.stdout and "ann" in hist.stdout
    bad = run_cli("export", "gold", "nope", "--out", str(tmp_path / "x.csv"), db=db)
    assert bad.returncode == 2 and bad.stderr.strip() == "error: no gold set named 'nope'"
    assert not (tmp_path / "x.csv").exists()
    bad = run_cli("export", "gold", "paper-gold", "--out", str(tmp_path / "x.txt"), db=db)
    assert bad.returncode == 2 and "unsupported export format" in bad.stderr


def test_draft_from_a_trajectory_and_stale_metrics_recomputed(demo_db: Path, tmp_path: Path):
    path = tmp_path / "demo.duckdb"
    shutil.copy(demo_db, path)
    with Store(path) as store:
        (episode,) = store.query(
            "SELECT episode FROM trajectories WHERE run = 'opagent' AND task_id = 603 AND is_answer"
        )[0]
        executed = store.query(
            "SELECT count(*) FROM steps WHERE run = 'opagent' AND task_id = 603 AND episode = ?"
            " AND executed_action IS NOT NULL",
            [episode],
        )[0][0]
        draft = ge.draft_from_trajectory(store, "opagent", 603, episode)
        assert len(draft) == executed > 0 and all(t.strip() == t and t for t in draft)
        computed = store.query(
            "SELECT DISTINCT run FROM metrics WHERE task_id = 603 AND gold_set = ? ORDER BY 1", [GOLD]
        )
        assert ge.stale_metrics(store, 603, GOLD) == []
        ge.save_gold(store, GOLD, 603, [draft[:3]], "ann", "from the agent", 1)
        stale = ge.stale_metrics(store, 603, GOLD)
        assert sorted({r["run"] for r in stale}) == [r for (r,) in computed] and len(computed) >= 2
        assert {(r["gold_version"], r["current_version"]) for r in stale} == {(1, 2)}
        assert ge.stale_metrics(store, 2, GOLD) == []  # other tasks are not touched
        assert ge.recompute_stale(store, 603, GOLD) == len(computed)
        assert ge.stale_metrics(store, 603, GOLD) == []
        assert store.query(
            "SELECT DISTINCT gold_version, n_gold FROM metrics WHERE task_id = 603 AND gold_set = ?", [GOLD]
        ) == [(2, 3)]


def test_restoring_a_version_identical_to_the_current_one_writes_nothing(gold_store: Store):
    v1 = ge.version_content(gold_store, "paper-gold", 101, 1)
    ge.save_gold(gold_store, "paper-gold", 101, [["Click 'Go'"]], "ann", "rewrite", 1)
    assert ge.restore(gold_store, "paper-gold", 101, 1, "bob", 2) == 3  # back to version 1's content
    with pytest.raises(
        InputError, match="version 1 is the same as the current version 3: nothing to restore"
    ):
        ge.restore(gold_store, "paper-gold", 101, 1, "bob", 3)
    assert [h["version"] for h in ge.history(gold_store, "paper-gold", 101)] == [3, 2, 1]
    assert ge.version_content(gold_store, "paper-gold", 101, 3) == v1


def test_history_never_shows_a_blank_author(gold_store: Store):
    # Gold imported without an author: its version 1 says so in words, never a blank.
    path = gold_store.path.parent / "mine.csv"
    path.write_text("Task No.,Step No.,Text\n101,1,Click 'Go'\n")
    import_gold(gold_store, path, "anonymous")
    assert ge.history(gold_store, "anonymous", 101)[0]["author"] == ge.NO_AUTHOR == "not recorded"
    # A set whose owner was named at import: version 1 carries that name.
    import_gold(gold_store, path, "mine", author="Grace")
    assert ge.history(gold_store, "mine", 101)[0]["author"] == "Grace"
    ge.save_gold(gold_store, "mine", 101, [["Click 'Go' twice"]], "Ada", "twice", 1)
    assert [h["author"] for h in ge.history(gold_store, "mine", 101)] == ["Ada", "Grace"]
