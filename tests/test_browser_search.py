"""The Search page in a real browser: a query from the URL finds real agent text and hostile agent text,
shows it as text (markup never rendered), and a hit opens the task page at its step."""

from __future__ import annotations

import os
import shutil
from urllib.parse import urlencode

import orjson
import pytest
from browser_support import chromium_available, serve, wait_idle, wait_url

from core.ingest.jsonl import import_jsonl
from core.queries.search import parse_query
from core.search import index as search_index
from core.store import Store

pytestmark = pytest.mark.browser

if not chromium_available():
    if os.environ.get("CI"):
        raise RuntimeError("chromium is missing in CI: .ci/run must install Debian's chromium")
    pytest.skip("Debian chromium not installed (apt-get install chromium)", allow_module_level=True)

HOSTILE = 'quaggaword **bold** <img src=x onerror="window.__xss = 1"> [link](https://evil.example/)'


@pytest.fixture(scope="module")
def served(demo_db, tmp_path_factory):
    """The demo plus a run whose thought is hostile markup, imported (and so indexed) normally."""
    db = tmp_path_factory.mktemp("search") / "search.duckdb"
    shutil.copy(demo_db, db)
    shutil.copytree(search_index.index_dir(demo_db), search_index.index_dir(db))
    run_file = db.parent / "hostile.jsonl"
    lines = [{"agent": "a", "model": "m", "paradigm": "step_by_step"},
             {"task_id": 21, "steps": [{"thought": "look first", "executed_action": "scroll('down')"},
                                       {"thought": HOSTILE, "executed_action": "click('12')"}],
              "final_answer": "x", "reward": 0.0, "termination": "answered"}]  # fmt: skip
    run_file.write_bytes(b"\n".join(orjson.dumps(line) for line in lines))
    with Store(db) as store:
        import_jsonl(store, run_file, "hostile-run")
        (thought,) = store.query(
            "SELECT thought FROM steps WHERE run = 'opagent' AND length(thought) > 200 ORDER BY task_id, idx LIMIT 1"
        )[0]
    with serve(db) as url:
        yield url, thought


def test_search_page_shows_hostile_text_as_text_and_opens_the_step(browser_page, served):
    url, _ = served
    with browser_page() as page:
        page.goto(f"{url}/search?{urlencode({'query': 'quaggaword'})}")
        wait_idle(page)
        page.get_by_text("hostile-run · task 21 · step 1 · thought").wait_for(timeout=60_000)
        page.get_by_text("**bold**", exact=False).first.wait_for(timeout=30_000)
        assert page.get_by_text('<img src=x onerror="window.__xss = 1">', exact=False).count() >= 1
        assert page.locator("img[onerror]").count() == 0 and page.evaluate("() => window.__xss") is None
        assert page.locator("a[href^='https://evil.example']").count() == 0
        assert page.locator("strong", has_text="bold").count() == 0
        page.get_by_text("hostile-run · task 21 · step 1 · thought").click()
        wait_url(page, "/task?")
        wait_idle(page)
        assert "run=hostile-run" in page.url and "task=21" in page.url and "step=1" in page.url
        page.get_by_text("Step 1", exact=False).first.wait_for(timeout=60_000)


