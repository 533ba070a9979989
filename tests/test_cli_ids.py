"""No traceback for ids the database does not hold: every command that reads a run, task, gold set or
judge configuration by name or number says so in one line and exits 2, and so does `import tasks` with a
task id beyond what the store's INTEGER column holds (2**40). Each case runs `main()` exactly as the
`trajreview` script does; an exception it lets through fails the test (it would be a traceback)."""

from __future__ import annotations

import inspect
import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from cli_support import run_cli
from demo_support import GOLD

from core.cli import main as cli
from core.ingest.tasks import verified_dataset_path
from core.paths import REPO_ROOT
from core.store import Store

BIG, HUGE = str(2**40), str(2**70)

# (command, the parameter given an id the database lacks, arguments after `--db DB`, what the line says)
CASES = [
    ("show", "task", ["show", "--run", "opagent", "--task", BIG], f"no task {BIG} in run 'opagent'"),
    ("show", "task", ["show", "--run", "opagent", "--task", HUGE], f"no task {HUGE} in run 'opagent'"),
    ("show", "task", ["show", "--run", "opagent", "--task", "-1"], "no task -1 in run 'opagent'"),
    ("show", "run", ["show", "--run", "nope", "--task", "101"], "no run named 'nope'"),
    (
        "show",
        "gold",
        ["show", "--run", "opagent", "--task", "101", "--gold", "nope"],
        "no gold set named 'nope'",
    ),
    ("gold history", "task", ["gold", "history", GOLD, BIG], f"no gold of task {BIG} in gold set"),
    ("gold history", "task", ["gold", "history", GOLD, HUGE], f"no gold of task {HUGE} in gold set"),
    ("gold history", "name", ["gold", "history", "nope", "101"], "no gold set named 'nope'"),
    ("export gold", "name", ["export", "gold", "nope", "--out", "{tmp}/g.csv"], "no gold set named 'nope'"),
    ("export eval", "run", ["export", "eval", "{tmp}/eval", "--run", "nope"], "no run named 'nope'"),
    ("export parquet", "runs", ["export", "parquet", "{tmp}/pq", "--run", "nope"], "no run named 'nope'"),
    ("metrics", "run", ["metrics", "--run", "nope", "--gold", GOLD], "no run named 'nope'"),
    ("metrics", "gold", ["metrics", "--run", "opagent", "--gold", "nope"], "no gold set named 'nope'"),
    (
        "metrics",
        "judge",
        ["metrics", "--run", "opagent", "--gold", GOLD, "--judge", "nope"],
        "--judge: must be one of",
    ),  # fmt: skip
    ("evaluate", "run", ["evaluate", "--run", "nope"], "no run named 'nope'"),
    (
        "evaluate-offline",
        "judge",
        ["evaluate-offline", "--run", "opagent", "--judge", "nope"],
        "--judge: must be offline or llm",
    ),  # fmt: skip
    ("evaluate-offline", "run", ["evaluate-offline", "--run", "nope"], "no run named 'nope'"),
    ("labels", "run", ["labels", "--run", "nope"], "no run named 'nope'"),
    ("diagnose", "run", ["diagnose", "--run", "nope"], "no run named 'nope'"),
    ("search", "run", ["search", "words", "--run", "nope"], "no run named 'nope'"),
    ("judge-agreement", "run", ["judge-agreement", "--from-db", "--run", "nope"], "no run named 'nope'"),
    (
        "judge-agreement",
        "judge",
        ["judge-agreement", "{tmp}/labels.csv", "--judge", "nope"],
        "--judge: 'nope' is not one of",
    ),  # fmt: skip
    (
        "judge-agreement",
        "judge_config",
        ["judge-agreement", "--from-db", "--judge-config", "nope"],
        "--judge-config: must be one of",
    ),  # fmt: skip
    ("report", "runs", ["report", "--run", "nope"], "no run named 'nope'"),
    ("report", "gold", ["report", "--run", "opagent", "--gold", "nope"], "no gold set named 'nope'"),
    ("report", "judge", ["report", "--run", "opagent", "--judge", "nope"], "--judge: must be one of"),
    (
        "import tasks",
        "path",
        ["import", "tasks", "{tmp}/big.json"],
        f"task {BIG}: task_id: Input should be less than or equal to 2147483647",
    ),  # fmt: skip
    (
        "import tasks",
        "path",
        ["import", "tasks", "{tmp}/negative.json"],
        "task -5: task_id: Input should be greater than or equal to 0",
    ),  # fmt: skip
    (
        "import tasks",
        "path",
        ["import", "tasks", "{tmp}/template.json"],
        "intent_template_id: Input should be less than or equal to 2147483647",
    ),  # fmt: skip
    (
        "import requirements",
        "path",
        ["import", "requirements", "{tmp}/requirements.csv"],
        f"line 2: task_id {BIG} is out of range",
    ),  # fmt: skip
]
# Parameters that name something the database holds (readers), or a file of ids (importers below).
ID_PARAMETERS = {"run", "runs", "task", "gold", "name", "judge", "judge_config"}
ID_FILES = {"import tasks", "import requirements"}  # the other importers record such ids as problems


