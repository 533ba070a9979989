"""The `trajreview` command as a user runs it: real subprocesses through the console script's entry point
(`core.cli.start:main`, as `python -m core.cli.start`), exit codes, one-line errors."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest


def run_cli(*args: str, db=None, check: bool = False) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "core.cli.start"]
    if db is not None:
        cmd += ["--db", str(db)]
    env = {k: v for k, v in os.environ.items() if k != "TRAJREVIEW_DB"}
    return subprocess.run([*cmd, *args], capture_output=True, text=True, check=check, env=env)


@pytest.mark.slow
def test_init_info_and_import_tasks(tmp_path):
    db = tmp_path / "cli.duckdb"
    out = run_cli("init", db=db, check=True).stdout
    assert "schema version" in out
    out = run_cli("import", "tasks", "--original", db=db, check=True).stdout
    assert "webarena-verified: 812 tasks" in out and "webarena-original: 812 tasks" in out
    info = run_cli("info", db=db, check=True).stdout
    assert "schema version" in info
    assert any(line.split("│")[1:3] and "tasks" in line and "812" in line for line in info.splitlines())


@pytest.mark.slow
def test_env_var_selects_database(tmp_path):
    db = tmp_path / "env.duckdb"
    env = {**os.environ, "TRAJREVIEW_DB": str(db)}
    subprocess.run([sys.executable, "-m", "core.cli.start", "init"], env=env, check=True, capture_output=True)
    assert db.exists()


@pytest.mark.slow
def test_bad_input_exits_nonzero_with_one_line(tmp_path):
    db = tmp_path / "cli.duckdb"
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2")
    result = run_cli("import", "tasks", str(bad), db=db)
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and str(bad) in lines[0] and "Traceback" not in result.stderr


def test_info_on_missing_database_is_one_line_error(tmp_path):
    result = run_cli("info", db=tmp_path / "none.duckdb")
    assert result.returncode != 0 and "no such database" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.slow
def test_every_import_command_checks_paradigm_the_same_way(tmp_path, shipped_data):
    from typing import get_args

    from core.ingest.records import Paradigm

    # The check comes before any file is read (the AgentLab import is given a folder without episodes).
    commands = {
        "wav-run": [str(shipped_data / "webarena-verified" / "demo-run"), "--no-score"],
        "agentlab": [str(shipped_data / "oagent-run")],
        "webarena-render": [str(shipped_data / "webarena-render" / "babelcloud__webarena")],
        "opagent": [str(shipped_data / "oagent-run")],
    }
    for command, args in commands.items():
        result = run_cli(
            "import", command, *args, "--run", "r", "--paradigm", "telepathy", db=tmp_path / "p.duckdb"
        )
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert result.returncode == 2 and len(lines) == 1, (command, result.stderr)
        assert "--paradigm" in lines[0] and all(p in lines[0] for p in get_args(Paradigm))
    # Refused before any work: no run was written.
    if (tmp_path / "p.duckdb").exists():
        from core.store import Store

        with Store(tmp_path / "p.duckdb", read_only=True) as store:
            assert store.query("SELECT count(*) FROM runs")[0][0] == 0


def test_an_unencodable_print_is_escaped_and_does_not_poison_later_prints(capsys):
    """A lone surrogate (an agent's answer) printed through the CLI's consoles comes out as its escape, and
    the next print still works: rich keeps a failed write in its buffer, so before, every later print of the
    same process re-raised the first one's error."""
    from core.cli import ui

    ui.say("answer: \ud800 end")
    ui.say("a normal line")
    ui.err_console.print("err \udfff")
    ui.err_console.print("after")
    out, err = capsys.readouterr()
    assert out.splitlines() == ["answer: \\ud800 end", "a normal line"]
    assert err.splitlines() == ["err \\udfff", "after"]


@pytest.mark.slow
def test_the_pooled_commands_through_the_entry_point(tmp_path, tasks_db, shipped_data):
    """`import wav-run` and `evaluate` with their worker pool (the fork server started by the entry point):
    they succeed, and a bad input ends with exit code 2 and one line, the stored run as it was."""
    from core.store import Store

    wav = shipped_data / "webarena-verified"
    db = tmp_path / "pooled.duckdb"
    shutil.copy(tasks_db, db)
    config = str(wav / "config.demo.json")
    imported = run_cli("import", "wav-run", str(wav / "demo-run"), "--run", "r", "--config", config, db=db)
    assert imported.returncode == 0, imported.stderr
    assert imported.stderr == "" and "run r: 2 tasks" in imported.stdout

    def stored() -> list[tuple]:
        with Store(db, read_only=True) as store:
            return store.query(
                "SELECT r.imported_at, e.task_id, e.status, e.score, e.evaluated_at FROM runs r"
                " JOIN evaluations e ON e.run = r.name WHERE r.name = 'r' ORDER BY e.task_id"
            )

    before = stored()
    assert len(before) == 2
    bad_config = tmp_path / "bad.json"
    bad_config.write_text("{not json")
    failures = {
        "import": ("import", "wav-run", str(wav / "demo-run"), "--run", "r", "--config", str(bad_config)),
        "evaluate config": ("evaluate", "--run", "r", "--config", str(tmp_path / "absent.json")),
        "evaluate run": ("evaluate", "--run", "nope"),
    }
    for name, args in failures.items():
        failed = run_cli(*args, db=db)
        assert failed.returncode == 2, (name, failed.stderr)
        assert failed.stderr.startswith("error: ") and len(failed.stderr.splitlines()) == 1, (
            name,
            failed.stderr,
        )
        assert stored() == before, name  # nothing half-written
    evaluated = run_cli("evaluate", "--run", "r", db=db)
    assert evaluated.returncode == 0, evaluated.stderr
    after = stored()
    assert [row[1:4] for row in after] == [row[1:4] for row in before]  # the same scores
    assert all(a[4] > b[4] for a, b in zip(after, before, strict=True))  # written anew


def test_the_command_tree_is_built_once_per_process(monkeypatch):
    """Typer builds the whole command tree on every `app()` (0.12 s); `main` builds it once per process, so
    commands run in turn in one process (the tests' in-process calls) do not pay it again."""
    import typer.main
    from cli_support import run_cli

    from core.cli import main as cli_main

    built = []
    build = typer.main.get_command
    monkeypatch.setattr(typer.main, "get_command", lambda app: built.append(app) or build(app))
    cli_main._command.cache_clear()
    assert run_cli("--help").returncode == 0
    assert run_cli("import", "--help").returncode == 0
    assert built == [cli_main.app]
