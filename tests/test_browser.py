"""The dashboard in a real browser (Debian chromium through Playwright), served as a user runs it.

Also checks the two-process case of the DuckDB lock: the CLI writes to the file the running dashboard
reads, and neither side fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from browser_support import chromium_available, serve

pytestmark = pytest.mark.browser

if not chromium_available():
    if os.environ.get("CI"):
        raise RuntimeError("chromium is missing in CI: .ci/run must install Debian's chromium")
    pytest.skip("Debian chromium not installed (apt-get install chromium)", allow_module_level=True)


@pytest.fixture
def served(tasks_db, tmp_path):
    """The app served over a copy of the tasks database named by TRAJREVIEW_DB, as a user who exports it runs
    `trajreview serve`."""
    db = tmp_path / "served.duckdb"
    shutil.copy(tasks_db, db)
    with serve(None, env={"TRAJREVIEW_DB": str(db)}) as url:
        yield url, db


def _wait_rendered(page) -> None:
    page.wait_for_selector("h1", timeout=60_000)
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=60_000
    )


def test_runs_page_in_chromium_while_cli_writes(browser_page, served, tmp_path):
    url, db = served
    with browser_page(1400, 1000) as page:
        page.goto(url)
        _wait_rendered(page)
        assert page.locator("h1").first.inner_text().strip() == "Runs"
        page.get_by_text("No runs imported yet").first.wait_for(timeout=30_000)
        assert page.get_by_text("Page not found").count() == 0
        page.screenshot(path=str(tmp_path / "overview.png"), full_page=True)

        # A second process writes to the same file while the dashboard serves it.
        env = {k: v for k, v in os.environ.items() if k != "TRAJREVIEW_DB"}
        write = subprocess.run(
            [sys.executable, "-m", "core.cli.start", "--db", str(db), "import", "tasks", "--original"],
            capture_output=True, text=True, env=env, timeout=120,
        )  # fmt: skip
        assert write.returncode == 0, write.stderr

        page.reload()
        _wait_rendered(page)
        page.get_by_text("No runs imported yet").first.wait_for(timeout=30_000)
        assert page.locator("[data-testid='stException']").count() == 0
