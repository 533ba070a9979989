"""Requirements for partial success: derived from the task datasets, overridden by an imported file."""

from __future__ import annotations

import pytest

from core.errors import InputError
from core.measure.requirements import (
    derive_requirements,
    import_requirements,
    read_requirements_file,
    requirement_items,
    requirements_by_task,
)


def test_requirement_items_shapes():
    assert requirement_items(["Catso", ["Anglebert Dinkherhump", "Anglebert"], 260.69, 3.0]) == [
        "Catso", "Anglebert Dinkherhump || Anglebert", "260.69", "3",
    ]  # fmt: skip
    assert requirement_items([{"name": "Pittsburgh International Airport", "postcode": "15231"}]) == [
        "Pittsburgh International Airport", "15231",
    ]  # fmt: skip
    assert requirement_items(None) == []


def test_derived_from_real_datasets_with_precedence(tasks_store):
    counts = derive_requirements(tasks_store)
    assert counts["verified_retrieved_data"] > 0 and counts["original_must_include"] > 0
    chosen = requirements_by_task(tasks_store)
    # Task 21: the verified retrieved_data wins over the original must_include (which lists 5 names).
    source, texts = chosen[21]
    assert source == "verified_retrieved_data"
    assert texts[:2] == ["Catso", "Dibbins"] and len(texts) == 4
    # A navigate task has none.
    assert 118 not in chosen or chosen[118][0] == "original_must_include"


def test_import_overrides_only_listed_tasks(tasks_store, tmp_path):
    derive_requirements(tasks_store)
    csv_file = tmp_path / "req.csv"
    csv_file.write_text("task_id,requirement\n21,Rhode Island\n21,Massachusetts\n21,New York\n")
    assert import_requirements(tasks_store, csv_file) == {"tasks": 1, "requirements": 3}
    chosen = requirements_by_task(tasks_store)
    assert chosen[21] == ("import", ["Rhode Island", "Massachusetts", "New York"])
    assert chosen[188][0] == "verified_retrieved_data"
    # Re-deriving keeps the override; importing again replaces it.
    derive_requirements(tasks_store)
    json_file = tmp_path / "req.json"
    json_file.write_text('{"21": ["Connecticut", 42]}')
    import_requirements(tasks_store, json_file)
    assert requirements_by_task(tasks_store)[21] == ("import", ["Connecticut", "42"])


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("a.csv", "task,text\n1,x\n", "expected CSV columns task_id,requirement"),
        ("b.csv", "task_id,requirement\nabc,x\n", "line 2: task_id 'abc' is not an integer"),
        ("c.csv", "task_id,requirement\n3,\n", "line 2: empty requirement"),
        ("d.json", "{not json", "not valid JSON"),
        ("e.json", '{"3": "x"}', "requirements must be a list of strings"),
        ("f.json", "[]", "no requirements in the file"),
    ],
)
def test_bad_files_give_one_line_errors(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(InputError, match=message) as info:
        read_requirements_file(path)
    assert "\n" not in str(info.value) and str(path) in str(info.value)


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_requirements_file(tmp_path / "nope.csv")
