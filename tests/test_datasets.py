"""Task datasets: the packaged 812 tasks, idempotency, and every bad-input case."""

from __future__ import annotations

import json

import orjson
import pytest

from core.errors import InputError
from core.ingest.tasks import import_tasks, verified_dataset_path


def _snapshot(store):
    return {
        t: store.query(f"SELECT * FROM {t} ORDER BY ALL") for t in ("tasks", "original_tasks", "datasets")
    }


def test_packaged_datasets_load_812_tasks(tasks_store):
    s = tasks_store
    assert s.query("SELECT count(*) FROM tasks")[0][0] == 812
    assert s.query("SELECT count(*) FROM original_tasks")[0][0] == 812
    # Per-site split of the dataset itself, multi-site tasks in their own bucket.
    per_site = dict(s.query("SELECT site_key, count(*) FROM tasks GROUP BY 1"))
    raw = orjson.loads(verified_dataset_path().read_bytes())
    expected = {}
    for t in raw:
        key = "-".join(sorted(t["sites"]))
        expected[key] = expected.get(key, 0) + 1
    assert per_site == expected
    types = dict(s.query("SELECT task_type, count(*) FROM tasks GROUP BY 1"))
    assert set(types) == {"retrieve", "mutate", "navigate"} and sum(types.values()) == 812
    hard = s.query("SELECT count(*) FROM tasks WHERE in_hard_subset")[0][0]
    assert 0 < hard < 812
    # Original reference answers are there for partial success later.
    must = s.query("SELECT count(*) FROM original_tasks WHERE len(must_include) > 0")[0][0]
    assert must > 100
    assert s.query("SELECT exact_match FROM original_tasks WHERE task_id = 0")[0][0] == "Quest Lumaflex™ Band"


def test_import_is_idempotent(tasks_store):
    before = _snapshot(tasks_store)
    import_tasks(tasks_store, original=True)
    assert _snapshot(tasks_store) == before


def test_custom_file_replaces_dataset(tasks_store, tmp_path):
    raw = orjson.loads(verified_dataset_path().read_bytes())[:5]
    path = tmp_path / "mini.json"
    path.write_bytes(orjson.dumps(raw))
    counts = import_tasks(tasks_store, path)
    assert counts == {"mini": 5}
    assert tasks_store.query("SELECT count(*), min(dataset_name) FROM tasks")[0] == (5, "mini")


def _bad_cases(tmp_path):
    good = orjson.loads(verified_dataset_path().read_bytes())[:3]
    missing_intent = [dict(good[0]), *good[1:]]
    del missing_intent[0]["intent"]
    cases = {
        "not_json": (b"{not json", "not valid JSON"),
        "not_a_list": (b'{"task_id": 1}', "expected a JSON list"),
        "empty": (b"[]", "empty"),
        "wrong_shape": (json.dumps([1, 2]).encode(), "task #0"),
        "duplicate_ids": (orjson.dumps([good[0], good[1], good[0]]), "duplicate task_id 0"),
        "missing_field": (orjson.dumps(missing_intent), "intent"),
        "bad_type": (orjson.dumps([{**good[0], "task_id": "zero"}]), "task_id"),
    }
    for name, (content, _) in cases.items():
        (tmp_path / f"{name}.json").write_bytes(content)
    return {name: (tmp_path / f"{name}.json", reason) for name, (_, reason) in cases.items()}


@pytest.mark.parametrize(
    "case", ["not_json", "not_a_list", "empty", "wrong_shape", "duplicate_ids", "missing_field", "bad_type"]
)
def test_bad_input_is_one_line_error_and_leaves_db_unchanged(tasks_store, tmp_path, case):
    path, reason = _bad_cases(tmp_path)[case]
    before = _snapshot(tasks_store)
    with pytest.raises(InputError) as info:
        import_tasks(tasks_store, path)
    message = str(info.value)
    assert str(path) in message and reason in message and "\n" not in message
    assert _snapshot(tasks_store) == before


def test_missing_file_is_input_error(store, tmp_path):
    with pytest.raises(InputError, match="no such file"):
        import_tasks(store, tmp_path / "nope.json")
