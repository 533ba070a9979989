"""Serving the dashboard and driving Debian's chromium through Playwright, for the browser tests and the
dashboard benchmark (never a downloaded browser)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run", "--disable-quic",
]  # fmt: skip


def chromium_available() -> bool:
    return Path(CHROMIUM).exists()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serve(
    db: Path | None, *extra_args: str, env: dict | None = None, port: int | None = None
) -> Iterator[str]:
    """`trajreview serve` on `port` (default: a free one) over `db` (None: the file TRAJREVIEW_DB in `env`
    names, as a user who exports it runs the app); yields the base URL, stops the server after."""
    port = port or free_port()
    database = ["--db", str(db)] if db is not None else []
    proc = subprocess.Popen(
        [sys.executable, "-m", "core.cli.start", *database, "serve", "--host", "127.0.0.1", "--port", str(port),
         *extra_args],
        env={**os.environ, **(env or {})}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                break
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                time.sleep(0.3)
        else:
            raise RuntimeError("dashboard did not start in 90 s")
        if proc.poll() is not None:
            raise RuntimeError(f"dashboard exited: {proc.stdout.read().decode(errors='replace')[-2000:]}")
        yield url
    finally:
        stop_group(proc)


def stop_group(proc: subprocess.Popen, grace_s: float = 10.0) -> None:
    """Stop a command started in a session of its own and everything it started: SIGTERM to the group,
    SIGKILL to whatever is left after `grace_s` (a server busy with a browser's session can outlive a
    SIGTERM), so no server is ever left running."""
    with suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    with suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace_s)
    with suppress(ProcessLookupError):  # the group outlives its leader when a child is still running
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def wait_idle(page, timeout_ms: int = 60_000) -> None:
    """Until Streamlit has finished the run the last action started (its status widget is gone)."""
    page.wait_for_selector("[data-testid='stAppViewContainer']", timeout=timeout_ms)
    page.wait_for_timeout(250)
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=timeout_ms
    )
    page.wait_for_timeout(150)


# True once the page has not changed for `quiet` ms and no script run is shown (a MutationObserver on the
# document records the last change; the first call installs it).
_SETTLED = """(quiet) => {
  if (document.querySelector('[data-testid="stStatusWidget"]')) return false;
  if (window.__lastChange === undefined) {
    window.__lastChange = performance.now();
    new MutationObserver(() => { window.__lastChange = performance.now(); })
      .observe(document.body, {subtree: true, childList: true, attributes: true, characterData: true});
    return false;
  }
  return performance.now() - window.__lastChange >= quiet;
}"""


def wait_settled(page, quiet_ms: int = 500, timeout_ms: int = 60_000) -> None:
    """Until the page has not changed for `quiet_ms` (charts drawn, tables laid out, a second script run
    that query parameters start finished): what a fixed pause guessed at, measured."""
    page.wait_for_function(_SETTLED, arg=quiet_ms, timeout=timeout_ms, polling=100)


# The app's page runs, as its websocket reports them: a run that ended to make way for another (a page
# switch, a rerun) is not counted.
_RUN_ENDED = {"FINISHED_SUCCESSFULLY", "FINISHED_WITH_COMPILE_ERROR"}


def watch_runs(page) -> None:
    """Count the script runs the served app finishes for `page` (its `script_finished` messages), so a test
    waits for the run a navigation started rather than for a pause: before the app's scripts have started,
    or while a slow page computes, the document can be quiet for longer than any pause guessed."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    ended = {ForwardMsg.ScriptFinishedStatus.Value(name) for name in _RUN_ENDED}
    page.runs_finished = 0

    def on_frame(payload) -> None:
        if isinstance(payload, str):
            return
        msg = ForwardMsg.FromString(payload)
        if msg.WhichOneof("type") == "script_finished" and msg.script_finished in ended:
            page.runs_finished += 1

    page.on("websocket", lambda ws: ws.on("framereceived", on_frame))


def wait_run(page, after: int, timeout_s: float = 90) -> None:
    """Until the app has finished a page run past the `after`th, then until the page is drawn."""
    deadline = time.monotonic() + timeout_s
    while page.runs_finished <= after:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the app finished no page run in {timeout_s:.0f} s at {page.url}")
        page.wait_for_timeout(50)
    wait_settled(page)


# Go to a URL of the app inside the app: the path and query are pushed to the address bar and Streamlit's
# own history handler runs the page they name, as when the reviewer goes back or forward.
_GO_IN_APP = """(target) => {
  window.__lastChange = performance.now();
  history.pushState({}, '', target);
  window.dispatchEvent(new PopStateEvent('popstate'));
}"""


