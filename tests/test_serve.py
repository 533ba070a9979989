"""`trajreview serve`: this machine only unless --host says otherwise; --read-only serves a presenting
instance (the app gets TRAJREVIEW_READ_ONLY and opens the file read-only)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from core.cli import main
from core.store import Store


@pytest.fixture
def launched(monkeypatch):
    calls = []

    def fake_run(cmd, env, cwd):
        calls.append({"cmd": cmd, "env": env})
        return 0

    monkeypatch.setattr(main, "run_child", fake_run)
    monkeypatch.setenv("TRAJREVIEW_READ_ONLY", "1")  # a stale value in the shell must not leak into serve
    return calls


def _option(cmd: list[str], name: str) -> str:
    return cmd[cmd.index(name) + 1]


def test_serve_binds_localhost_unless_told(launched, tmp_path):
    db = tmp_path / "s.duckdb"
    runner = CliRunner()
    assert runner.invoke(main.app, ["--db", str(db), "serve"]).exit_code == 0
    assert (
        runner.invoke(main.app, ["--db", str(db), "serve", "--host", "0.0.0.0", "--port", "9000"]).exit_code
        == 0
    )
    first, second = launched
    assert _option(first["cmd"], "--server.address") == "127.0.0.1"
    assert (_option(second["cmd"], "--server.address"), _option(second["cmd"], "--server.port")) == (
        "0.0.0.0",
        "9000",
    )
    assert first["env"]["TRAJREVIEW_DB"] == str(db) and "TRAJREVIEW_READ_ONLY" not in first["env"]


def test_serve_read_only(launched, tmp_path):
    db = tmp_path / "ro.duckdb"
    runner = CliRunner()
    missing = runner.invoke(main.app, ["--db", str(db), "serve", "--read-only"])
    assert missing.exit_code != 0 and not db.exists()  # a presenting instance never creates a database
    Store(db).close()
    result = runner.invoke(main.app, ["--db", str(db), "serve", "--read-only"])
    assert result.exit_code == 0, result.output
    assert launched[-1]["env"]["TRAJREVIEW_READ_ONLY"] == "1"
    assert "read-only" in result.output
