"""The hostile-input corpus (tests/hostile/cases.py) over every importer, one test per case.

Each case asserts the exit code, the one-line error naming the file (refusals) or the problem naming it
(imports), the database unchanged on refusal, no MARKER file from any pickle; pytest-timeout bounds each
case. `run_corpus.py` runs the same cases in subprocesses and prints the outcome table.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hostile.cases import all_cases
from hostile.runner import run_in_process

from core.paths import has_shared_data

CASES = all_cases()
# The corpus runs in `make test`; `make check` leaves it out (about two minutes of importer runs).
pytestmark = pytest.mark.slow


@pytest.mark.timeout(60)
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_input(case, tasks_db: Path, tmp_path: Path, capsys):
    if case.needs_shared and not has_shared_data():
        pytest.skip("builds on an AgentLab episode, which only ../shared/data has")
    result = run_in_process(case, tmp_path, tasks_db, capsys)
    assert result.failures() == [], result.case.name


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    import sys

    from core.cli.main import main

    saved, sys.argv = sys.argv, ["trajreview", *argv]
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0
    finally:
        sys.argv = saved
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.timeout(120)
def test_names_with_rich_markup_print_as_themselves(tasks_db: Path, tmp_path: Path, capsys):
    """Run and gold-set names are data: `[/bad]` imports, reports and shows as the text it is."""
    import shutil

    db = tmp_path / "t.duckdb"
    shutil.copy(tasks_db, db)
    jsonl = tmp_path / "run.jsonl"
    jsonl.write_text(
        '{"paradigm": "step_by_step"}\n{"task_id": 5, "steps": [{"executed_action": "click [1]"}]}\n'
    )
    name = "[/bad][bold red]x[link=file:///etc/passwd]y"
    code, out, err = _cli(capsys, "--db", str(db), "import", "jsonl", str(jsonl), "--run", name)
    assert (code, err) == (0, "") and name in out
    code, out, err = _cli(capsys, "--db", str(db), "report", "--run", name)
    assert (code, err) == (0, "")
    code, out, err = _cli(capsys, "--db", str(db), "show", "--run", name, "--task", "5")
    assert code == 0 and err == "" and name in out
