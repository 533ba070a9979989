"""Who writes, in a real browser: with Streamlit's OIDC login configured (secrets.toml [auth]) against a
real local OpenID Connect provider (oidc-provider-mock, started here), the reviewer logs in and every
write carries the logged-in user's name; without a login, nothing can be written. And a presenting
instance (`serve --read-only`) shows no write control."""

from __future__ import annotations

import importlib.util
import os
import shutil

import oidc_provider_mock
import pytest
from browser_support import browser_page, chromium_available, free_port, serve, wait_idle

from core.store import Store

pytestmark = pytest.mark.browser

if not chromium_available():
    if os.environ.get("CI"):
        raise RuntimeError("chromium is missing in CI: .ci/run must install Debian's chromium")
    pytest.skip("Debian chromium not installed (apt-get install chromium)", allow_module_level=True)

# Streamlit's st.login imports Authlib (dev extra): missing, this fails here rather than skip.
assert importlib.util.find_spec("authlib"), "Authlib is missing: pip install -e '.[dev]'"


def test_oidc_login_names_the_writer(demo_db, tmp_path):
    # A browser of its own, started after the provider: the provider's server runs asyncio, which cannot
    # start beside a living Playwright browser on this thread (conftest's SharedChromium).
    db = tmp_path / "oidc.duckdb"
    shutil.copy(demo_db, db)
    ada = oidc_provider_mock.User(sub="ada", claims={"name": "Ada Reviewer", "email": "ada@example.org"})
    with oidc_provider_mock.run_server_in_thread(port=0, user_claims=[ada]) as provider:
        port = free_port()
        # Streamlit reads [auth] from the secrets files; STREAMLIT_SECRETS_FILES points it at this one.
        secrets = tmp_path / "secrets.toml"
        secrets.write_text(
            "[auth]\n"
            f'redirect_uri = "http://127.0.0.1:{port}/oauth2callback"\n'
            f'cookie_secret = "{"c" * 40}"\n'
            'client_id = "trajreview-test"\nclient_secret = "test-secret"\n'
            f'server_metadata_url = "http://localhost:{provider.server_port}/.well-known/openid-configuration"\n',
            encoding="utf-8",
        )
        env = {"STREAMLIT_SECRETS_FILES": str(secrets)}
        with serve(db, port=port, env=env) as url, browser_page() as page:
            page.goto(f"{url}/judge")
            wait_idle(page)
            sidebar = page.locator("[data-testid='stSidebar']")
            # Not logged in: the write controls wait for a login, no name field is offered instead.
            assert page.get_by_role("button", name="Add label").is_disabled()
            assert page.get_by_label("Your name (goes on every save)").count() == 0
            sidebar.get_by_role("button", name="Log in to write").click()
            page.wait_for_url(f"**localhost:{provider.server_port}/**", timeout=30_000)
            page.get_by_role("button", name="ada").click()  # the provider's predefined user
            page.wait_for_url(f"{url}/**", timeout=30_000)
            wait_idle(page)
            sidebar.get_by_text("Writing as").wait_for(timeout=30_000)
            assert "Ada Reviewer" in sidebar.inner_text()

            page.goto(f"{url}/judge")
            wait_idle(page)
            page.get_by_label("New label (or a retired one to bring back)").fill("login expired")
            page.get_by_role("button", name="Add label").click()
            wait_idle(page)
            page.screenshot(path=str(tmp_path / "oidc-judge.png"))
    with Store(db, read_only=True) as s:
        rows = s.query("SELECT label, author FROM label_vocabulary WHERE label = 'login expired'")
    assert rows == [("login expired", "Ada Reviewer")]


def test_read_only_instance_in_chromium(browser_page, demo_db, tmp_path):
    db = tmp_path / "ro.duckdb"
    shutil.copy(demo_db, db)
    with Store(db, read_only=True) as s:
        task = s.query("SELECT min(task_id) FROM metrics WHERE run = 'opagent' AND n_agent > n_gold")[0][0]
    with serve(db, "--read-only") as url, browser_page() as page:
        page.goto(f"{url}/task?run=opagent&task={task}&tab=Alignment")
        wait_idle(page)
        page.get_by_text("Check the judge").wait_for(timeout=60_000)
        assert page.get_by_role("button", name="Label / note").count() == 0
        assert page.get_by_role("textbox").count() == 0
        assert "Read-only instance" in page.locator("[data-testid='stSidebar']").inner_text()
        page.goto(f"{url}/judge")
        wait_idle(page)
        page.get_by_text("Label vocabulary").wait_for(timeout=60_000)
        assert page.get_by_role("button", name="Add label").count() == 0
        assert page.get_by_role("button", name="Retire").count() == 0
