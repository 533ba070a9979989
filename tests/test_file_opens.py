"""How many times a scoring command opens the database file (`duckdb.connect` on the path), counted in
this process through the command line's `main()`: `import wav-run` and `evaluate` open it for their first
read (which creates, migrates or refuses the file before anything of the run is read) and for their one
write transaction, and nothing else; a file that cannot be used fails in one line before the run is read."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest
from cli_support import run_cli

from core.store import Store


@pytest.fixture(scope="module")
def wav(shipped_data: Path) -> Path:
    return shipped_data / "webarena-verified"


def run_counting(monkeypatch, capsys, db: Path, args: list[str]) -> tuple[int, list[str], str]:
    """`trajreview --db DB ARGS` in this process: (exit code, the paths duckdb.connect opened, stderr)."""
    opened: list[str] = []
    connect = duckdb.connect

    def counting(database=":memory:", *rest, **options):
        opened.append(str(database))
        return connect(database, *rest, **options)

    monkeypatch.setattr(duckdb, "connect", counting)
    done = run_cli(*args, db=db)
    monkeypatch.setattr(duckdb, "connect", connect)
    return done.returncode, opened, done.stderr


def test_an_import_and_an_evaluate_open_the_file_twice(monkeypatch, capsys, tasks_db, wav, tmp_path):
    db = tmp_path / "opens.duckdb"
    shutil.copy(tasks_db, db)
    config = str(wav / "config.demo.json")
    run = ["import", "wav-run", str(wav / "demo-run"), "--run", "r", "--config", config]
    code, opened, err = run_counting(monkeypatch, capsys, db, [*run, "--workers", "1"])
    assert code == 0, err
    assert opened == [str(db)] * 2  # the task ids, then the run's transaction
    code, opened, err = run_counting(monkeypatch, capsys, db, ["evaluate", "--run", "r", "--workers", "1"])
    assert code == 0, err
    assert opened == [str(db)] * 2  # the run and its responses, then the scores' transaction
    with Store(db) as store:
        assert store.query("SELECT count(*) FROM evaluations WHERE run = 'r'") == [(2,)]


@pytest.mark.slow
def test_a_new_file_is_created_by_the_imports_first_read(monkeypatch, capsys, wav, tmp_path):
    """A file that does not exist yet: the first read creates and migrates it, the packaged datasets are
    loaded in a transaction of their own that reads their ids back, then the run's transaction."""
    db = tmp_path / "new.duckdb"
    run = ["import", "wav-run", str(wav / "demo-run"), "--run", "r", "--no-score", "--workers", "1"]
    code, opened, err = run_counting(monkeypatch, capsys, db, run)
    assert code == 0, err
    assert opened == [str(db)] * 3
    with Store(db) as store:
        assert store.query("SELECT n_tasks FROM runs WHERE name = 'r'") == [(2,)]


def _newer_schema(path: Path) -> Path:
    with Store(path) as s, s.transaction() as cur:
        cur.execute("INSERT INTO schema_version VALUES (999, 'future', now())")
    return path


def _not_a_database(path: Path) -> Path:
    path.write_bytes(b"this is not duckdb" * 100)
    return path


@pytest.mark.parametrize("command", ["import wav-run", "evaluate"])
@pytest.mark.parametrize(
    ("make", "message"),
    [(_newer_schema, "newer than this trajreview supports"), (_not_a_database, "cannot open database")],
)
def test_a_file_that_cannot_be_used_fails_in_one_line_before_the_run_is_read(
    monkeypatch, capsys, wav, tmp_path, command, make, message
):
    from core.ingest import wav_run
    from core.scoring import stored_scores

    db = make(tmp_path / "bad.duckdb")
    before = db.read_bytes()
    read: list[object] = []
    for module in (wav_run, stored_scores):  # where each command would open the run's files: never reached
        monkeypatch.setattr(module, "run_directory", lambda *a: read.append(a))
    args = {
        "import wav-run": ["import", "wav-run", str(wav / "demo-run"), "--run", "r", "--workers", "1"],
        "evaluate": ["evaluate", "--run", "r", "--workers", "1"],
    }[command]
    code, opened, err = run_counting(monkeypatch, capsys, db, args)
    assert code == 2 and err.count("\n") == 1 and message in err, err
    assert read == [] and opened == [str(db)] and db.read_bytes() == before
