"""Start-up stays light: `trajreview --help` loads no database, Arrow, pydantic or UI library, and a whole
`import wav-run` (scored in the process, so everything the workers do is done here) never loads nltk,
plotly, streamlit or pandas, and a scoring worker loads neither pandas nor DuckDB. Checked on `sys.modules`
of a fresh process at exit (of the worker, after it parsed a trace)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from core.paths import REPO_ROOT

NEVER_IN_AN_IMPORT = {"nltk", "plotly", "streamlit", "scipy", "openai"}
NOT_FOR_HELP = NEVER_IN_AN_IMPORT | {
    "duckdb",
    "pyarrow",
    "pandas",
    "numpy",
    "pydantic",
    "webarena_verified",
    "rapidfuzz",
    "rich",  # typer prints the help itself (rich_markup_mode=None); the consoles are built on first use
}


def _modules_at_exit(
    args: list[str], env: dict[str, str] | None = None, *, top_level: bool = True
) -> tuple[int, set[str]]:
    """Run `trajreview ARGS` in a fresh interpreter; its exit code and the modules loaded at exit (their
    top-level packages, or every module's full name)."""
    code = (
        "import atexit, json, sys\n"
        "atexit.register(lambda: print('MODULES' + json.dumps(sorted(sys.modules))))\n"
        f"sys.argv = ['trajreview', *{args!r}]\n"
        "from core.cli.main import main\n"
        "main()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT,
                         env={**os.environ, **(env or {})}, timeout=300)  # fmt: skip
    line = next(line for line in out.stdout.splitlines() if line.startswith("MODULES"))
    names = json.loads(line.removeprefix("MODULES"))
    return out.returncode, {name.split(".")[0] for name in names} if top_level else set(names)


def test_help_loads_no_heavy_module():
    code, modules = _modules_at_exit(["--help"])
    assert code == 0
    assert "typer" in modules  # the probe sees what was loaded
    assert modules & NOT_FOR_HELP == set()


def test_a_scored_wav_import_never_loads_nltk_plotly_or_streamlit(shared_data: Path, tmp_path: Path):
    wav = shared_data / "webarena-verified"
    db = tmp_path / "startup.duckdb"
    args = ["--db", str(db), "import", "wav-run", str(wav / "demo-run"), "--run", "demo",
            "--config", str(wav / "config.demo.json"), "--workers", "1"]  # fmt: skip
    code, loaded = _modules_at_exit(args, top_level=False)
    modules = {name.split(".")[0] for name in loaded}
    assert code == 0
    assert {"webarena_verified", "duckdb", "pyarrow"} <= modules  # it did import, parse and score here
    assert modules & NEVER_IN_AN_IMPORT == set()
    # pyarrow's first conversion of Python values imported pandas (0.5-1 s, 35 MB) only to look for its types
    assert "pandas" not in modules
    # Nor what only other importers or the pages need: imported after the workers, in the write, they
    # cost a small import 30-40 ms (the offline evaluators, the overview's queries for a listing the
    # import makes from its own scores).
    assert {"core.scoring.offline.run", "core.queries.overview"} & loaded == set()
    assert "core.ingest.writer" in loaded  # the probe sees the write path


def parse_and_list_modules(har: str) -> list[str]:
    """In a worker: parse a trace into rows (Arrow conversions of Python values), then list what is loaded."""
    from core.files.har import parse_trace

    assert parse_trace(Path(har), "r", 1).events.num_rows > 0
    return sorted({m.split(".")[0] for m in sys.modules})


def test_a_scoring_worker_loads_neither_pandas_nor_duckdb(shared_data: Path):
    har = shared_data / "webarena-verified" / "demo-run" / "107" / "network.har"
    code = (
        "import json\n"
        "from core.files.parallel import SCORING_MODULES, WorkerPool, arrow_without_pandas\n"
        f"from tests.test_startup import {parse_and_list_modules.__name__} as probe\n"
        "with WorkerPool(2, preload=SCORING_MODULES, initializer=arrow_without_pandas) as pool:\n"
        "    assert pool.executor is not None\n"
        f"    print('MODULES' + json.dumps(pool.call(probe, {str(har)!r})))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, timeout=300
    )
    line = next(line for line in out.stdout.splitlines() if line.startswith("MODULES"))
    modules = set(json.loads(line.removeprefix("MODULES")))
    assert {"webarena_verified", "pyarrow"} <= modules  # the fork server's preload, inherited
    assert modules & {"pandas", "duckdb"} == set()
