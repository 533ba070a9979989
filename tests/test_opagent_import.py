"""OpAgent import on the real published run in ../shared/data/oagent-run (809 tasks, 9,858 actions)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import orjson
import pytest
from build_cache import built_db
from cli_support import run_cli

from core.errors import InputError
from core.ingest.opagent import extract_answer, import_opagent
from core.store import Store


@pytest.fixture(scope="session")
def oagent_root(shared_data: Path) -> Path:
    return shared_data / "oagent-run"


@pytest.fixture(scope="session")
def opagent_db(tasks_db: Path, oagent_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    def build(path: Path) -> None:
        shutil.copy(tasks_db, path)
        with Store(path) as store:
            import_opagent(store, oagent_root, "opagent")

    return built_db(tmp_path_factory, "opagent", build, (oagent_root,))


@pytest.fixture
def opagent_store(opagent_db: Path):
    with Store(opagent_db, read_only=True) as store:
        yield store


def _raw(oagent_root: Path, task_id: int) -> list:
    return json.loads((oagent_root / "final_results" / f"{task_id}.json").read_text(encoding="utf-8"))


def test_whole_run_imports_with_its_scores(opagent_store: Store, oagent_root: Path):
    files = sorted((oagent_root / "final_results").glob("*.json"))
    scores = {int(p.stem): json.loads(p.read_text(encoding="utf-8"))[-1]["score"] for p in files}
    assert len(scores) == 809 and sum(s == 1.0 for s in scores.values()) == 581
    stored = dict(
        opagent_store.query(
            "SELECT task_id, status FROM evaluations WHERE run = 'opagent' AND source = 'opagent-score'"
        )
    )
    assert stored == {t: "success" if s == 1.0 else "failure" for t, s in scores.items()}
    assert opagent_store.query("SELECT count(*) FROM steps WHERE run = 'opagent'")[0][0] == 9858
    assert opagent_store.query("SELECT paradigm FROM runs WHERE name = 'opagent'")[0][0] == "step_by_step"
    assert opagent_store.query("SELECT count(*) FROM import_problems WHERE run = 'opagent'")[0][0] == 0
    # Tasks 163, 782 and 783 have no file: not invented.
    assert not opagent_store.query(
        "SELECT 1 FROM trajectories WHERE run = 'opagent' AND task_id IN (163, 782, 783)"
    )


def test_tasks_without_actions_or_answer_are_trajectories(opagent_store: Store, oagent_root: Path):
    no_answer = opagent_store.query(
        "SELECT task_id FROM trajectories WHERE run = 'opagent' AND final_answer IS NULL ORDER BY 1"
    )
    expected = sorted(
        int(p.stem)
        for p in (oagent_root / "final_results").glob("*.json")
        if not any(x.get("type") == "generated_answer" for x in json.loads(p.read_text(encoding="utf-8")))
    )
    assert [t for (t,) in no_answer] == expected and len(expected) == 9
    assert (
        opagent_store.query("SELECT count(*) FROM trajectories WHERE run = 'opagent' AND n_steps = 0")[0][0]
        == 7
    )
    # An answer-only OpAgent task really took no action: it is not an unrecorded summary.
    assert (
        opagent_store.query("SELECT count(*) FROM trajectories WHERE run = 'opagent' AND answer_only")[0][0]
        == 0
    )


def test_steps_read_as_the_readme_describes(opagent_store: Store, oagent_root: Path):
    raw = [x for x in _raw(oagent_root, 27) if x.get("type") == "action"]
    rows = opagent_store.query_dicts(
        "SELECT * FROM steps WHERE run = 'opagent' AND task_id = 27 ORDER BY idx",
    )
    assert len(rows) == len(raw)
    config = next(x for x in _raw(oagent_root, 27) if "configs" in x)["configs"]
    for i, (row, item) in enumerate(zip(rows, raw, strict=True)):
        # The page the action was taken on: the previous action's (post-action) page_url.
        assert row["url"] == (config["start_url"] if i == 0 else raw[i - 1]["page_url"])
        assert row["thought"] == "\n".join(item["reflector_output"]["thought"])
        assert row["error"] == (item["error_msg"] or None)
        instruction = item["planner_output"]["instruction"]
        if instruction:
            assert row["stated_action"] == instruction and f'planner: "{instruction}"' in row["readable"]
        assert row["element_id"] is None  # coordinate actions name no element
    # Step 1: select 'New' at (434, 155) in the 'Hot' dropdown, the JS fallback failed.
    assert rows[1]["verb"] == "select" and rows[1]["value"] == "New" and rows[1]["element_label"] == "Hot"
    assert rows[1]["readable"].startswith("Select 'New' in 'Hot' at (434, 155); planner:")
    assert rows[1]["error"].startswith("JS fallback for select_option also failed")
    assert rows[0]["verb"] == "goto" and rows[0]["target_url"] == "http://ecs_ip:9999/f/Showerthoughts"
    traj = opagent_store.query_dicts("SELECT * FROM trajectories WHERE run = 'opagent' AND task_id = 27")[0]
    assert traj["final_answer"] == "0" and traj["final_url"] == raw[-1]["page_url"]
    assert orjson.loads(traj["task_config"])["eval"]["reference_answers"] == {"must_include": ["0"]}


def test_verbs_and_hosts_are_kept(opagent_store: Store):
    verbs = dict(opagent_store.query("SELECT verb, count(*) FROM steps WHERE run = 'opagent' GROUP BY 1"))
    # click 6,331 + right_click 17; scroll 883 + zoom_in 36 + zoom_out 17 (README counts).
    assert verbs == {"click": 6348, "type": 1809, "scroll": 936, "goto": 402, "select": 193, "hover": 107,
                     "go_back": 46, "press": 17}  # fmt: skip
    assert (
        opagent_store.query("SELECT count(*) FROM steps WHERE run = 'opagent' AND error IS NOT NULL")[0][0]
        == 59
    )
    hosts = {h for (h,) in opagent_store.query(
        "SELECT DISTINCT regexp_extract(target_url, '//([^/:]+)', 1) FROM steps WHERE run = 'opagent' AND verb = 'goto'")}  # fmt: skip
    assert "ecs_ip" in hosts and any("bing" in h or "google" in h for h in hosts)


def test_screenshots_found_as_jpg_inside_the_run(opagent_store: Store, oagent_root: Path):
    visual = sorted(
        int(p.name.removeprefix("val_")) for p in (oagent_root / "final_visual_results").iterdir()
    )
    assert len(visual) == 35
    rows = opagent_store.query(
        "SELECT task_id, screenshot_path FROM steps WHERE run = 'opagent' AND screenshot_path IS NOT NULL"
    )
    assert {t for t, _ in rows} <= set(visual) and len({t for t, _ in rows}) >= 30
    root = oagent_root.resolve()
    assert all(
        Path(p).suffix == ".jpg" and Path(p).is_file() and Path(p).is_relative_to(root) for _, p in rows
    )


def test_reimport_is_idempotent(tasks_store: Store, oagent_root: Path):
    import_opagent(tasks_store, oagent_root, "o")
    first = tasks_store.row_counts()
    import_opagent(tasks_store, oagent_root, "o")
    assert tasks_store.row_counts() == first


def test_answer_extraction_follows_opagent():
    assert extract_answer("<|im_start|>assistant\n<answer> 0 </answer>\n<|im_end|>") == "0"
    assert extract_answer("<|im_start|>assistant\nno tag<|im_end|>") is None
    assert extract_answer("<|im_start|>assistant\n<answer>a</answer><|im_end|><|im_start|>assistant\n<answer>b</answer><|im_end|>") == "b"  # fmt: skip
    assert extract_answer(None) is None


# -- hostile input -----------------------------------------------------------------------------------
def _copy_run(oagent_root: Path, tmp_path: Path, ids: list[int]) -> Path:
    root = tmp_path / "run"
    (root / "final_results").mkdir(parents=True)
    for task_id in ids:
        shutil.copy(oagent_root / "final_results" / f"{task_id}.json", root / "final_results")
    return root


def test_bad_files_are_problems_of_their_task(tasks_store: Store, oagent_root: Path, tmp_path: Path):
    root = _copy_run(oagent_root, tmp_path, [27, 110])
    results = root / "final_results"
    (results / "5.json").write_bytes(
        (oagent_root / "final_results" / "5.json").read_bytes()[:5000]
    )  # truncated
    (results / "6.json").write_text("[1, 2, 3]")  # a list of something else
    (results / "7.json").write_text('{"type": "action"}')  # not a list
    huge = _raw(oagent_root, 27)
    huge[-3]["generated_final_answer"] = (
        "<|im_start|>assistant\n<answer>" + "x" * 3_000_000 + "</answer>\n<|im_end|>"
    )
    (results / "8.json").write_text(json.dumps(huge))
    summary = import_opagent(tasks_store, root, "bad")
    problems = {p.task_id: p for p in summary.problems}
    assert set(problems) == {5, 6, 7, 8}
    by_kind = {p.kind for p in summary.problems if p.task_id == 8}
    assert by_kind == {"task_id_mismatch", "long_text"}  # its config says task 27: the file name wins
    assert "not valid JSON" in problems[5].message and str(results / "5.json") in problems[5].message
    assert "not an OpAgent trajectory" in problems[6].message and "not an OpAgent" in problems[7].message
    stored = dict(
        tasks_store.query("SELECT task_id, length(final_answer) FROM trajectories WHERE run = 'bad'")
    )
    assert set(stored) == {8, 27, 110} and stored[8] <= 100_000  # the huge answer is clipped, not refused
    assert tasks_store.query("SELECT count(*) FROM import_problems WHERE run = 'bad'")[0][0] == 5


def test_screenshot_paths_never_leave_the_run(tasks_store: Store, oagent_root: Path, tmp_path: Path):
    root = _copy_run(oagent_root, tmp_path, [])
    items = _raw(oagent_root, 110)
    observations = [x for x in items if x.get("type") == "observation"]
    observations[0]["image_path"] = "../../../secret.png"
    observations[1]["image_path"] = "/etc/passwd"
    (root / "final_results" / "110.json").write_text(json.dumps(items))
    images = root / "final_visual_results" / "val_110" / "images"
    images.mkdir(parents=True)
    (tmp_path / "secret.png").write_bytes(b"secret")
    (images / "screenshot_2.jpg").symlink_to(tmp_path / "secret.png")
    shutil.copy(oagent_root / "final_visual_results" / "val_110" / "images" / "screenshot_3.jpg", images)
    summary = import_opagent(tasks_store, root, "paths")
    kinds = sorted(p.kind for p in summary.problems)
    assert kinds == ["unsafe_path"] * 3
    shots = dict(tasks_store.query("SELECT idx, screenshot_path FROM steps WHERE run = 'paths' AND screenshot_path IS NOT NULL"))  # fmt: skip
    assert list(shots) == [3] and shots[3].endswith("screenshot_3.jpg")


def test_not_a_run_directory_is_refused_with_one_line(tmp_path: Path):
    with Store(tmp_path / "x.duckdb") as store, pytest.raises(InputError, match="no <task_id>.json files"):
        import_opagent(store, tmp_path, "x")
    result = run_cli("import", "opagent", str(tmp_path / "missing"), "--run", "x", db=tmp_path / "x.duckdb")
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode != 0 and len(lines) == 1 and "not a directory" in lines[0]


def test_cli_imports_and_prints_agreement(tmp_path: Path, oagent_root: Path, tasks_db: Path):
    db = tmp_path / "cli.duckdb"
    shutil.copy(tasks_db, db)
    root = _copy_run(oagent_root, tmp_path, [27, 29, 342, 386])
    out = run_cli("import", "opagent", str(root), "--run", "op", db=db, check=True).stdout
    assert "run op: 4 tasks" in out and "agreement with the run's own verdict (opagent-score)" in out
    assert "run passes, offline fails: tasks 386" in out and "run fails, offline passes: tasks 342" in out


def _actions(oagent_root: Path) -> dict[int, int]:
    return {
        int(p.stem): sum(1 for x in json.loads(p.read_text(encoding="utf-8")) if x.get("type") == "action")
        for p in (oagent_root / "final_results").glob("*.json")
    }


def test_endings_say_when_the_cap_stopped_the_agent_or_it_declared_failure(
    opagent_store: Store, oagent_root: Path
):
    rows = {
        r["task_id"]: r
        for r in opagent_store.query_dicts(
            "SELECT task_id, termination, termination_detail, final_answer FROM trajectories WHERE run = 'opagent'"
        )
    }
    actions = _actions(oagent_root)
    # OpAgent's cap is exactly 70 actions: no file has more, and every file that reached it is truncated.
    assert max(actions.values()) == 70
    capped = {t for t, n in actions.items() if n == 70}
    assert {t for t, r in rows.items() if r["termination"] == "truncated"} == capped and len(capped) == 21
    assert all(
        rows[t]["termination_detail"].startswith("stopped at OpAgent's cap of 70 actions") for t in capped
    )
    # The summary answer written after the cap is kept (it is what OpAgent's scorer read).
    assert rows[346]["final_answer"] == "0" and rows[148]["final_answer"].startswith("I could not find")
    # Self-declared failure: the detail quotes the answer's sentence.
    gave_up = {t for t, r in rows.items() if r["termination"] == "early_stop"}
    assert len(gave_up) == 37
    for t in gave_up:
        sentence = rows[t]["termination_detail"].removeprefix("the answer says the agent failed: ")
        assert " ".join(rows[t]["final_answer"].split()).find(sentence.rstrip("…")) >= 0
    assert rows[64]["termination_detail"] == (
        "the answer says the agent failed: Unable to determine (No records found due to invalid date range in report)"
    )
    # A colleague's hand labels of failed tasks (notes/labels/opagent.csv): every `step_limit` task is
    # truncated, and the `gave_up` tasks whose answer says so are early stops; answers that only report
    # an absence ("No products found", 184; "No opened issues found.", 340) are answers, not failures.
    assert {148, 335, 336, 550, 656, 759} <= capped
    assert {64, 398, 532, 586, 695} <= gave_up
    assert rows[184]["termination"] == rows[340]["termination"] == "answered"
    counts = dict(
        opagent_store.query("SELECT termination, count(*) FROM trajectories WHERE run = 'opagent' GROUP BY 1")
    )
    assert counts == {"answered": 742, "early_stop": 37, "truncated": 21, "none": 9}


def test_typing_names_the_field_not_the_typed_text(opagent_store: Store):
    """OpAgent's planner quotes the typed text first ("Type "MIT" into the "Filter" input box"): the element
    is the next quoted name, never the text itself, nor what the field already shows."""
    typed = opagent_store.query_dicts(
        "SELECT task_id, idx, value, element_label, readable FROM steps WHERE run = 'opagent' AND verb = 'type'"
    )
    assert len(typed) == 1809
    assert not [
        r
        for r in typed
        if r["element_label"] and r["element_label"].casefold() == (r["value"] or "").casefold()
    ]
    assert sum(1 for r in typed if r["element_label"]) >= 1200  # most instructions quote the field's name
    by_task = {(r["task_id"], r["value"]): r for r in typed}
    assert by_task[(736, "MIT")]["element_label"] == "Filter"
    assert by_task[(736, "MIT")]["readable"].startswith("Type 'MIT' into 'Filter' at (993, 245);")
    # "into the search box (currently containing 'Aeno capri')": the field has no quoted name.
    aeno = by_task[(505, "Aeno")]
    assert aeno["element_label"] is None and aeno["readable"].startswith(
        "Type 'Aeno' at (343, 361) and press Enter;"
    )
