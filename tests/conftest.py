"""Shared fixtures. Real data comes from two roots with the same layout: the demo set shipped in data/demo
(always there: `shipped_data`, `demo_db`) and ../shared/data beside the repository (`shared_data`,
`full_demo_db`: whole runs and files we may not redistribute), which a clone on its own lacks; tests that
need it skip there, saying why. With TRAJREVIEW_NO_SKIPS=1 (set by .ci/run, which has ../shared) any
skipped test fails the run."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from build_cache import built_db

from core.paths import REPO_ROOT, SHIPPED_DATA, has_shared_data, shared_data_path
from core.store import Store

NO_SKIPS = "TRAJREVIEW_NO_SKIPS"
# The app's pre-warm reads the database behind a test's back (a thread, in AppTest and in served apps):
# off for every test but tests/test_prewarm.py, which starts its warmers itself.
os.environ["TRAJREVIEW_PREWARM"] = "0"


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


# Tiers (docs/testing.md): `make check` runs the tests that carry none of these marks. `whole_run`,
# `browser` and `pages` are given here from what a test uses, so no test can need ../shared/data, a
# browser or a Streamlit page run and still land in the quick tier; `server` and `slow` are written on
# the tests themselves.
TIER_MARKS = ("whole_run", "browser", "pages", "server", "slow")
BROWSER_FIXTURES = frozenset({"chromium", "browser_page", "app_view"})
PAGE_FIXTURES = frozenset({"open_page", "gold_tab"})


def runs_pages(item: pytest.Item) -> bool:
    """Whether a test runs dashboard pages through Streamlit's AppTest (a fixture, or its module's own)."""
    module = getattr(item, "module", None)
    return bool(set(getattr(item, "fixturenames", ())) & PAGE_FIXTURES) or hasattr(module, "AppTest")


# The slowest test files, slowest first (sum of their tests' times in three warm `make test` runs, stop 40,
# docs/testing.md): collected first, so pytest-xdist (`--no-loadscope-reorder` keeps this order) starts them
# first and the suite ends on short files, not on one worker finishing a long one while the other waits.
SLOWEST_FIRST = (
    "test_lock_hold.py", "test_hostile.py", "test_browser_review.py", "test_browser_read_cleanly.py",
    "test_scoring_conformance.py", "test_concurrent_saves.py", "test_wav_import.py", "test_browser_causes.py",
    "test_browser_gold.py", "test_official_engine.py", "test_alignment_store.py", "test_browser_oidc.py",
    "test_safe_pickle.py", "test_causes.py", "test_browser_search.py", "test_cli.py",
    "test_browser_presenting.py", "test_dashboard_gold.py", "test_cli_start.py", "test_agentlab_import.py",
)  # fmt: skip


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: each file keeps its order
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if "shared_data" in fixtures:
            item.add_marker(pytest.mark.whole_run)
        if fixtures & BROWSER_FIXTURES:
            item.add_marker(pytest.mark.browser)
        if runs_pages(item):
            item.add_marker(pytest.mark.pages)


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("pages"):
        scan_component_packages_once()


def scan_component_packages_once() -> None:
    """Every new AppTest scans the METADATA of every installed distribution for Streamlit components
    (about 0.7 s a page test, slower as a session goes on: 35 s of 90 in three page modules, profiled).
    Nothing is installed while tests run, so one scan per process answers for all."""
    from functools import cache

    from streamlit.components.v2 import manifest_scanner

    if not hasattr(manifest_scanner.scan_component_manifests, "cache_info"):
        manifest_scanner.scan_component_manifests = cache(manifest_scanner.scan_component_manifests)


@pytest.fixture
def store(tmp_path: Path):
    with Store(tmp_path / "test.duckdb") as s:
        yield s


@pytest.fixture(scope="session")
def tasks_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database with both task datasets loaded, built once; copy it before writing."""

    def build(path: Path) -> None:
        from core.ingest.tasks import import_tasks

        with Store(path) as s:
            import_tasks(s, original=True)

    return built_db(tmp_path_factory, "tasks", build)


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
    root = shared_data / "webarena-render" / "babelcloud__webarena" / "gbox" / "trajectories"
    xlsx = shared_data / "human-gold" / "Golden Human Trajectories.xlsx"

    def build(path: Path) -> None:
        import shutil

        from core.ingest.gold import import_gold
        from core.ingest.webarena_render import import_webarena_render
        from core.measure.judge.cascade import make_judge
        from core.measure.metrics_run import run_metrics

        shutil.copy(tasks_db, path)
        with Store(path) as store:
            import_webarena_render(store, root, "babelcloud")
            import_gold(store, xlsx, "gold")
            run_metrics(store, "babelcloud", "gold", make_judge("offline", store, use_embeddings=False))

    return built_db(tmp_path_factory, "babelcloud", build, (root, xlsx))


