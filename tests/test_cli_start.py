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


def test_a_wav_import_starts_the_fork_server_before_the_command_line(shared_data: Path, tmp_path: Path):
    wav = shared_data / "webarena-verified"
    code = (
        "import sys, multiprocessing.forkserver as fs\n"
        "started = fs.ensure_running\n"
        "def probe():\n"
        "    print('SERVER typer loaded:', 'typer' in sys.modules, flush=True)\n"
        "    fs.ensure_running = started\n"
        "    started()\n"
        "fs.ensure_running = probe\n"
        f"sys.argv = ['trajreview', '--db', {str(tmp_path / 'x.duckdb')!r}, 'import', 'wav-run',\n"
        f"            {str(wav / 'demo-run')!r}, '--run', 'demo', '--config', {str(wav / 'config.demo.json')!r}]\n"
        "from core.cli.start import main\n"
        "main()\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, timeout=300
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == "SERVER typer loaded: False"
    assert "run demo:" in out.stdout  # the import ran and scored


def loaded_in_worker(module: str) -> bool:
    return module in sys.modules


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
