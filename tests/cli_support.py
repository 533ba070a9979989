"""`trajreview ARGS` run in this process, for the tests of what a command prints, exits with and writes.

The command line's own `main()` (core.cli.main: its one-line errors and exit code 2) runs with the test's
argv, its output captured; the result reads like a finished subprocess. About a second cheaper per call
than a process, which imports the engine and the command line anew. Tests whose subject is the process
itself (the console script's entry point, its early fork server and ending, signals, start-up imports)
run `python -m core.cli.start` instead: tests/test_cli.py, test_cli_start.py, test_signals.py,
test_startup.py.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout


def run_cli(*args: str, db=None, check: bool = False) -> subprocess.CompletedProcess:
    """`trajreview [--db DB] ARGS` in this process, TRAJREVIEW_DB unset as in the tests' subprocesses:
    (exit code, stdout, stderr) as a CompletedProcess; `check` raises on a non-zero exit like
    subprocess.run. A command that raises anything but SystemExit fails the test with its traceback."""
    from core.cli.main import main

    argv = [*(["--db", str(db)] if db is not None else []), *args]
    out, err = io.StringIO(), io.StringIO()
    saved_argv, saved_db = sys.argv, os.environ.pop("TRAJREVIEW_DB", None)
    previous = signal.getsignal(signal.SIGTERM)  # main() installs its own
    sys.argv = ["trajreview", *argv]
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                main()
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.argv = saved_argv
        signal.signal(signal.SIGTERM, previous)
        if saved_db is not None:
            os.environ["TRAJREVIEW_DB"] = saved_db
    result = subprocess.CompletedProcess(["trajreview", *argv], code, out.getvalue(), err.getvalue())
    if check:
        result.check_returncode()
    return result
