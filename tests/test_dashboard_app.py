"""AppTest smoke tests of the dashboard against a real database."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from core.paths import REPO_ROOT

APP = str(REPO_ROOT / "dashboard" / "app.py")


@pytest.fixture
def app_on(monkeypatch):
    def _make(db_path):
        monkeypatch.setenv("TRAJREVIEW_DB", str(db_path))
        at = AppTest.from_file(APP, default_timeout=60)
        at.run()
        return at

    return _make


def test_overview_shows_tasks_per_site(app_on, tasks_db):
    at = app_on(tasks_db)
    assert not at.exception
    assert at.title[0].value == "Overview"
    assert at.metric[0].value == "812"
    table = at.dataframe[0].value
    assert int(table["tasks"].sum()) == 812
    assert set(table["site_key"]) >= {"shopping", "gitlab", "gitlab-reddit"}


def test_overview_on_empty_database_guides_user(app_on, tmp_path):
    from core.store import Store

    Store(tmp_path / "empty.duckdb").close()
    at = app_on(tmp_path / "empty.duckdb")
    assert not at.exception
    assert any("import tasks" in info.value for info in at.info)


def test_missing_database_shows_one_line_error(app_on, tmp_path):
    at = app_on(tmp_path / "missing.duckdb")
    assert not at.exception
    assert any("no such database" in e.value for e in at.error)