@pytest.fixture(scope="module")
def db(demo_db: Path, tmp_path_factory) -> Path:
    """A copy of the demo database, and the files of ids it lacks."""
    folder = tmp_path_factory.mktemp("ids")
    path = folder / "demo.duckdb"
    shutil.copy(demo_db, path)
    task = orjson.loads(verified_dataset_path().read_bytes())[0]
    for name, changes in (("big", {"task_id": 2**40}), ("negative", {"task_id": -5}),
                          ("template", {"task_id": 5, "intent_template_id": 2**40})):  # fmt: skip
        (folder / f"{name}.json").write_bytes(orjson.dumps([{**task, **changes}]))
    (folder / "labels.csv").write_text(
        "kind,a,b,label\ngold_vs_agent,Click 'Go',click [12] Go,1\n", encoding="utf-8"
    )
    (folder / "requirements.csv").write_text(f"task_id,requirement\n{BIG},anything\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "command, parameter, args, says", CASES, ids=[" ".join(c[2][:2]) + f" {c[1]}" for c in CASES]
)
def test_an_id_the_database_lacks_is_one_line_and_exit_2(command, parameter, args, says, db):
    tmp = db.parent
    with Store(db, read_only=True) as store:
        before = store.row_counts()
    done = run_cli(*(a.format(tmp=tmp) for a in args), db=db)
    code, err = done.returncode, done.stderr
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and err.startswith("error: ") and says in err, err
    with Store(db, read_only=True) as store:  # and nothing was written
        assert store.row_counts() == before


def test_every_reader_of_an_id_is_covered():
    """Each command parameter that names something the database holds has a case above, so a new
    command (or option) cannot slip in without one."""
    import typer.main

    def commands(group, path):
        for c in group.registered_commands:
            yield f"{path} {c.name or typer.main.get_command_name(c.callback.__name__)}".strip(), c.callback
        for sub in group.registered_groups:
            yield from commands(sub.typer_instance, f"{path} {sub.name}".strip())

    wanted = set()
    for name, callback in commands(cli.app, ""):
        if name.startswith("import ") or name == "gold new-set":  # they name what they create
            continue
        wanted |= {(name, p) for p in inspect.signature(callback).parameters if p in ID_PARAMETERS}
    covered = {(command, parameter) for command, parameter, _, _ in CASES}
    assert wanted <= covered, sorted(wanted - covered)
    assert {(name, "path") for name in ID_FILES} <= covered


def test_import_tasks_with_a_huge_id_in_a_real_process(db):
    """The issue's case, as a user meets it: one line, exit 2, no traceback, the database unchanged."""
    fresh = db.parent / "fresh.duckdb"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    env.pop("TRAJREVIEW_DB", None)
    result = subprocess.run(
        [sys.executable, "-m", "core.cli.start", "--db", str(fresh), "import", "tasks", str(db.parent / "big.json")],
        capture_output=True, text=True, env=env, cwd=REPO_ROOT, timeout=300,
    )  # fmt: skip
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [
        f"error: {db.parent / 'big.json'}: task {BIG}: task_id: Input should be less than or equal to 2147483647"
    ]
    with Store(fresh, read_only=True) as store:
        assert store.query("SELECT count(*) FROM tasks")[0][0] == 0
