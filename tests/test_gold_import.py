"""Human gold import on the paper's xlsx (../shared/data/human-gold), plus CSV/JSONL and gold edits."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import openpyxl
import orjson
import pytest
from cli_support import run_cli

from core.errors import InputError, NotFound
from core.files import safe_files
from core.gold import editing as ge
from core.gold.versions import current_gold
from core.ingest import gold as gold_importer
from core.ingest.gold import import_gold
from core.store import Store

XLSX = "Golden Human Trajectories.xlsx"


@pytest.fixture(scope="session")
def gold_xlsx(shared_data: Path) -> Path:
    return shared_data / "human-gold" / XLSX


@pytest.fixture(scope="session")
def gold_rows(gold_xlsx: Path) -> list[tuple]:
    sheet = openpyxl.load_workbook(gold_xlsx, read_only=True).worksheets[0]
    return list(sheet.iter_rows(values_only=True))


@pytest.fixture(scope="session")
def gold_db(paper_gold_db: Path) -> Path:
    return paper_gold_db


@pytest.fixture
def gold_store(gold_db: Path, tmp_path: Path):
    path = tmp_path / "gold.duckdb"
    shutil.copy(gold_db, path)
    with Store(path) as store:
        yield store


def test_xlsx_counts_match_the_readme(gold_store: Store, gold_rows: list[tuple]):
    # README: 652 tasks, 19 `Pink` rows, 18 tasks in two blocks; 4,350 data rows.
    tasks, alts, steps = gold_store.query(
        "SELECT count(DISTINCT task_id), count(DISTINCT (task_id, alternative)), count(*) FROM gold_steps"
    )[0]
    assert (tasks, steps) == (652, len(gold_rows) - 1) == (652, 4350)
    flagged = gold_store.query("SELECT count(*) FROM gold_steps WHERE list_contains(flags, 'pink')")[0][0]
    assert flagged == sum(1 for r in gold_rows if r[1] == "Pink") == 19
    two = gold_store.query(
        "SELECT task_id FROM gold_steps GROUP BY task_id HAVING count(DISTINCT alternative) = 2 ORDER BY 1"
    )
    assert [t for (t,) in two] == [101, 146, 163, 164, 165, 166, 224, 247, 313, 346, 366, 434, 538, 701,
                                   808, 809, 810, 811]  # fmt: skip
    assert alts == 652 + 18


def test_continuation_rows_belong_to_the_task_above(gold_store: Store):
    # README: data rows 2962, 2963, 2971, 2973 (task 751) and 4195 (task 529) have no Task No.;
    # source_row is 1-based with the header as row 1, so data row i is source row i + 2.
    rows = dict(
        gold_store.query(
            "SELECT source_row, task_id FROM gold_steps WHERE source_row IN (2964, 2965, 2973, 2975, 4197)"
        )
    )
    assert rows == {2964: 751, 2965: 751, 2973: 751, 2975: 751, 4197: 529}


def test_alternatives_keep_file_order(gold_store: Store, gold_rows: list[tuple]):
    g = current_gold(gold_store, "paper-gold", 101)
    first_block = [r[2].strip() for r in gold_rows[1:] if r[0] == 101]
    assert [s.text for s in g.alternatives[0] + g.alternatives[1]] == [
        " ".join(t.split()) for t in first_block
    ]
    assert g.alternatives[0][0].source_row < g.alternatives[1][0].source_row


def test_whitespace_is_normalised_and_text_otherwise_verbatim(gold_store: Store, gold_rows: list[tuple]):
    texts = [t for (t,) in gold_store.query("SELECT text FROM gold_steps")]
    assert not any("\xa0" in t or "  " in t or t != t.strip() for t in texts)
    nbsp_rows = [r for r in gold_rows[1:] if "\xa0" in str(r[2])]
    assert len(nbsp_rows) == 21  # README: 21 rows
    # The README's example row, doubled and trailing spaces included.
    assert any(r[2] == "Type '404' in the  the 'Search or filter results' " for r in gold_rows)
    assert "Type '404' in the the 'Search or filter results'" in texts


def test_pink_rows_are_flagged_not_silently_gold(gold_store: Store):
    rows = gold_store.query_dicts(
        "SELECT task_id, count(*) AS n FROM gold_steps WHERE list_contains(flags, 'pink') GROUP BY 1 ORDER BY 1"
    )
    assert rows == [{"task_id": 96, "n": 2}, {"task_id": 416, "n": 6}, {"task_id": 434, "n": 11}]


def test_steps_are_parsed_where_the_text_allows(gold_store: Store):
    parsed = {
        r["text"]: r
        for r in gold_store.query_dicts(
            "SELECT text, verb, element_label, value FROM gold_steps WHERE task_id = 809"
        )
    }
    step = parsed["Type '404 for many URLs' into the 'Title' textbox."]
    assert (step["verb"], step["value"], step["element_label"]) == ("type", "404 for many URLs", "Title")
    verbs = dict(gold_store.query("SELECT verb, count(*) FROM gold_steps GROUP BY 1"))
    assert verbs["click"] > 2000 and verbs["type"] > 700


def test_reimport_is_idempotent_and_keeps_edits(gold_store: Store, gold_xlsx: Path):
    before = gold_store.query("SELECT * FROM gold_steps ORDER BY task_id, version, alternative, idx")
    sets_before = gold_store.query("SELECT * FROM gold_sets")
    import_gold(gold_store, gold_xlsx, "paper-gold", author="paper")
    assert gold_store.query("SELECT * FROM gold_steps ORDER BY task_id, version, alternative, idx") == before
    assert gold_store.query("SELECT * FROM gold_sets") == sets_before
    ge.save_gold(gold_store, "paper-gold", 101, [["Click on 'Directions'"]], "reviewer", "shorter", 1)
    summary = import_gold(gold_store, gold_xlsx, "paper-gold", author="paper")
    assert summary.unchanged_edits == 1
    assert current_gold(gold_store, "paper-gold", 101).version == 2


def test_gold_edits_add_versions(gold_store: Store):
    v1 = current_gold(gold_store, "paper-gold", 808)
    assert v1.version == 1 and v1.author == "paper"
    version = ge.save_gold(
        gold_store, "paper-gold", 808, [["Click on 'Issues'", "  Type  'x' into the 'Title' textbox "], []],
        "reviewer", "merged the near-duplicates", 1,
    )  # fmt: skip
    assert version == 2
    current = current_gold(gold_store, "paper-gold", 808)
    assert (
        current.version == 2 and current.author == "reviewer" and current.note == "merged the near-duplicates"
    )
    assert [[s.text for s in alt] for alt in current.alternatives] == [
        ["Click on 'Issues'", "Type 'x' into the 'Title' textbox"]
    ]
    assert current.alternatives[0][1].verb == "type" and current.alternatives[0][1].value == "x"
    # Version 1 is still there, unchanged.
    assert gold_store.query(
        "SELECT count(*) FROM gold_steps WHERE gold_set = 'paper-gold' AND task_id = 808 AND version = 1"
    )[0][0] == sum(len(a) for a in v1.alternatives)
    assert [v["version"] for v in ge.history(gold_store, "paper-gold", 808)] == [2, 1]
    assert current_gold(gold_store, "paper-gold", 0) is None
    with pytest.raises(NotFound, match="no gold set named"):
        ge.save_gold(gold_store, "nope", 808, [["Click 'x'"]], "reviewer", "why", None)
    with pytest.raises(InputError, match="at least one non-empty step"):
        ge.save_gold(gold_store, "paper-gold", 808, [[" "]], "reviewer", "why", 2)


def _write_csv(path: Path, rows: list[tuple]) -> None:
    with open(path, "w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows([("" if v is None else v) for v in row] for row in rows)


def test_csv_and_jsonl_give_the_same_gold(gold_store: Store, gold_rows: list[tuple], tmp_path: Path):
    csv_path = tmp_path / "gold.csv"
    _write_csv(csv_path, gold_rows)
    jsonl_path = tmp_path / "gold.jsonl"
    jsonl_path.write_bytes(
        b"\n".join(orjson.dumps(dict(zip(gold_rows[0], r, strict=True))) for r in gold_rows[1:])
    )
    import_gold(gold_store, csv_path, "csv-gold")
    import_gold(gold_store, jsonl_path, "jsonl-gold")
    cols = "task_id, alternative, idx, text, verb, element_label, value, flags"

    def content(name):
        return gold_store.query(
            f"SELECT {cols} FROM gold_steps WHERE gold_set = ? ORDER BY task_id, alternative, idx", [name]
        )

    assert content("csv-gold") == content("paper-gold") == content("jsonl-gold")


def test_wrong_headers_are_a_one_line_error_and_change_nothing(gold_store: Store, tmp_path: Path):
    bad = tmp_path / "bad.xlsx"
    book = openpyxl.Workbook()
    book.active.append(["Task", "Step", "Text"])
    book.active.append([1, 1, "Click 'x'"])
    book.save(bad)
    before = gold_store.row_counts()
    with pytest.raises(InputError) as info:
        import_gold(gold_store, bad, "bad")
    assert (
        str(info.value).startswith(str(bad)) and "Task No." in str(info.value) and "\n" not in str(info.value)
    )
    assert gold_store.row_counts() == before


def test_other_bad_input(gold_store: Store, gold_xlsx: Path, tmp_path: Path):
    before = gold_store.row_counts()
    not_xlsx = tmp_path / "fake.xlsx"
    not_xlsx.write_text("hello", encoding="utf-8")
    with pytest.raises(InputError, match="not a readable xlsx"):
        import_gold(gold_store, not_xlsx, "x")
    orphan = tmp_path / "orphan.csv"
    _write_csv(orphan, [("Task No.", "Step No.", "Text"), (None, 1, "Click 'x'")])
    with pytest.raises(InputError, match="row 2: no Task No."):
        import_gold(gold_store, orphan, "x")
    other = tmp_path / "other.csv"
    _write_csv(other, [("Task No.", "Step No.", "Text"), (3, 1, "Click 'x'")])
    with pytest.raises(InputError, match="already exists from a different file"):
        import_gold(gold_store, other, "paper-gold")
    assert gold_store.row_counts() == before
    import_gold(gold_store, other, "paper-gold", replace=True)
    assert gold_store.query("SELECT count(*) FROM gold_steps WHERE gold_set = 'paper-gold'")[0][0] == 1


def test_cli_prints_the_summary_and_one_line_errors(gold_xlsx: Path, tmp_path: Path):
    db = tmp_path / "cli.duckdb"
    ok = run_cli("import", "gold", str(gold_xlsx), "--name", "g", db=db)
    assert ok.returncode == 0, ok.stderr
    numbers = ok.stdout.split("\n")
    assert any(all(n in line for n in ("652", "670", "4350", "19", "18")) for line in numbers)
    bad = tmp_path / "bad.csv"
    bad.write_text("Task,Step,Text\n1,1,Click 'x'\n", encoding="utf-8")
    failed = run_cli("import", "gold", str(bad), "--name", "b", db=db)
    assert failed.returncode == 2
    assert failed.stderr.strip().count("\n") == 0 and str(bad) in failed.stderr


def test_formula_cells_are_refused_not_guessed(gold_store: Store, tmp_path: Path):
    # Without a cached result openpyxl reads a formula as None: the row would silently join the task
    # above with an empty text. With one, the text would be whatever the formula computed.
    for row in (["=1+1", 2, "Click 'b'"], [1, 2, '=HYPERLINK("http://example.com", "Click")']):
        path = tmp_path / "formula.xlsx"
        book = openpyxl.Workbook()
        for values in (["Task No.", "Step No.", "Text"], [1, 1, "Click 'a'"], row):
            book.active.append(values)
        book.save(path)
        before = gold_store.row_counts()
        with pytest.raises(InputError, match="row 3: cell [AC]3 is a formula"):
            import_gold(gold_store, path, "f")
        assert gold_store.row_counts() == before


def test_oversized_input_is_a_one_line_error(gold_store: Store, tmp_path: Path, monkeypatch):
    long_field = tmp_path / "long.csv"
    _write_csv(long_field, [("Task No.", "Step No.", "Text"), (1, 1, "x" * 200_000)])
    with pytest.raises(InputError, match="row 2: not readable as CSV"):
        import_gold(gold_store, long_field, "l")
    bomb = tmp_path / "bomb.xlsx"
    book = openpyxl.Workbook()
    book.active.append(["Task No.", "Step No.", "Text"])
    book.active.append([1, 1, "Click " * 50_000])  # compresses to a few KB
    book.save(bomb)
    monkeypatch.setattr(gold_importer, "MAX_BYTES", bomb.stat().st_size * 2)
    with pytest.raises(InputError, match="unpacks to more than"):
        import_gold(gold_store, bomb, "b")
    monkeypatch.setitem(safe_files.LIMITS, "gold", long_field.stat().st_size - 1)
    with pytest.raises(InputError, match="more than the .* limit for a gold"):
        import_gold(gold_store, long_field, "l")