def show(page, url: str, before: str | None = None) -> None:
    """Show `url` in `page` and wait until its page run has finished and the page is drawn. A page that
    already shows the app goes there inside the app (its page runs with the URL's parameters in the same
    browser session, as after a link in the app): the app's scripts are not fetched, compiled and started
    again, 4-6 s of a cold page on two cores against 1-2 s. A new page opens the URL cold. `before` (a
    script) runs in the page first when it goes inside the app (a new page starts clean)."""
    target, shown = urlsplit(url), urlsplit(page.url)
    if getattr(page, "runs_finished", 0) and (shown.scheme, shown.netloc) == (target.scheme, target.netloc):
        if before:
            page.evaluate(before)
        finished = page.runs_finished
        page.evaluate(_GO_IN_APP, urlunsplit(("", "", target.path or "/", target.query, "")))
    else:
        if not hasattr(page, "runs_finished"):
            watch_runs(page)
        finished = page.runs_finished
        page.goto(url)
    wait_run(page, finished)


@contextmanager
def launched_chromium() -> Iterator:
    """Debian's chromium started through Playwright, closed after."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def page_in(browser, width: int = 1500, height: int = 1100) -> Iterator:
    """A page in a browser context of its own (no cookies, storage or cache shared with another page),
    closed after."""
    context = browser.new_context(viewport={"width": width, "height": height})
    try:
        yield context.new_page()
    finally:
        context.close()


@contextmanager
def browser_page(width: int = 1500, height: int = 1100) -> Iterator:
    """A page of a browser started for it alone (the benchmarks; the tests share one, conftest's
    `browser_page`)."""
    with launched_chromium() as browser, page_in(browser, width, height) as page:
        yield page


def click_grid_row(page, row: int, grid_index: int = 0, row_height: int = 35) -> None:
    """Select data row `row` (0-based) of a st.dataframe by clicking its selection cell (the grid is a
    canvas: there is no DOM element per row); `row_height` is the grid's (WRAP_ROW_HEIGHT where it wraps)."""
    grid = page.locator("[data-testid='stDataFrame']").nth(grid_index)
    grid.scroll_into_view_if_needed()
    header = 35
    offset = header + row_height * row + row_height / 2
    box = grid.bounding_box()
    if offset > box["height"] - 5:  # below the grid's own fold: scroll its rows (the grid scrolls itself)
        offset -= grid.evaluate(_SCROLL_GRID_TO, offset - box["height"] / 2)
        page.wait_for_timeout(100)
    viewport = page.viewport_size["height"]
    if not 80 <= box["y"] + offset <= viewport - 20:  # the row is out of view: bring it to mid-screen
        grid.evaluate(_SCROLL_PARENT_BY, box["y"] + offset - viewport / 2)
        page.wait_for_timeout(100)
        box = grid.bounding_box()
    page.mouse.click(box["x"] + 15, box["y"] + offset)


# Scroll a st.dataframe's rows (glide-data-grid's scroller) to dy pixels; returns where it got to.
_SCROLL_GRID_TO = """(el, dy) => {
    const scroller = el.querySelector('.dvn-scroller');
    if (!scroller) return 0;
    scroller.scrollTop = dy;
    return scroller.scrollTop;
}"""

# Scroll the nearest scrolling ancestor of an element (Streamlit's main pane, not the window) by dy pixels.
_SCROLL_PARENT_BY = """(el, dy) => {
    for (let p = el.parentElement; p; p = p.parentElement) {
        const style = getComputedStyle(p);
        if (/(auto|scroll)/.test(style.overflowY) && p.scrollHeight > p.clientHeight) { p.scrollBy(0, dy); return; }
    }
    window.scrollBy(0, dy);
}"""


def wait_url(page, fragment: str, timeout_s: float = 60) -> None:
    """Until the address bar contains `fragment` (Streamlit changes it with history.pushState, which is
    not always a navigation Playwright's wait_for_url sees)."""
    deadline = time.monotonic() + timeout_s
    while fragment not in page.url:
        if time.monotonic() > deadline:
            raise TimeoutError(f"URL never contained {fragment!r}; it is {page.url}")
        page.wait_for_timeout(50)


def bar_label(page, bar) -> str:
    """The label of a `rate_bars` bar (a `.bars .point`): its own text when inside the bar, else the text
    drawn beside it past its whisker (dashboard.charts.bar_labels), found on the bar's row."""
    box = bar.locator("path").bounding_box()
    texts = page.locator(".js-plotly-plot .bars .point text, .js-plotly-plot .textpoint text")
    for i in range(texts.count()):
        text = texts.nth(i)
        where = text.bounding_box()
        content = text.text_content() or ""
        if content and where and box["y"] <= where["y"] + where["height"] / 2 <= box["y"] + box["height"]:
            return content
    raise AssertionError("no label on the bar's row")