def test_search_page_filters_travel_in_the_url(browser_page, served):
    url, thought = served
    words = [w for part in parse_query(thought) for w in part]
    phrase = " ".join(words[len(words) // 2 : len(words) // 2 + 4])
    with browser_page() as page:
        query = urlencode({"query": '"' + phrase + '"', "run": "opagent"})
        page.goto(f"{url}/search?{query}")
        wait_idle(page)
        page.get_by_text("opagent · task", exact=False).first.wait_for(timeout=60_000)
        assert page.get_by_text("webarena-render-babelcloud · task", exact=False).count() == 0
        assert page.locator("[data-testid='stException']").count() == 0
        assert page.get_by_text("Not in the search index", exact=False).count() == 0


def test_a_snippet_reads_as_its_text_with_the_match_marked_inside_it(browser_page, served, demo_db):
    """A hit's snippet in the browser is its text exactly, the match marked in place: no space lost around
    it (escaping each part alone read 'thecustomerservice') and none added (a highlighted background's
    padding read 'admin/ customer /index/' inside a URL)."""
    from core.queries.search import search

    url, _ = served
    with Store(demo_db, read_only=True) as store:
        expected = {
            run: search(store, "customer", run=run, limit=50).hits[0].snippet
            for run in ("wav-demo", "opagent")
        }
    assert expected["wav-demo"].before.endswith("/admin/") and expected["wav-demo"].after.startswith("/")
    assert expected["opagent"].before.endswith(" ") and expected["opagent"].after.startswith(" ")
    with browser_page() as page:
        for run, snippet in expected.items():
            page.goto(f"{url}/search?{urlencode({'query': 'customer', 'run': run})}")
            wait_idle(page)
            shown = page.locator(".st-key-hit-0 [data-testid='stMarkdownContainer']").last
            mark = shown.locator("span.stMarkdownColoredText, span.stMarkdownColoredBackground")
            mark.wait_for(timeout=60_000)
            text = shown.inner_text().replace("\u2060", "")
            assert text == snippet.before + snippet.match + snippet.after, run
            assert mark.inner_text() == snippet.match
            padding = mark.evaluate(
                "e => [getComputedStyle(e).paddingLeft, getComputedStyle(e).paddingRight]"
            )
            assert padding == ["0px", "0px"], run


def _address_without(page, key: str, timeout_ms: int = 30_000) -> str:
    """The address bar once it no longer holds the parameter `key` (a link changes it without a navigation)."""
    page.wait_for_function(f"() => !new URLSearchParams(location.search).has({key!r})", timeout=timeout_ms)
    return page.url


@pytest.mark.parametrize(
    ("start", "link", "dropped"),
    [
        (
            {"query": "customer", "run": "wav-demo", "cause": "gave_up"},
            "Same search, any primary cause",
            "cause",
        ),
        ({"run": "wav-demo", "verdict": "failure", "q": "repository"}, "Same list without the words", "q"),
    ],
)
def test_a_link_out_of_an_empty_result_changes_the_address_too(
    browser_page, served, demo_db, start, link, dropped
):
    """Search and Triage finding nothing: the link to the same view without a filter shows it, and the address
    bar says so, so a reload or a copied address keeps it (Streamlit left the old address, whose reload
    brought the empty result back)."""
    from core.queries.search import search

    url, _ = served
    kept = {k: v for k, v in start.items() if k != dropped}
    with Store(demo_db, read_only=True) as store:
        if "query" in start:
            hit = search(store, kept["query"], run=kept["run"], limit=50).hits[0]
            found = f"{hit.run} · task {hit.task_id}"
        else:
            sql = "SELECT count(*) FILTER (WHERE status = ?), count(*) FROM evaluations WHERE run = ?"
            failed, tasks = store.query(sql, [kept["verdict"], kept["run"]])[0]
            found = f"{failed} of {tasks} tasks"
    with browser_page() as page:
        page.goto(f"{url}/{'search' if 'query' in start else 'triage'}?{urlencode(start)}")
        wait_idle(page)
        page.get_by_text(link, exact=False).first.click()
        address = _address_without(page, dropped)
        assert all(f"{k}={v}" in address for k, v in kept.items()), address
        wait_idle(page)
        page.get_by_text(found, exact=False).first.wait_for(timeout=60_000)
        page.reload()
        wait_idle(page)
        page.get_by_text(found, exact=False).first.wait_for(timeout=60_000)
        assert page.get_by_text("No task matches", exact=False).count() == 0
        assert page.get_by_text("Nothing matches", exact=False).count() == 0
