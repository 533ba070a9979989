"""Task review opened cold (bench dashboard's "cold": every cache empty) does only the work its open tab
shows: each screenshot of the shown filmstrip page is decoded once, the chosen step's image is its
filmstrip image, and the previous/next failed task come from the verdicts without the whole triage table
when no filter is set."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.queries import task as q
from core.queries import triage as tq
from core.store import Store
from dashboard.components.steps_panel import FILMSTRIP

TASK = "views/task.py"


def _longest_screenshotted_attempt(db) -> tuple[str, int, str, list[tuple[int, str | None]]]:
    with Store(db, read_only=True) as s:
        run, task_id, episode = s.query(
            "SELECT s.run, s.task_id, s.episode FROM steps s JOIN trajectories t USING (run, task_id, episode)"
            " WHERE t.is_answer GROUP BY ALL HAVING count(s.screenshot_path) > 0"
            " ORDER BY count(*) DESC, s.run, s.task_id LIMIT 1"
        )[0]
        steps = s.query(
            "SELECT idx, screenshot_path FROM steps WHERE run = ? AND task_id = ? AND episode = ? ORDER BY idx",
            [run, task_id, episode],
        )
    return run, task_id, episode, steps


def test_a_cold_view_decodes_each_shown_screenshot_once(open_page, demo_db, monkeypatch):
    import streamlit as st

    run, task_id, _, steps = _longest_screenshotted_attempt(demo_db)
    assert len(steps) > FILMSTRIP  # the filmstrip shows one page of the attempt, not all of it
    pos = len(steps) - 1 if len(steps) <= 2 * FILMSTRIP else FILMSTRIP + 1
    step = steps[pos][0]
    page = steps[pos // FILMSTRIP * FILMSTRIP : pos // FILMSTRIP * FILMSTRIP + FILMSTRIP]
    decoded: list[str | None] = []
    real = q.screenshot_image

    def counting(path, max_width, folder=None):
        decoded.append(path)
        return real(path, max_width, None)  # scaled here, not read back from a kept copy

    monkeypatch.setattr(q, "screenshot_image", counting)
    st.cache_data.clear()
    at = open_page(demo_db, TASK, run=run, task=str(task_id), tab="Steps", step=str(step))
    assert sorted(decoded, key=str) == sorted((p for _, p in page), key=str)  # the shown page, each once
    shown = [img for el in at.get("image") for img in el.proto.imgs]
    assert len(shown) == sum(p is not None for _, p in page) + (steps[pos][1] is not None)
    step_image = next(img for img in shown if img.caption == f"step {step}")
    assert [img.url for img in shown].count(step_image.url) == 2  # the filmstrip's image of the step, reused
    decoded.clear()
    at.query_params["step"] = str(page[0][0] if page[0][0] != step else page[-1][0])  # the same page
    at.run()
    assert not at.exception and decoded == []  # stepping inside the page decodes nothing


@pytest.mark.slow
@pytest.mark.parametrize("sort", tq.VERDICT_ORDERS)
def test_neighbours_from_the_verdicts_are_the_triage_lists(demo_db, sort):
    plain = tq.TriageFilter(sort=sort)
    with Store(demo_db, read_only=True) as s:
        runs = [r for (r,) in s.query("SELECT name FROM runs ORDER BY name")]
        for run in runs:
            table = tq.triage_table(s, run)
            some = table.task_ids()[:: max(1, len(table) // 40)] + [10**6]  # also a task the run lacks
            for task_id in some:
                got = tq.failed_neighbours(s, run, task_id, plain)
                assert got == tq.task_neighbours(table, plain, task_id), (run, task_id)


def test_a_filter_or_another_sort_takes_the_triage_table(demo_db, monkeypatch):
    with Store(demo_db, read_only=True) as s:
        run = s.query("SELECT run FROM evaluations GROUP BY run ORDER BY count(*) DESC, run LIMIT 1")[0][0]
        table = tq.triage_table(s, run)
        failed = [r.task_id for r in table.rows if r.failed]
        wanted = [tq.TriageFilter(sites=(table.row(failed[1]).site,)), tq.TriageFilter(sort="steps (most first)"),
                  tq.TriageFilter(text="  "), tq.TriageFilter(verdicts=("failure",), sort="task")]  # fmt: skip
        expected = [tq.task_neighbours(table, f, failed[1]) for f in wanted]
        calls = []
        real = tq.triage_table
        monkeypatch.setattr(tq, "triage_table", lambda *a, **k: calls.append(a) or real(*a, **k))
        assert [tq.failed_neighbours(s, run, failed[1], f) for f in wanted] == expected
        assert len(calls) == 3  # every filter but the blank text (the same list as no filter)


def _scaling_counted(monkeypatch) -> list[str]:
    made: list[str] = []
    real = q._scaled

    def counting(path, max_width):
        made.append(path)
        return real(path, max_width)

    monkeypatch.setattr(q, "_scaled", counting)
    return made


def test_a_scaled_screenshot_is_kept_and_read_back_until_the_file_changes(demo_db, tmp_path, monkeypatch):
    """core.files.thumbnails: the second scaling of a file reads the kept copy; a replaced file is scaled anew."""
    _, _, _, steps = _longest_screenshotted_attempt(demo_db)
    source = next(p for _, p in steps if p)
    copy = tmp_path / ("shot" + source[source.rfind(".") :])
    copy.write_bytes(Path(source).read_bytes())
    folder = str(tmp_path / "demo.duckdb.thumbnails")
    made = _scaling_counted(monkeypatch)
    first = q.screenshot_image(str(copy), 200, folder)
    assert first and first[:2] == b"\xff\xd8" and made == [str(copy)]  # a JPEG, scaled once
    assert q.screenshot_image(str(copy), 200, folder) == first and len(made) == 1  # read back
    assert q.screenshot_image(str(copy), 120, folder) != first and len(made) == 2  # another width
    copy.write_bytes(copy.read_bytes() + b"\0")  # replaced (a PNG ignores trailing bytes)
    assert q.screenshot_image(str(copy), 200, folder) and len(made) == 3
    assert q.screenshot_image(str(copy), 200) and len(made) == 4  # no folder: nothing kept


def test_a_kept_copy_that_is_not_ours_is_made_again_and_a_folder_that_cannot_be_written_keeps_nothing(
    demo_db, tmp_path, monkeypatch
):
    from core.files import thumbnails

    _, _, _, steps = _longest_screenshotted_attempt(demo_db)
    source = next(p for _, p in steps if p)
    folder = tmp_path / "thumbs"
    made = _scaling_counted(monkeypatch)
    image = q.screenshot_image(source, 200, str(folder))
    (entry,) = folder.rglob("*.jpg")
    entry.unlink()
    entry.symlink_to("/etc/hostname")  # not a regular file: never read
    assert q.screenshot_image(source, 200, str(folder)) == image and len(made) == 2
    assert entry.is_file() and not entry.is_symlink()  # replaced by the scaled copy
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    assert q.screenshot_image(source, 200, str(blocked / "thumbs")) == image  # mkdir fails: still shown
    assert thumbnails.folder_for(tmp_path / "x.duckdb") == tmp_path / "x.duckdb.thumbnails"


def test_after_a_server_start_the_task_page_reads_the_kept_copies(open_page, demo_db, tmp_path, monkeypatch):
    """The page keeps its scaled screenshots beside the database: a cold view after a restart (every cache
    of the process emptied) scales none."""
    import shutil

    import streamlit as st

    db = tmp_path / "demo.duckdb"
    shutil.copy(demo_db, db)
    run, task_id, _, steps = _longest_screenshotted_attempt(db)
    made = _scaling_counted(monkeypatch)
    st.cache_data.clear()
    open_page(db, TASK, run=run, task=str(task_id), tab="Steps", step=str(steps[0][0]))
    shown = sum(p is not None for _, p in steps[:FILMSTRIP])
    assert len(made) == shown > 0 and len(list((tmp_path / "demo.duckdb.thumbnails").rglob("*.jpg"))) == shown
    made.clear()
    st.cache_data.clear()
    at = open_page(db, TASK, run=run, task=str(task_id), tab="Steps", step=str(steps[0][0]))
    assert made == [] and len([img for el in at.get("image") for img in el.proto.imgs]) >= shown


def test_a_thumbnail_that_cannot_be_placed_leaves_no_part_file_and_a_missing_screenshot_has_none(
    demo_db, tmp_path
):
    from core.files import thumbnails

    _, _, _, steps = _longest_screenshotted_attempt(demo_db)
    source = next(p for _, p in steps if p)
    folder = tmp_path / "thumbs"
    entry = thumbnails._entry(folder, Path(source), 200)
    entry.mkdir(parents=True)  # a folder where the kept copy would go: the rename fails
    assert q.screenshot_image(source, 200, str(folder))  # still shown
    assert [p.name for p in entry.parent.iterdir()] == [entry.name]  # its temporary file removed
    missing = str(tmp_path / "gone.png")
    assert (
        q.screenshot_image(missing, 200, str(folder)) is None
        and thumbnails._entry(folder, Path(missing), 200) is None
    )
