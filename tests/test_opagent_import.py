"""The OpAgent importer on the real published run (../shared/data/oagent-run), and on damaged copies."""

from __future__ import annotations

import shutil

import orjson
import pytest

from core.errors import InputError
from core.importers.opagent import final_answer, import_opagent
from core.store import Store


@pytest.fixture(scope="module")
def opagent_db(tmp_path_factory, tasks_db, shared_data):
    path = tmp_path_factory.mktemp("opagent") / "op.duckdb"
    shutil.copy(tasks_db, path)
    with Store(path) as store:
        summary = import_opagent(store, shared_data / "oagent-run", "op")
    return path, summary


def test_whole_run_imports_as_the_readme_describes(opagent_db, shared_data):
    path, s = opagent_db
    readme = (shared_data / "oagent-run" / "README.md").read_text()
    assert "581 of 809 tasks scored 1.0" in readme and "9,858 actions" in readme
    assert (s.n_files, s.n_tasks, s.n_steps, s.n_success, s.n_scored) == (809, 809, 9858, 581, 809)
    with Store(path, read_only=True) as db:
        assert db.query("SELECT count(*), count(*) FILTER (WHERE status = 'success') FROM evaluations"
                        " WHERE run = 'op' AND source = 'source-score'")[0] == (809, 581)  # fmt: skip
        # 9 files carry no generated answer: trajectories that ended without one, not errors.
        assert (
            db.query("SELECT count(*) FROM trajectories WHERE run = 'op' AND termination = 'none'")[0][0] == 9
        )
        assert db.query("SELECT count(*) FROM import_problems WHERE run = 'op'")[0][0] == 0
        # Screenshots of the 35 copied tasks are found although observations name .png and files are .jpg.
        shots = db.query(
            "SELECT count(DISTINCT task_id), count(*) FROM steps WHERE run = 'op' AND screenshot_path IS NOT NULL"
        )[0]
        assert shots[0] == len(list((shared_data / "oagent-run" / "final_visual_results").iterdir()))
        assert all(
            p.endswith(".jpg")
            for (p,) in db.query(
                "SELECT screenshot_path FROM steps WHERE run = 'op' AND screenshot_path IS NOT NULL"
            )
        )
        # The placeholder host and off-site pages are kept as recorded.
        hosts = {
            u.split("/")[2]
            for (u,) in db.query("SELECT url FROM steps WHERE run = 'op' AND url LIKE 'http%'")
        }
        assert any(h.startswith("ecs_ip:") for h in hosts) and "cn.bing.com" in hosts


def test_steps_map_planner_grounder_and_reflector(opagent_db, shared_data):
    path, _ = opagent_db
    items = orjson.loads((shared_data / "oagent-run" / "final_results" / "110.json").read_bytes())
    actions = [i for i in items if i.get("type") == "action"]
    answer = next(i for i in items if i.get("type") == "generated_answer")["generated_final_answer"]
    with Store(path, read_only=True) as db:
        steps = db.query_dicts("SELECT * FROM steps WHERE run = 'op' AND task_id = 110 ORDER BY idx")
        (stored_answer,) = db.query(
            "SELECT final_answer FROM trajectories WHERE run = 'op' AND task_id = 110"
        )[0]
    assert len(steps) == len(actions)
    for step, item in zip(steps, actions, strict=True):
        instruction = item["planner_output"]["instruction"]
        assert step["stated_action"] == instruction
        assert step["url"] == item["page_url"]
        assert step["thought"] == " ".join(item["reflector_output"]["thought"])
        assert step["verb"] in (
            "click",
            "type",
            "select",
            "scroll",
            "goto",
            "hover",
            "press",
            "go_back",
            "noop",
        )
        assert step["element_id"] is None  # coordinate actions name no element
        coords = item["action"]["params"].get("coords")
        if coords:
            assert f"({coords[0]}, {coords[1]})" in step["readable"]
        if instruction:
            assert instruction in step["readable"]  # the sentence quotes the instruction
    typed = next(s for s in steps if s["verb"] == "type")
    assert typed["value"] == actions[typed["idx"]]["action"]["params"]["content"]
    assert stored_answer in answer and "<answer>" not in stored_answer


def test_answer_extraction():
    assert final_answer("<|im_start|>assistant\n<answer>42 orders</answer>\n<|im_end|>") == "42 orders"
    assert final_answer("<|im_start|>assistant\nN/A<|im_end|>") == "N/A"
    assert final_answer("<answer>  </answer>") is None and final_answer(None) is None


def test_import_is_idempotent(opagent_db, shared_data):
    path, _ = opagent_db
    with Store(path) as store:
        before = store.row_counts()
        import_opagent(store, shared_data / "oagent-run", "op")
        assert store.row_counts() == before


def _copy_some(shared_data, tmp_path, ids=(110, 27, 4)):
    root = tmp_path / "run"
    (root / "final_results").mkdir(parents=True)
    for task in ids:
        shutil.copy(shared_data / "oagent-run" / "final_results" / f"{task}.json", root / "final_results")
    return root


def test_damaged_files_are_problems_of_their_task(tasks_store, shared_data, tmp_path):
    root = _copy_some(shared_data, tmp_path)
    good = (root / "final_results" / "110.json").read_bytes()
    (root / "final_results" / "27.json").write_bytes(good[: len(good) // 2])  # truncated JSON
    (root / "final_results" / "4.json").write_bytes(b'[1, 2, "three"]')  # a list of something else
    items = orjson.loads(good)
    items[0]["image_path"] = "../../../etc/passwd.png"  # a screenshot path climbing out of the run
    for item in items:
        if item.get("type") == "generated_answer":
            item["generated_final_answer"] = "<answer>" + "x" * 5_000_000 + "</answer>"
    (root / "final_results" / "5.json").write_bytes(orjson.dumps(items))
    s = import_opagent(tasks_store, root, "bad")
    kinds = {(p.task_id, p.kind) for p in s.problems}
    assert {(27, "malformed_file"), (4, "malformed_file"), (5, "bad_image_path")} <= kinds
    assert all(str(root) in p.message for p in s.problems)  # each names its file
    assert s.n_tasks == 2  # 110 and 5 imported; the broken ones recorded, not fatal
    (answer,) = tasks_store.query("SELECT final_answer FROM trajectories WHERE run = 'bad' AND task_id = 5")[
        0
    ]
    assert len(answer) == 5_000_000  # a huge answer is data, kept whole


def test_links_and_fifos_are_never_read(tasks_store, shared_data, tmp_path):
    import os

    root = _copy_some(shared_data, tmp_path, ids=(110,))
    outside = tmp_path / "outside.json"
    outside.write_bytes((root / "final_results" / "110.json").read_bytes())
    (root / "final_results" / "27.json").symlink_to(outside)
    os.mkfifo(root / "final_results" / "4.json")
    s = import_opagent(tasks_store, root, "links")
    assert {(p.task_id, p.kind) for p in s.problems} >= {(27, "not_a_file"), (4, "not_a_file")}
    assert s.n_tasks == 1


def test_a_folder_without_results_is_one_line(tasks_store, tmp_path):
    with pytest.raises(InputError, match="no <task_id>.json files found"):
        import_opagent(tasks_store, tmp_path, "empty")
    assert tasks_store.query("SELECT count(*) FROM runs")[0][0] == 0
