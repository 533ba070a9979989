"""Processes end cleanly: SIGINT or SIGTERM to a command that starts children (`serve` and `demo` start
the Streamlit server; imports with `--workers` start worker processes) stops them within 5 s and leaves
no process behind. Real signals to real processes; the process tree is read from /proc afterwards."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from browser_support import free_port

from core.paths import REPO_ROOT

STOP_WITHIN_S = 5.0
pytestmark = [pytest.mark.slow, pytest.mark.server]


def _session(sid: int) -> list[int]:
    """Every live process of session `sid` (the command and everything it started)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if int(fields[3]) == sid and fields[0] != "Z":  # fields: state, ppid, pgrp, session, ...
            found.append(int(entry.name))
    return found


def _as_from_a_terminal() -> None:
    """In the child before exec: SIGINT back to its default. A shell starts background jobs (a CI script
    run with `&`, nohup) with SIGINT ignored and children inherit that, so Python would install no
    KeyboardInterrupt handler and the test would measure the harness, not the command."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start(args: list[str]) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    env.pop("TRAJREVIEW_DB", None)
    # A session of its own: what it leaves behind is found by session id, and cleaned up whatever happens.
    return subprocess.Popen(
        [sys.executable, "-m", "core.cli.start", *args], env=env, cwd=REPO_ROOT, start_new_session=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_as_from_a_terminal,
    )  # fmt: skip


def _wait_until(condition, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.1)


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def _stop(proc: subprocess.Popen, send) -> tuple[float, list[int], str]:
    """Send the signal; (seconds until the command and all its processes were gone, leftovers, stderr)."""
    sent = time.monotonic()
    send()
    try:
        proc.wait(timeout=30)
        _wait_until(lambda: not _session(proc.pid), 30, "processes left")
    except (subprocess.TimeoutExpired, TimeoutError):
        pass
    took, left = time.monotonic() - sent, _session(proc.pid)
    for pid in left:  # never leave anything running, whatever the test found
        os.kill(pid, signal.SIGKILL)
    if proc.poll() is None:
        proc.kill()
    return took, left, proc.communicate()[1]


@pytest.fixture
def demo_copy(demo_db: Path, tmp_path: Path) -> Path:
    path = tmp_path / "demo.duckdb"
    shutil.copy(demo_db, path)
    return path


@pytest.mark.parametrize(
    "command, how",
    [
        ("serve", "SIGTERM"),  # `kill PID`, a service manager
        ("serve", "SIGINT"),  # SIGINT to the command alone
        ("serve", "Ctrl-C"),  # a terminal's Ctrl-C: SIGINT to the whole process group
        ("demo", "SIGTERM"),
    ],
)
def test_a_signal_stops_the_streamlit_server(command, how, demo_copy):
    port = free_port()
    proc = _start(["--db", str(demo_copy), command, "--port", str(port)])
    try:
        _wait_until(lambda: _healthy(port) or proc.poll() is not None, 120, "the dashboard never answered")
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        assert len(_session(proc.pid)) >= 2  # the command and its Streamlit server
        if how == "Ctrl-C":
            send = lambda: os.killpg(proc.pid, signal.SIGINT)  # noqa: E731
        else:
            send = lambda: os.kill(proc.pid, getattr(signal, how))  # noqa: E731
        took, left, err = _stop(proc, send)
    finally:
        for pid in _session(proc.pid):
            os.kill(pid, signal.SIGKILL)
    assert left == [] and took < STOP_WITHIN_S, f"{left} still running {took:.1f} s after {how}"
    assert not _healthy(port)
    assert "Traceback" not in err, err[-2000:]


def test_a_server_that_ignores_sigterm_is_killed_after_the_grace_period(tmp_path):
    """The path a stuck Streamlit server takes: the child ignores SIGTERM, the command kills it."""
    from core.cli import main

    script = tmp_path / "parent.py"
    script.write_text(
        "import signal, sys\n"
        "from core.cli import main\n"
        "signal.signal(signal.SIGTERM, main._terminated)\n"
        "child = [sys.executable, '-c', 'import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN);"
        ' print("ready", flush=True); time.sleep(120)\']\n'
        "try:\n"
        "    main.run_child(child, env=None, cwd='.')\n"
        "except KeyboardInterrupt:\n"
        "    sys.exit(130)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.Popen([sys.executable, str(script)], env=env, cwd=REPO_ROOT, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert proc.stdout.readline().strip() == "ready"
        took, left, err = _stop(proc, lambda: os.kill(proc.pid, signal.SIGTERM))
    finally:
        for pid in _session(proc.pid):
            os.kill(pid, signal.SIGKILL)
    assert left == [] and proc.returncode == 130, err
    assert main.CHILD_GRACE_S <= took < STOP_WITHIN_S


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT"])
def test_a_signal_stops_an_import_and_its_worker_processes(how, tasks_db, shared_data, tmp_path):
    db = tmp_path / "w.duckdb"
    shutil.copy(tasks_db, db)
    proc = _start(["--db", str(db), "import", "agentlab", str(shared_data / "browsergym-run"), "--run", "stopped",
                   "--workers", "2"])  # fmt: skip
    try:
        # Both workers are up (the command and two spawned workers, plus multiprocessing's helper).
        _wait_until(lambda: len(_session(proc.pid)) >= 3 or proc.poll() is not None, 120, "no worker started")
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        took, left, err = _stop(proc, lambda: os.kill(proc.pid, getattr(signal, how)))
    finally:
        for pid in _session(proc.pid):
            os.kill(pid, signal.SIGKILL)
    assert left == [] and took < STOP_WITHIN_S, f"{left} still running {took:.1f} s after {how}"
    assert proc.returncode != 0 and "Traceback" not in err, err[-2000:]
    from core.store import Store

    with Store(db, read_only=True) as store:  # nothing of the stopped import landed
        assert store.query("SELECT count(*) FROM runs WHERE name = 'stopped'")[0][0] == 0


def test_the_docs_give_the_grace_period_the_command_waits(repo_root):
    from core.cli import main

    text = " ".join((repo_root / "docs" / "architecture.md").read_text(encoding="utf-8").split())
    assert f"SIGKILL after {main.CHILD_GRACE_S:g} s" in text
