"""Shared fixtures. Real data comes from two roots with the same layout: the demo set shipped in data/demo
(always there: `shipped_data`, `demo_db`) and ../shared/data beside the repository (`shared_data`,
`full_demo_db`: whole runs and files we may not redistribute), which a clone on its own lacks; tests that
need it skip there, saying why. With TRAJREVIEW_NO_SKIPS=1 (set by .ci/run, which has ../shared) any
skipped test fails the run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from core.paths import REPO_ROOT, SHIPPED_DATA, has_shared_data, shared_data_path
from core.store import Store

NO_SKIPS = "TRAJREVIEW_NO_SKIPS"


@pytest.fixture(scope="session")
def shipped_data() -> Path:
    """The demo set shipped in the repository (slices of the Apache-2.0 runs, our gold)."""
    return SHIPPED_DATA


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data: whole runs and unlicensed files; the test skips, saying why, where it is absent."""
    if not has_shared_data():
        pytest.skip(f"needs the whole runs in ../shared/data (absent at {shared_data_path()})")
    return shared_data_path()


def _skipped_fails_the_run(config: pytest.Config) -> list:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter else []
    return skipped if os.environ.get(NO_SKIPS) == "1" else []


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    if skipped := _skipped_fails_the_run(config):
        terminalreporter.write_line(f"{NO_SKIPS}=1: {len(skipped)} skipped tests fail this run", red=True)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """TRAJREVIEW_NO_SKIPS=1: a skipped test is a failure (CI has every input and every extra it tests)."""
    if _skipped_fails_the_run(session.config) and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture
def store(tmp_path: Path):
    with Store(tmp_path / "test.duckdb") as s:
        yield s


@pytest.fixture(scope="session")
def tasks_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database with both task datasets loaded, built once per session; copy it before writing."""
    from core.ingest.tasks import import_tasks

    path = tmp_path_factory.mktemp("tasks") / "tasks.duckdb"
    with Store(path) as s:
        import_tasks(s, original=True)
    return path


@pytest.fixture
def tasks_store(tasks_db: Path, tmp_path: Path):
    """A writable copy of the tasks database."""
    import shutil

    path = tmp_path / "tasks.duckdb"
    shutil.copy(tasks_db, path)
    with Store(path) as s:
        yield s


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def babelcloud_db(tasks_db: Path, shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The whole babelcloud render run (812 tasks, its tool calls as steps) with the paper's human gold
    and its metrics against that gold (offline judge, default preset), built once per session; copy it
    before writing."""
    import shutil

    from core.ingest.gold import import_gold
    from core.ingest.webarena_render import import_webarena_render
    from core.measure.judge.cascade import make_judge
    from core.measure.metrics_run import run_metrics

    path = tmp_path_factory.mktemp("babelcloud") / "babelcloud.duckdb"
    shutil.copy(tasks_db, path)
    with Store(path) as store:
        root = shared_data / "webarena-render" / "babelcloud__webarena" / "gbox" / "trajectories"
        import_webarena_render(store, root, "babelcloud")
        import_gold(store, shared_data / "human-gold" / "Golden Human Trajectories.xlsx", "gold")
        run_metrics(store, "babelcloud", "gold", make_judge("offline", store, use_embeddings=False))
    return path


@pytest.fixture(scope="session")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo database built from the shipped set (the same everywhere, metrics against demo-gold
    included), built once per session; copy it before writing."""
    from core.cli.demo import build_diagnosed_demo

    path = tmp_path_factory.mktemp("demo") / "demo.duckdb"
    build_diagnosed_demo(path, source="shipped")
    return path


@pytest.fixture(scope="session")
def full_demo_db(tmp_path_factory: pytest.TempPathFactory, shared_data: Path) -> Path:
    """The demo database built from ../shared/data (the whole runs, the AgentLab sample, the paper's gold);
    skips where it is absent. Copy it before writing."""
    from core.cli.demo import build_diagnosed_demo

    path = tmp_path_factory.mktemp("full-demo") / "demo.duckdb"
    build_diagnosed_demo(path, source="shared")
    return path


@pytest.fixture
def open_page(monkeypatch):
    """Open one page of the app through AppTest on a database: `open_page(db, "views/task.py",
    name="Ada", read_only=False, run=..., task=...)`; the page must run without an exception."""
    from apptest_support import APP, NAME_KEY
    from streamlit.testing.v1 import AppTest

    def _open(
        db_path, page: str | None = None, *, name: str | None = None, read_only: bool = False, **params
    ):
        monkeypatch.setenv("TRAJREVIEW_DB", str(db_path))
        if read_only:
            monkeypatch.setenv("TRAJREVIEW_READ_ONLY", "1")
        else:
            monkeypatch.delenv("TRAJREVIEW_READ_ONLY", raising=False)
        at = AppTest.from_file(APP, default_timeout=120)
        if page:
            at.switch_page(page)
        for key, value in params.items():
            at.query_params[key] = value
        if name:
            at.session_state[NAME_KEY] = name
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        return at

    return _open
