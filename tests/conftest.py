"""Shared fixtures. Real data comes from ../shared/data beside the repository; a missing copy fails loudly."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.paths import REPO_ROOT, shared_data_dir
from core.store import Store


@pytest.fixture(scope="session")
def shared_data() -> Path:
    return shared_data_dir()  # raises FileNotFoundError with a clear message when absent


@pytest.fixture
def store(tmp_path: Path):
    with Store(tmp_path / "test.duckdb") as s:
        yield s


@pytest.fixture(scope="session")
def tasks_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database with both task datasets loaded, built once per session; copy it before writing."""
    from core.datasets import import_tasks

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
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo database (every real source the demo imports, metrics included), built once per session;
    copy it before writing."""
    from core.demo import build_demo

    path = tmp_path_factory.mktemp("demo") / "demo.duckdb"
    build_demo(path)
    return path