@pytest.fixture(scope="session")
def paper_gold_db(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The paper's human gold (xlsx) imported as gold set `paper-gold` (author `paper`), nothing else;
    copy it before writing."""
    xlsx = shared_data / "human-gold" / "Golden Human Trajectories.xlsx"

    def build(path: Path) -> None:
        from core.ingest.gold import import_gold

        with Store(path) as store:
            import_gold(store, xlsx, "paper-gold", author="paper")

    return built_db(tmp_path_factory, "paper-gold", build, (xlsx,), "gold.duckdb")


@pytest.fixture(scope="session")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo database built from the shipped set (the same everywhere, metrics against demo-gold
    included), built once; copy it before writing."""

    def build(path: Path) -> None:
        from core.cli.demo import build_diagnosed_demo

        build_diagnosed_demo(path, source="shipped")

    return built_db(tmp_path_factory, "demo", build, (SHIPPED_DATA,), "demo.duckdb")


@pytest.fixture(scope="session")
def full_demo_db(tmp_path_factory: pytest.TempPathFactory, shared_data: Path) -> Path:
    """The demo database built from ../shared/data (the whole runs, the AgentLab sample, the paper's gold);
    skips where it is absent. Copy it before writing."""

    def build(path: Path) -> None:
        from core.cli.demo import build_diagnosed_demo

        build_diagnosed_demo(path, source="shared")

    return built_db(tmp_path_factory, "full-demo", build, (shared_data, SHIPPED_DATA), "demo.duckdb")


class SharedChromium:
    """The browser the browser tests of one module share, started by the first test that asks for it and
    closed as soon as the next test does not use it or belongs to another module: Playwright's sync API
    leaves its event loop set on the thread while the browser lives, where any other `asyncio.run` (AppTest,
    a local OpenID provider, a module fixture's model client) would fail. A module's pages share one
    browser context, so the app's scripts are fetched and compiled once per module (about 0.6 s of each
    page's first load); a test using `browser_page` gets a new page, and so a new Streamlit session opened
    cold from its URL; the read-only tests using `app_view` share one page (`kept_page`)."""

    def __init__(self) -> None:
        self._launched = None
        self.browser = None
        self._context = None
        self._context_owner: str | None = None
        self._kept = None

    def get(self):
        if self.browser is None:
            from browser_support import launched_chromium

            self._launched = launched_chromium()
            self.browser = self._launched.__enter__()
        return self.browser

    @contextmanager
    def page(self, owner: str, width: int = 1500, height: int = 1100) -> Iterator:
        """A new page of `owner`'s context (a module's), `width` x `height`, closed after."""
        page = self.page_context(owner).new_page()
        page.set_viewport_size({"width": width, "height": height})
        try:
            yield page
        finally:
            page.close()

    def kept_page(self, owner: str, width: int = 1500, height: int = 1100, init_script: str | None = None):
        """The page `owner`'s tests that only read share: kept open across them (closed with the module's
        context), so each goes to its URL inside the app (`browser_support.show`) instead of starting the
        app again. `init_script` runs in it before the app's own scripts."""
        self.page_context(owner)
        if self._kept is None or self._kept.is_closed():
            self._kept = self._context.new_page()
            if init_script:
                self._kept.add_init_script(init_script)
        self._kept.set_viewport_size({"width": width, "height": height})
        return self._kept

    def page_context(self, owner: str):
        browser = self.get()
        if self._context_owner != owner:
            if self._context is not None:
                self._context.close()
            self._context, self._context_owner, self._kept = browser.new_context(), owner, None
        return self._context

    def close(self) -> None:
        if self._launched is not None:
            launched, self._launched, self.browser = self._launched, None, None
            self._context = self._context_owner = self._kept = None  # closed with the browser
            launched.__exit__(None, None, None)


SHARED_CHROMIUM = pytest.StashKey[SharedChromium]()


def _shared_chromium(config: pytest.Config) -> SharedChromium:
    return config.stash.setdefault(SHARED_CHROMIUM, SharedChromium())


@pytest.fixture
def chromium(request: pytest.FixtureRequest):
    """The shared Debian chromium (starting one costs about a second)."""
    return _shared_chromium(request.config).get()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None):
    result = yield  # the test's own fixtures (its pages and contexts) are closed by now
    shared = item.config.stash.get(SHARED_CHROMIUM, None)
    if shared is not None and (
        nextitem is None
        or "chromium" not in getattr(nextitem, "fixturenames", ())
        or nextitem.module is not item.module  # the next module's fixtures may run an event loop of their own
    ):
        shared.close()
    return result


@pytest.fixture
def browser_page(request: pytest.FixtureRequest, chromium):
    """`with browser_page(width, height) as page:` a new page of the shared browser, in the context this
    test module's pages share."""
    from functools import partial

    return partial(_shared_chromium(request.config).page, request.node.module.__name__)


@pytest.fixture
def app_view(request: pytest.FixtureRequest, chromium):
    """`app_view(url, width, height, init_script=None, before=None)`: the page this test module's read-only
    tests share, showing `url` once its page run has finished and it is drawn. The module's first view
    opens the app cold; the next go to their URLs inside the app, in the same browser session, as a
    reviewer following links does (opening cold from a URL is what the tests using `browser_page` do, and
    `test_browser_review.py::test_every_view_opens_cold_from_its_url`)."""
    from browser_support import show

    shared = _shared_chromium(request.config)

    def _view(url: str, width: int = 1500, height: int = 1100, init_script: str | None = None,
              before: str | None = None):  # fmt: skip
        page = shared.kept_page(request.node.module.__name__, width, height, init_script)
        show(page, url, before)
        return page

    return _view


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
