"""trajreview JSONL import: built from a real imported render run, validated against the shipped schema."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest
from build_cache import built_db

from core.errors import InputError
from core.ingest.jsonl import import_jsonl, trajectory_schema
from core.ingest.webarena_render import import_webarena_render
from core.store import Store


@pytest.fixture(scope="session")
def source_db(tasks_db: Path, shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Real trajectories to export: two render folders with several steps each."""
    folders = tuple(
        shared_data / "webarena-render" / f for f in ("Ziha0-Zhang__webarena", "HuiyuanYan__webarena")
    )

    def build(path: Path) -> None:
        shutil.copy(tasks_db, path)
        with Store(path) as store:
            for folder in folders:
                import_webarena_render(store, folder, folder.name)

    return built_db(tmp_path_factory, "jsonl-source", build, folders, "source.duckdb")


SOURCES = ("Ziha0-Zhang__webarena", "HuiyuanYan__webarena")


def _export(store: Store, run: str = SOURCES[1]) -> list[dict]:
    """A real run as JSONL task objects (what another agent's converter would write)."""
    tasks = []
    for t in store.query_dicts("SELECT * FROM trajectories WHERE run = ? ORDER BY task_id", [run]):
        steps = store.query_dicts(
            "SELECT s.url, s.thought, s.stated_action, s.executed_action, s.error, o.content AS observation"
            " FROM steps s LEFT JOIN observations o USING (run, task_id, episode, idx)"
            " WHERE s.run = ? AND s.task_id = ? ORDER BY s.idx",
            [run, t["task_id"]],
        )
        tasks.append(
            {"task_id": t["task_id"], "goal": t["goal"], "plan": None, "steps": steps,
             "final_answer": t["final_answer"], "reward": 1.0 if t["final_answer"] else 0.0,
             "termination": t["termination"], "termination_detail": t["termination_detail"]}
        )  # fmt: skip
    return tasks


HEADER = {"agent": "PromptAgent", "model": "llama3:8b", "paradigm": "step_by_step"}


def _write(path: Path, header: dict | None, tasks: list[dict]) -> Path:
    lines = ([orjson.dumps(header)] if header is not None else []) + [orjson.dumps(t) for t in tasks]
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


@pytest.fixture
def store(source_db: Path, tmp_path: Path):
    path = tmp_path / "db.duckdb"
    shutil.copy(source_db, path)
    with Store(path) as s:
        yield s


@pytest.mark.parametrize("src", SOURCES)
def test_roundtrip_of_a_real_run(store: Store, tmp_path: Path, src: str):
    tasks = _export(store, src)
    assert len(tasks) == store.query("SELECT n_tasks FROM runs WHERE name = ?", [src])[0][0]
    assert sum(len(t["steps"]) for t in tasks) > len(tasks)
    summary = import_jsonl(store, _write(tmp_path / "run.jsonl", HEADER, tasks), "j")
    assert summary.n_tasks == len(tasks) and summary.n_steps == sum(len(t["steps"]) for t in tasks)
    cols = "task_id, idx, url, thought, stated_action, executed_action, verb, element_id, element_role, element_label, value, key, direction, target_url, answer, readable, error"
    expected = store.query(f"SELECT {cols} FROM steps WHERE run = ? ORDER BY task_id, idx", [src])
    assert store.query(f"SELECT {cols} FROM steps WHERE run = 'j' ORDER BY task_id, idx") == expected
    tcols = "task_id, final_answer, termination, termination_detail, goal, n_steps"
    assert store.query(f"SELECT {tcols} FROM trajectories WHERE run = 'j' ORDER BY 1") == store.query(
        f"SELECT {tcols} FROM trajectories WHERE run = ? ORDER BY 1", [src]
    )
    run = store.query_dicts("SELECT agent, model, paradigm, source_format FROM runs WHERE name = 'j'")[0]
    assert run == {
        "agent": "PromptAgent",
        "model": "llama3:8b",
        "paradigm": "step_by_step",
        "source_format": "jsonl",
    }
    rewarded = store.query(
        "SELECT count(*) FILTER (WHERE status = 'success'), count(*) FROM evaluations WHERE run = 'j' AND source = 'source-reward'"
    )[0]
    assert rewarded == (sum(1 for t in tasks if t["final_answer"]), len(tasks))
    assert store.query("SELECT count(*) FROM observations WHERE run = 'j'") == store.query(
        "SELECT count(*) FROM observations WHERE run = ?", [src]
    )


def test_reimport_is_identical(store: Store, tmp_path: Path):
    path = _write(tmp_path / "run.jsonl", HEADER, _export(store))
    tables = ("trajectories", "steps", "observations", "import_problems")

    def snapshot():
        return {t: sorted(map(repr, store.query(f"SELECT * FROM {t} WHERE run = 'j'"))) for t in tables}

    import_jsonl(store, path, "j")
    first = snapshot()
    import_jsonl(store, path, "j")
    assert snapshot() == first


