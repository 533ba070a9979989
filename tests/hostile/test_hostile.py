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

CASES = all_cases()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_input(case, tasks_db: Path, tmp_path: Path, capsys):
    result = run_in_process(case, tmp_path, tasks_db, capsys)
    assert result.failures() == [], result.case.name
