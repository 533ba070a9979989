"""The `trajreview` entry point (core/cli/start.py): a command that scores in workers starts their fork
server before the command line is imported, and the workers (which run the program's script again) do
not import the command line."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from core.cli.start import starts_scoring_workers
from core.paths import REPO_ROOT
from core.store import Store


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["import", "wav-run", "RUN", "--run", "r"], True),
        (["--db", "x.duckdb", "import", "wav-run", "RUN", "--run", "r", "--workers", "3"], True),
        (["--db=x.duckdb", "evaluate", "--run", "r"], True),
        (["import", "wav-run", "RUN", "--run", "r", "--workers", "1"], False),
        (["import", "wav-run", "RUN", "--run", "r", "--workers=1"], False),
        (["import", "wav-run", "--help"], False),
        (["--help"], False),
        (["import", "tasks"], False),
        (["--db", "import", "serve"], False),  # `import` is the --db value here
        ([], False),
    ],
)
def test_which_commands_start_the_workers_early(args: list[str], expected: bool):
    assert starts_scoring_workers(args) is expected


def test_the_console_script_is_the_light_entry_point():
    scripts = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["trajreview"] == "core.cli.start:main"
    code = "import sys, core.cli.start; print(sorted(m for m in ('typer', 'duckdb', 'pyarrow') if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, check=True
    )
    assert out.stdout.strip() == "[]"


def _run_entry(args: list[str], probe: str = "") -> subprocess.CompletedProcess:
    """`trajreview ARGS` through the console script's entry point, in a fresh interpreter, with an exit
    handler registered before it (it prints TEARDOWN when the interpreter's own exit sequence reaches it)."""
    code = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('TEARDOWN', flush=True))\n"
        f"{probe}"
        f"sys.argv = ['trajreview', *{args!r}]\n"
        "from core.cli.start import main\n"
        "main()\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, timeout=300
    )


SERVER_PROBE = (
    "import multiprocessing.forkserver as fs\n"
    "started = fs.ensure_running\n"
    "def probe():\n"
    "    print('SERVER typer loaded:', 'typer' in sys.modules, flush=True)\n"
    "    fs.ensure_running = started\n"
    "    started()\n"
    "fs.ensure_running = probe\n"
)


def test_a_wav_import_starts_the_fork_server_first_and_ends_without_teardown(
    shared_data: Path, tmp_path: Path
):
    wav = shared_data / "webarena-verified"
    db = tmp_path / "x.duckdb"
    args = ["--db", str(db), "import", "wav-run", str(wav / "demo-run"), "--run", "demo",
            "--config", str(wav / "config.demo.json")]  # fmt: skip
    out = _run_entry(args, SERVER_PROBE)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "SERVER typer loaded: False"  # started before the command line was imported
    assert any(line.startswith("run demo:") for line in lines)  # its output flushed before the exit
    assert "TEARDOWN" not in lines  # left right after the handlers registered after its own
    assert out.stderr == ""  # no warning from the workers or the resource tracker
    with Store(db, read_only=True) as store:  # the import is whole in the file
        assert store.query("SELECT count(*) FROM evaluations WHERE run = 'demo'")[0][0] > 0

    # An error ends with its one line and exit code 2 through the ordinary exit; with one worker the
    # command is not pooled and the ordinary exit runs too.
    for _ in range(3):  # the workers are stopped while they start: no warning from the resource tracker
        failed = _run_entry(["--db", str(db), "import", "wav-run", str(tmp_path / "absent"), "--run", "x"])
        assert failed.returncode == 2 and failed.stderr.startswith("error: ")
        assert len(failed.stderr.splitlines()) == 1, failed.stderr
        assert "TEARDOWN" in failed.stdout.splitlines()
    one = _run_entry([*args, "--workers", "1"])
    assert one.returncode == 0, one.stderr
    assert "TEARDOWN" in one.stdout.splitlines()


def loaded_in_worker(module: str) -> bool:
    return module in sys.modules


@pytest.mark.slow
@pytest.mark.parametrize(("entry", "typer_in_workers"), [("core.cli.start", False), ("core.cli.main", True)])
def test_workers_do_not_import_the_command_line(tmp_path: Path, entry: str, typer_in_workers: bool):
    # multiprocessing runs the program's script again in each worker: a script shaped like the console
    # script, importing `entry`; with the old entry (core.cli.main) every worker imported typer.
    script = tmp_path / "trajreview_like.py"
    script.write_text(
        "import sys\n"
        f"from {entry} import main\n"
        "if __name__ == '__main__':\n"
        "    from core.files.parallel import SCORING_MODULES, WorkerPool\n"
        f"    from tests.test_cli_start import {loaded_in_worker.__name__} as probe\n"
        "    with WorkerPool(2, preload=SCORING_MODULES) as pool:\n"
        "        print('TYPER', pool.call(probe, 'typer'))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=REPO_ROOT, env=env,
                         timeout=300)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert f"TYPER {typer_in_workers}" in out.stdout.splitlines()


def test_the_tests_run_the_command_as_users_run_it():
    """A subprocess test of the command goes through the console script's entry point (`python -m
    core.cli.start`), never `python -m core.cli.main`, which skips its early fork server and its ending."""
    pattern = '"-m", "core.cli.' + 'main"'  # split, so this file does not match itself
    offenders = [
        str(path.relative_to(REPO_ROOT))
        for path in sorted((REPO_ROOT / "tests").rglob("*.py"))
        if pattern in path.read_text(encoding="utf-8")
    ]
    assert offenders == []
    assert '"-m", "core.cli.start"' in (REPO_ROOT / "tests" / "test_cli.py").read_text(encoding="utf-8")