def test_full_plan_and_browsergym_actions(store: Store, tmp_path: Path):
    task = {
        "task_id": 3,
        "goal": "What are the top-2 best-selling product in 2022",
        "plan": ["Open the Reports menu", "Open Bestsellers", "Read the top two rows"],
        "steps": [
            {"url": "http://x/admin", "executed_action": "click('184')",
             "observation": "RootWebArea 'Dashboard'\n\t[184] link 'REPORTS'"},
            {"executed_action": "fill('216', 'yoga mat')"},
            {"executed_action": "send_msg_to_user('Quest Lumaflex Band, Sprite Stasis Ball')"},
        ],
        "final_answer": "Quest Lumaflex Band, Sprite Stasis Ball",
    }  # fmt: skip
    import_jsonl(store, _write(tmp_path / "p.jsonl", {**HEADER, "paradigm": "full_plan"}, [task]), "p")
    t = store.query_dicts("SELECT plan, termination, reward, success FROM trajectories WHERE run = 'p'")[0]
    assert orjson.loads(t["plan"]) == task["plan"]
    assert (t["termination"], t["reward"], t["success"]) == ("answered", None, None)
    verbs = [v for (v,) in store.query("SELECT verb FROM steps WHERE run = 'p' ORDER BY idx")]
    assert verbs == ["click", "type", "answer"]
    # The bid resolves against the observation the action was chosen on.
    first = store.query_dicts(
        "SELECT element_role, element_label, readable FROM steps WHERE run = 'p' AND idx = 0"
    )[0]
    assert (first["element_role"], first["element_label"]) == ("link", "REPORTS")
    assert "REPORTS" in first["readable"]


@pytest.mark.parametrize(
    ("header", "task", "message"),
    [
        ({"agent": "a"}, None, "line 1: (line): 'paradigm' is a required property"),
        ({**HEADER, "paradigm": "greedy"}, None, "line 1: paradigm: 'greedy' is not one of"),
        (HEADER, {"task_id": "3", "steps": []}, "line 2: task_id: '3' is not of type 'integer'"),
        (HEADER, {"task_id": 3}, "line 2: (line): 'steps' is a required property"),
        # Beyond the store's INTEGER: a validation error, not a failed transaction.
        (
            HEADER,
            {"task_id": 2**40, "steps": []},
            "line 2: task_id: 1099511627776 is greater than the maximum",
        ),
        (
            HEADER,
            {"task_id": 3, "steps": [{}, {"executed_action": 5}]},
            "line 2: steps[1].executed_action: 5 is not of type",
        ),
        (
            HEADER,
            {"task_id": 3, "steps": [{"stated_actoin": "x"}]},
            "line 2: steps[0]: Additional properties",
        ),
        (
            HEADER,
            {"task_id": 3, "steps": [], "termination": "gave_up"},
            "line 2: termination: 'gave_up' is not one of",
        ),
    ],
)
def test_validation_errors_name_line_and_field(store: Store, tmp_path: Path, header, task, message):
    before = store.row_counts()
    good = {"task_id": 1, "steps": []}
    tasks = [task, good] if task is not None else [good]
    with pytest.raises(InputError) as info:
        import_jsonl(store, _write(tmp_path / "bad.jsonl", header, tasks), "bad")
    text = str(info.value)
    assert message in text and "\n" not in text and text.startswith(str(tmp_path / "bad.jsonl"))
    assert store.row_counts() == before


def test_other_bad_files(store: Store, tmp_path: Path):
    before = store.row_counts()
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(orjson.dumps(HEADER) + b"\n" + b'{"task_id": 1, "steps": [}\n')
    with pytest.raises(InputError, match="line 2: not valid JSON"):
        import_jsonl(store, broken, "b")
    with pytest.raises(InputError, match="empty file"):
        import_jsonl(store, _write(tmp_path / "empty.jsonl", None, []), "b")
    dup = _write(tmp_path / "dup.jsonl", HEADER, [{"task_id": 1, "episode": "a", "steps": []}] * 2)
    with pytest.raises(InputError, match="line 3: task 1 episode 'a' already on line 2"):
        import_jsonl(store, dup, "b")
    assert store.row_counts() == before
    with pytest.raises(InputError, match="no such file"):
        import_jsonl(store, tmp_path / "missing.jsonl", "b")


def test_repeated_tasks_become_episodes_and_unknown_tasks_are_problems(store: Store, tmp_path: Path):
    tasks = [
        {"task_id": 5, "steps": [], "termination": "error"},
        {"task_id": 5, "steps": [], "final_answer": "N/A"},
        {"task_id": 9999, "steps": []},
    ]
    import_jsonl(store, _write(tmp_path / "e.jsonl", HEADER, tasks), "e")
    rows = store.query(
        "SELECT task_id, episode, is_answer, termination FROM trajectories WHERE run = 'e' ORDER BY 1, 2"
    )
    assert rows == [(5, "0", False, "error"), (5, "1", True, "na_answer"), (9999, "0", True, "none")]
    assert store.query("SELECT task_id, kind FROM import_problems WHERE run = 'e'") == [
        (9999, "unknown_task")
    ]


def test_schema_ships_as_package_data():
    schema = trajectory_schema()
    assert set(schema["$defs"]) >= {"header", "task", "step"}
    assert schema["$defs"]["header"]["properties"]["paradigm"]["enum"] == [
        "step_by_step", "tree_search", "full_plan", "human", "unknown",
    ]  # fmt: skip
